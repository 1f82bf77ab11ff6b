"""Request and response schemas of webhooks and their deliveries (API.md, "Webhooks")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from app.kit.models import Strict
from app.models.schemas import NO_CONTROL, Page, Timestamp

EventName = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[a-z]+\.[a-z]+$")]


class WebhookCreate(Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"url": "https://bot.example.com/jdr/webhook"},
                {"url": "https://relay.example.com/hook", "events": ["log.created", "character.updated"]},
            ]
        }
    )
    url: str = Field(
        min_length=1,
        max_length=2000,
        pattern=NO_CONTROL,
        description="http(s) URL the events are POSTed to; every non-global address (private, loopback, "
        "link-local…, and an IPv6 address carrying one: IPv4-mapped, 6to4, NAT64; Teredo) is refused (unless "
        "the server sets WEBHOOK_ALLOW_PRIVATE), when it is created and at each delivery; a refusal names the "
        "rule, never the address a name resolved to.",
    )
    events: list[EventName] | None = Field(
        None,
        max_length=20,
        description="The event types to deliver (`character.updated`, `log.created`…); absent or null: all of them.",
    )


class WebhookUpdate(Strict):
    model_config = ConfigDict(json_schema_extra={"examples": [{"enabled": True}, {"enabled": False}]})
    enabled: StrictBool | None = Field(
        None,
        description="true: a disabled webhook is enabled again: its deliveries resume from the event it stopped "
        "at, in order (the events of the time it was disabled included), its failures forgotten. false: the GM "
        'disables it (`disabled_reason: "gm"`). Absent: unchanged.',
    )


class WebhookPublic(BaseModel):
    id: str
    campaign_id: str
    url: str
    events: list[str] | None = Field(description="The event types delivered; null: all of them.")
    created_at: Timestamp
    failing_since: Timestamp | None = Field(
        description="The first failed attempt since the last delivered one (null: the last attempt was delivered). "
        "Failing for WEBHOOK_DISABLE_AFTER_HOURS (72 by default), it is disabled."
    )
    disabled_at: Timestamp | None = Field(description="When it was disabled; null: it is enabled.")
    disabled_reason: Literal["failing", "gm"] | None = Field(
        description="`failing`: every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS (a `webhook.disabled` event "
        "told the GM); `gm`: the GM disabled it. null: it is enabled. Nothing is delivered to a disabled webhook; "
        'PATCH `{"enabled": true}` enables it again.'
    )


class WebhookCreated(WebhookPublic):
    secret: str = Field(
        description="The signing secret (`whsec_` + base64), shown this once: `webhook-signature` is "
        '`v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">` keyed with its decoded bytes.'
    )


class WebhookPage(Page[WebhookPublic]):
    """A page of the campaign's webhooks, oldest first."""


class DeliveryPublic(BaseModel):
    """One attempt at delivering one event."""

    id: str
    webhook_id: str
    message_id: str = Field(description="The `webhook-id` header: the same on every attempt at one event.")
    event_id: str = Field(description="The event's number in the campaign's stream (its SSE `id`).")
    event_type: str
    attempt: int = Field(description="1 for the first attempt at this event, then 2, 3…")
    status: Literal["delivered", "retrying", "failed"] = Field(
        description="`retrying`: this attempt failed and another is scheduled; `failed`: the last attempt failed."
    )
    response_code: int | None = Field(description="The receiver's HTTP status; null when none came back.")
    error: str | None = Field(description="Why the attempt failed (a timeout, a refused address…), else null.")
    duration_ms: int
    created_at: Timestamp


class DeliveryPage(Page[DeliveryPublic]):
    """A page of a webhook's delivery attempts, oldest first."""
