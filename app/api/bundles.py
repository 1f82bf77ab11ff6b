"""Export and import (API.md): a campaign or one character as one versioned JSON bundle.

An import is parsed and checked off the event loop (API.md, "Import vouches for nothing
it did not roll"), so that a bundle of tens of megabytes holds up no other request of the worker:
the route reads its body itself (FastAPI would parse and validate it on the loop), parses it in
a thread in pieces (`ijson`, a buffer at a time: one call of a JSON parser over the whole body
holds the GIL, and so the loop, for as long as it runs), judges its depth there, validates and
checks it there (`bundles.read_campaign`, long lists a batch at a time), then writes it in a thread
(`in_thread(off_loop=True)`). The garbage collector is paused meanwhile: a full collection while
millions of the bundle's objects are alive holds the GIL for a few tenths of a second."""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Annotated, Any, TypeVar

import ijson  # type: ignore[import-untyped]  # no stubs
from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from starlette.concurrency import run_in_threadpool

from app.api.deps import CheckedRoute, PrincipalDep, SessionFactory, access, in_thread, read, require_admin
from app.api.limits import MAX_JSON_DEPTH, nests_deeper, too_deep
from app.api.ratelimit import limit_campaign_creation
from app.core.config import Settings
from app.models.bundles import CampaignBundle, CampaignImportChecked, CampaignImported, CharacterBundle
from app.models.schemas import CharacterPublic
from app.services import bundles

T = TypeVar("T")

router = APIRouter(tags=["campaigns"], route_class=CheckedRoute)


def larger_bodies(settings: Settings) -> list[tuple[re.Pattern[str], int]]:
    """The import routes take bundles up to IMPORT_MAX_BODY_BYTES (a 10,000-entry campaign is about
    5 MB), every other route MAX_BODY_BYTES (app.api.limits.BodySizeLimit's `larger`)."""
    limit = max(settings.import_max_body_bytes, settings.max_body_bytes)
    return [
        (re.compile(r"/v1/campaigns/import"), limit),
        (re.compile(r"/v1/campaigns/[^/]+/characters/import"), limit),
    ]


@router.get(
    "/v1/campaigns/{campaign_id}/export",
    response_model=CampaignBundle,
    summary="GM: the campaign and its whole history as one JSON bundle",
)
@access("gm")
async def export_campaign(campaign_id: str, sessions: SessionFactory, principal: PrincipalDep) -> dict[str, Any]:
    return await read(sessions, bundles.export_campaign, principal, campaign_id)


def _body_of(model: type) -> dict[str, Any]:
    """The request body a route that reads its own declares (`openapi_extra`): the model's schema."""
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


@router.post(
    "/v1/campaigns/import",
    status_code=201,
    response_model=CampaignImported | CampaignImportChecked,
    dependencies=[Depends(limit_campaign_creation), Depends(require_admin)],
    summary="A new campaign from a bundle: new ids and tokens, the whole history kept; ?dry_run=true only validates",
    responses={
        200: {"model": CampaignImportChecked, "description": "`dry_run`: the bundle is valid; nothing was written."}
    },
    openapi_extra=_body_of(CampaignBundle),
)
@access("admin")
async def import_campaign(
    request: Request,
    sessions: SessionFactory,
    response: Response,
    dry_run: Annotated[bool, Query(description="Validate the bundle and write nothing (200).")] = False,
) -> dict[str, Any]:
    with _gc_paused():
        held = await _read(request, bundles.read_campaign)
        work = _taking(partial(bundles.import_campaign, dry_run=dry_run))
        result = await in_thread(sessions, work, held, off_loop=True)
    if dry_run:
        response.status_code = 200
    else:
        response.headers["Location"] = f"/v1/campaigns/{result['id']}"
    return result


@router.get(
    "/v1/characters/{character_id}/export",
    response_model=CharacterBundle,
    summary="GM: one character (its sheet, metadata, level-ups)",
)
@access("gm")
async def export_character(character_id: str, sessions: SessionFactory, principal: PrincipalDep) -> dict[str, Any]:
    return await read(sessions, bundles.export_character, principal, character_id)


@router.post(
    "/v1/campaigns/{campaign_id}/characters/import",
    status_code=201,
    response_model=CharacterPublic,
    summary="GM: a new character of the campaign from a character bundle (unowned), with its level-ups",
    openapi_extra=_body_of(CharacterBundle),
)
@access("gm")
async def import_character(
    campaign_id: str, request: Request, sessions: SessionFactory, principal: PrincipalDep, response: Response
) -> dict[str, Any]:
    with _gc_paused():
        held = await _read(request, bundles.read_character)
        created = await in_thread(
            sessions, _taking(bundles.import_character), principal, campaign_id, held, off_loop=True
        )
    response.headers["Location"] = f"/v1/characters/{created['id']}"
    return created


# --- the body, off the event loop ---------------------------------------------------------------


async def _read(request: Request, reader: Callable[[Any], T]) -> list[T]:
    """The request's bundle, parsed and read by `reader` in a thread, in a list the write takes it
    from (`_taking`); refused as FastAPI refuses a body it parses (a body that is not JSON 415,
    malformed 400, too deep or invalid 422)."""
    raw = await request.body()  # read by the body middleware already: no wait
    return await run_in_threadpool(lambda: [reader(parse_json(raw))])


def _taking(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn(session, *args, bundle)`, the bundle taken out of the list its last argument is: its
    last reference then dies in the thread, and so its millions of objects are freed there, not
    on the loop (about as long as parsing them)."""

    def run(session: Any, *args: Any) -> T:
        *rest, held = args
        return fn(session, *rest, held.pop())

    return run


def parse_json(raw: bytes) -> Any:
    """The JSON value of a body, parsed a buffer at a time (`ijson`: between buffers the GIL goes
    to whichever thread waits for it); its depth judged as the body middleware judges other routes'."""
    if not raw:
        raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}])
    try:
        value = next(ijson.items(_Pieces(raw), "", use_float=True))
    except (ijson.JSONError, UnicodeDecodeError, ValueError):
        value = _as_fastapi_reads(raw)  # what ijson refuses, read as before (NaN, a BOM…) or refused alike
    if nests_deeper(value, MAX_JSON_DEPTH):
        raise too_deep(MAX_JSON_DEPTH)
    return value


def _as_fastapi_reads(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        error = {"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error", "input": {}}
        raise RequestValidationError([{**error, "ctx": {"error": exc.msg}}], body=exc.doc) from exc
    except ValueError as exc:  # not UTF-8 text
        raise HTTPException(status_code=400, detail="There was an error parsing the body") from exc


class _Pieces:
    """The body read a buffer at a time by Python code, where the interpreter may switch threads."""

    def __init__(self, raw: bytes):
        self._raw, self._at = memoryview(raw), 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._raw) if size < 0 else self._at + size
        piece = self._raw[self._at : end].tobytes()
        self._at += len(piece)
        return piece


_paused = 0  # the imports under way in this process (the loop's count: entered and left on the loop)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The garbage collector off while an import runs (the first turns it off, the last back on)."""
    global _paused
    if _paused == 0 and not gc.isenabled():  # off already, by someone else: theirs to turn on
        yield
        return
    _paused += 1
    gc.disable()
    try:
        yield
    finally:
        _paused -= 1
        if _paused == 0:
            gc.enable()
