"""Webhooks (API.md): the GM's receivers of the campaign's events and their deliveries log."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from app.api.deps import CheckedRoute, PrincipalDep, SessionFactory, access, in_thread, read
from app.models.webhooks import DeliveryPage, WebhookCreate, WebhookCreated, WebhookPage, WebhookPublic, WebhookUpdate
from app.services import webhooks

# tagged `events` (a webhook is the event stream pushed): a tag of its own needs a line in openapi_doc.TAGS
router = APIRouter(tags=["events"], route_class=CheckedRoute)
HOOKS = "/v1/campaigns/{campaign_id}/webhooks"
Limit = Annotated[int, Query(ge=1, le=500)]
Cursor = Annotated[str | None, Query(max_length=500)]


@router.post(
    HOOKS,
    status_code=201,
    response_model=WebhookCreated,
    summary="GM: a receiver of the campaign's events (signed, Standard Webhooks); its secret is returned once",
)
@access("gm")
async def create_webhook(
    campaign_id: str,
    data: WebhookCreate,
    request: Request,
    sessions: SessionFactory,
    principal: PrincipalDep,
    response: Response,
) -> dict[str, Any]:
    allow_private = request.app.state.settings.webhook_allow_private
    create = partial(webhooks.create_webhook, allow_private=allow_private)
    created = await in_thread(sessions, create, principal, campaign_id, data)
    response.headers["Location"] = f"{HOOKS.format(campaign_id=campaign_id)}/{created['id']}"
    return created


@router.get(HOOKS, response_model=WebhookPage, summary="GM: the campaign's webhooks (their secrets never shown again)")
@access("gm")
async def list_webhooks(
    campaign_id: str, sessions: SessionFactory, principal: PrincipalDep, limit: Limit = 50, cursor: Cursor = None
) -> dict[str, Any]:
    return await read(sessions, partial(webhooks.list_webhooks, limit=limit, cursor=cursor), principal, campaign_id)


@router.patch(
    HOOKS + "/{webhook_id}",
    response_model=WebhookPublic,
    summary='GM: enable a disabled webhook again (`{"enabled": true}`: deliveries resume where they stopped), '
    "or disable it",
)
@access("gm")
async def update_webhook(
    campaign_id: str, webhook_id: str, data: WebhookUpdate, sessions: SessionFactory, principal: PrincipalDep
) -> dict[str, Any]:
    return await in_thread(sessions, webhooks.update_webhook, principal, campaign_id, webhook_id, data)


@router.delete(
    HOOKS + "/{webhook_id}",
    status_code=204,
    response_class=Response,
    summary="GM: no more deliveries to this webhook (its deliveries log goes with it)",
)
@access("gm")
async def delete_webhook(
    campaign_id: str, webhook_id: str, sessions: SessionFactory, principal: PrincipalDep
) -> Response:
    await in_thread(sessions, webhooks.delete_webhook, principal, campaign_id, webhook_id)
    return Response(status_code=204)


@router.get(
    HOOKS + "/{webhook_id}/deliveries",
    response_model=DeliveryPage,
    summary="GM: the webhook's delivery attempts, oldest first (status, response code, time)",
)
@access("gm")
async def list_webhook_deliveries(
    campaign_id: str,
    webhook_id: str,
    sessions: SessionFactory,
    principal: PrincipalDep,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    page = partial(webhooks.list_deliveries, limit=limit, cursor=cursor)
    return await read(sessions, page, principal, campaign_id, webhook_id)
