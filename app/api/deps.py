"""Typed dependencies (the session, the caller, the idempotency key) and the route
class every router uses (`CheckedRoute`): refusals in the order of API.md,
401 → 404 → 403 → the 4xx of the request itself, and 304 for a matching
`If-None-Match`."""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import Body, Depends, Header, Request
from fastapi.datastructures import DefaultPlaceholder
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import ValidationError
from sqlalchemy.util import greenlet_spawn
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response

from app.api.boundary import refused_parameter
from app.api.direct import direct_call
from app.api.problems import BODY_REFUSAL, status_of, unreadable_body
from app.api.ratelimit import RateLimiter, client_address
from app.core.db import Sessions, open_session
from app.core.security import hash_token, same_secret
from app.kit.errors import AppError, Unauthorized
from app.services import auth
from app.services.auth import authenticate, granted, known_principal, require_token
from app.services.idempotency import Idempotency
from app.services.operations import EncodedBody
from app.services.records import Principal, Role
from app.services.rolls import JsonPage

T = TypeVar("T")
bearer = HTTPBearer(auto_error=False, description="The campaign's gm_token or a player's token.")


async def session_factory(request: Request) -> Sessions:
    """Opens sessions for a request's work (`in_thread`): `sessions()` to write,
    `sessions(read_only=True)` to only read — on the database of the app's settings
    (`create_app(settings)`), else of the environment's."""
    return getattr(request.app.state, "sessions", open_session)


SessionFactory = Annotated[Sessions, Depends(session_factory)]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


async def get_principal(request: Request, sessions: SessionFactory, credentials: Credentials) -> Principal:
    """The caller; a token this process has seen costs no look-up of its own (a `remembered`
    principal: its credential is re-read by the request's first database hop, `in_thread`). A
    missing or unknown token counts as a failed authentication of the client's
    address; an address over that limit gets 429 before any look-up."""
    token = credentials.credentials if credentials else None
    limiter: RateLimiter = request.app.state.rate_limiter
    principal = known_principal(hash_token(token)) if token else None
    if principal is None:
        address = client_address(request)
        await limiter.refuse_failing_address(address)
        try:
            require_token(token)
            principal = await read(sessions, authenticate, token)
        except Unauthorized:
            await limiter.count_failure(address)
            raise
    await limiter.hit_token(principal.token_hash)
    request.state.principal = principal
    return principal


def require_admin(request: Request, credentials: Credentials) -> None:
    """When ADMIN_TOKEN is configured, creating a campaign needs it."""
    admin = request.app.state.settings.admin_token
    if admin and (credentials is None or not same_secret(credentials.credentials, admin)):
        raise Unauthorized("creating a campaign needs the admin token on this server", code="admin_token_needed")


async def in_thread(
    sessions: Sessions, fn: Callable[..., T], *args: Any, read_only: bool = False, off_loop: bool = False
) -> T:
    """Run `fn(session, *args)` with a fresh session, its database work off the loop's
    coroutines: in the threadpool (sync DB work), or — a write — on the loop itself.

    The caller, when the work has one, is its first argument (a `Principal`): when it is
    `remembered` (this process knew its token), its credential is checked first on that
    session (`auth.verify`: a rotated or deleted token is refused at once, whichever worker
    remembers it) and `fn` is given the checked principal. A unit of work that checks the
    credential in its own first statement is run by `in_unit` instead.

    The session, and its pooled connection, is opened and closed inside that one
    thread: no handler holds a connection while it waits for another thread (the
    response is serialised on the event loop), so requests cannot wait on each other.
    Writes take turns first (`_write_gate`: as many at once as the factory's
    `writers()`), as coroutines rather than as threads queued on locks. A write whose turn
    has come runs where the factory's `on_loop()` says (`SessionOpener`: on the loop on
    SQLite when the database is free at once, in SQLAlchemy's greenlet on PostgreSQL: no
    thread hand-off), else in a thread like any other. `off_loop`: a write long enough to hold
    up the worker's other requests (an import) always runs in a thread."""
    if args and isinstance(args[0], Principal) and args[0].remembered:
        caller, rest = args[0], args[1:]

        def run(session: Session) -> T:
            return fn(session, auth.verify(session, caller), *rest)

        return await _hop(sessions, run, read_only, off_loop)
    return await _hop(sessions, lambda session: fn(session, *args), read_only, off_loop)


async def in_unit(sessions: Sessions, fn: Callable[..., T], principal: Principal, *args: Any) -> T:
    """Run the write `fn(session, principal, *args)`, whose unit of work (`RollingWork`,
    `EncounterWork`) receives `principal` and checks a `remembered` credential in its first
    statement, with what it reads anyway (no round trip of its own: the hot path). A refusal
    raised before it could (a 404 of another campaign, say) checks it then: 401 comes first."""

    def run(session: Session) -> T:
        try:
            return fn(session, principal, *args)
        except Exception:
            if principal.remembered:
                session.rollback()
                auth.verify(session, principal)
            raise

    return await _hop(sessions, run, read_only=False)


async def _hop(sessions: Sessions, run: Callable[[Session], T], read_only: bool, off_loop: bool = False) -> T:
    def work() -> T:
        with sessions(read_only=True) if read_only else sessions() as session:
            return run(session)

    if read_only:
        return await run_in_threadpool(work)
    async with _write_gate(sessions):
        opened = None if off_loop else sessions.on_loop()  # the factory's choice (`SessionOpener.on_loop`)
        if opened is None:
            return await run_in_threadpool(work)
        if not opened.green:
            with opened.session as session:
                return run(session)

        def in_greenlet() -> T:
            with opened.session as session:
                return run(session)

        return await greenlet_spawn(in_greenlet)


# the turns of writers, per event loop (a test client runs its own loop)
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def _write_gate(sessions: Sessions) -> asyncio.Semaphore:
    """The turns of this loop's writers: `sessions.writers()` at once."""
    loop = asyncio.get_running_loop()
    gate = _GATES.get(loop)
    if gate is None:
        gate = _GATES[loop] = asyncio.Semaphore(sessions.writers())
    return gate


async def confirm(sessions: Sessions, principal: Principal) -> Principal:
    """For a route that makes no database hop of its own (the event stream): the
    credential of a caller remembered by this process is checked now."""
    return await read(sessions, _itself, principal) if principal.remembered else principal


def _itself(_session: Session, principal: Principal) -> Principal:
    return principal


async def read(sessions: Sessions, fn: Callable[..., T], *args: Any) -> T:
    """`in_thread` for work that only reads (a deferred transaction: no SQLite write lock)."""
    return await in_thread(sessions, fn, *args, read_only=True)


class _Caller(HTTPBearer):
    """The principal in ONE dependency solve (the bearer header read here, the session
    factory resolved as the app resolves it): on the hot path FastAPI solves this one
    dependency instead of three (bearer, sessions, principal). Being the bearer scheme
    itself, it documents the same `HTTPBearer` security scheme as `bearer`.

    It enforces the route's declared access (`access`, read from the route), once
    (`auth.granted`): the use case receives a principal already authorized for what needs
    no row, carrying the rule still to apply to the row its path names (`auth.authorize`)."""

    # HTTPBearer's __call__ answers the credentials: this one, the principal they name
    async def __call__(self, request: Request) -> Principal:  # type: ignore[override]
        credentials = await super().__call__(request)
        sessions = await _resolved(request, session_factory)
        request.state.sessions = sessions
        principal = await get_principal(request, sessions, credentials)
        role, action = declared(request.scope.get("route"))
        if role is None or (role == "member" and "campaign_id" not in request.path_params):
            return principal
        return granted(principal, role, action, request.path_params)


caller = _Caller(auto_error=False, scheme_name="HTTPBearer", description=bearer.model.description)
PrincipalDep = Annotated[Principal, Depends(caller)]


def sessions_of(request: Request) -> Sessions:
    """The session factory the principal's dependency resolved (a handler that takes
    `PrincipalDep` need not solve `SessionFactory` again)."""
    return request.state.sessions


IfMatch = Annotated[str | None, Header(alias="If-Match", max_length=200)]
IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", max_length=200, description="Replays the first response to the same key and body."),
]
JsonObject = Annotated[
    dict[str, Any],
    Body(description="The body; its schema depends on the campaign's ruleset (see GET /v1/rulesets/{id})."),
]


def idempotency(request: Request, key: str | None, body: Any) -> Idempotency | None:
    return Idempotency.of(key, request.method, request.url.path, body)


def encoded(value: Any, status_code: int = 200) -> Response:
    """A JSON response; the JSON text the service already has when it has it (a logged body,
    `EncodedBody`, encoded once; a log page, `JsonPage`, of the stored texts), else encoded here."""
    if isinstance(value, (EncodedBody, JsonPage)):
        return Response(value.json.encode(), status_code=status_code, media_type="application/json")
    return JSONResponse(value, status_code=status_code)


def created(body: dict[str, Any], principal: Principal) -> Response:
    """201 with the logged body; `Location`: its roll-log entry."""
    response = encoded(body, 201)
    response.headers["Location"] = f"/v1/campaigns/{principal.campaign_id}/rolls/{body['id']}"
    return response


def etag(version: int) -> str:
    return f'"{version}"'


# --- the order of refusals -----------------------------------------------------------


def access(role: Role) -> Callable[[T], T]:
    """Declares, once, who may call a route: `member` of the campaign its path names (or
    names the character or encounter of), its `gm`, `owner_or_gm` (of the character in the
    path), or `admin`. Every route that takes a caller declares it (`CheckedRoute` refuses
    one that does not); the caller's dependency enforces it (`_Caller`, `auth.granted`)."""

    def mark(endpoint: T) -> T:
        if hasattr(endpoint, "access"):
            raise TypeError(f"{endpoint!r}: its access is declared twice")
        endpoint.access = role  # type: ignore[attr-defined]  # a mark on the route (read by CheckedRoute)
        return endpoint

    return mark


def declared(route: Any) -> tuple[Role | None, str]:
    """A route's declared access (`access`) and the words naming it in a refusal."""
    if isinstance(route, CheckedRoute):
        return route.access, route.action
    endpoint = getattr(route, "endpoint", None)  # a route of another class (the event stream's)
    return getattr(endpoint, "access", None), f"call {getattr(route, 'path', 'this route')}"


def _uses(dependant: Any, call: Callable) -> bool:
    return any(d.call is call or _uses(d, call) for d in dependant.dependencies)


class CheckedRoute(APIRoute):
    """A route whose refusals come in the order of API.md: 401 → 404 → 403 → the
    4xx of the request (a body not JSON 415, malformed 400, too deep or invalid 422,
    a bad header or query parameter 422).

    Authentication and the service's checks run before the body is judged on the
    happy path already (FastAPI solves dependencies before it validates the body;
    services check before they validate ruleset bodies). When the request is
    refused for itself — by FastAPI, the body middleware (app.api.limits) or a
    service's validation — the route's access rule (`access`, from its path: the
    campaign, character or encounter it names) is checked first, so the caller
    learns nothing of the schema it may not use. That costs one read, on the
    refusal only. A body without a JSON media type is parsed as JSON when it has
    no Content-Type at all (415 when it then is not JSON)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if isinstance(kwargs.get("strict_content_type", DefaultPlaceholder(True)), DefaultPlaceholder):
            kwargs["strict_content_type"] = False
        super().__init__(path, endpoint, **kwargs)
        self.access: Role | None = getattr(endpoint, "access", None)
        if self.access is None and (_uses(self.dependant, caller) or _uses(self.dependant, get_principal)):
            raise TypeError(f"{path}: a route that takes a caller declares who may call it (`@access`)")
        self.action = f"call {' '.join(sorted(self.methods or ()))} {path}"  # a refusal's words

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()
        # a route that reads its body itself (declared in `openapi_extra`) is refused for it alike
        takes_body = self.body_field is not None or "requestBody" in (self.openapi_extra or {})
        # a route marked `@direct`: a plain request's call without FastAPI's solve (app.api.direct)
        direct = direct_call(self, (caller,))

        async def checked(request: Request) -> Response:
            bounded = refused_parameter(request)  # before anything reads a parameter (app.api.boundary)
            if bounded is not None:
                await self.check_access(request, unnamed=bounded[1])
                raise bounded[0]
            refusal = request.scope.get(BODY_REFUSAL) if takes_body else None
            if refusal is None:
                try:
                    if direct is not None and (response := await direct(request)) is not None:
                        return not_modified(request, response)
                    return not_modified(request, await handler(request))
                except (RequestValidationError, ValidationError, AppError, HTTPException) as exc:
                    refusal = _own_refusal(request, exc)
                    if refusal is None:
                        raise
            await self.check_access(request)
            raise refusal

        return checked

    async def check_access(self, request: Request, unnamed: frozenset[str] = frozenset()) -> None:
        """`unnamed`: path parameters not to look up (they name nothing: `refused_parameter`)."""
        if self.access is None:
            return
        credentials = await bearer(request)
        if self.access == "admin":
            return require_admin(request, credentials)
        sessions = await _resolved(request, session_factory)
        principal = getattr(request.state, "principal", None) or await get_principal(request, sessions, credentials)
        path = {k: v for k, v in request.path_params.items() if k not in unnamed}
        await read(sessions, auth.check_access, principal, self.access, path, self.action)


def _own_refusal(
    request: Request, exc: RequestValidationError | ValidationError | AppError | HTTPException
) -> Exception | None:
    """The exception if it refuses the request itself (its body, a header, a query parameter)."""
    if isinstance(exc, RequestValidationError):
        first: dict[str, Any] = next(iter(exc.errors()), {})
        if first.get("type") == "json_invalid":
            return unreadable_body(exc.__cause__, has_media_type="content-type" in request.headers)
        return exc
    if isinstance(exc, ValidationError):
        return exc
    if isinstance(exc, AppError):
        return exc if status_of(type(exc)) in (400, 415, 422) else None
    return exc if exc.status_code == 400 else None


async def _resolved(request: Request, dependency: Callable[[Request], Any]) -> Any:
    """A dependency of the request alone, as the app resolves it (tests override some, with no argument)."""
    override = request.app.dependency_overrides.get(dependency)
    value = override() if override is not None else dependency(request)
    return await value if inspect.isawaitable(value) else value


def not_modified(request: Request, response: Response) -> Response:
    """304, no body, when a GET's `If-None-Match` names the response's ETag (or `*`)."""
    if request.method != "GET" or response.status_code != 200:
        return response
    tag = response.headers.get("etag")
    wanted = request.headers.get("if-none-match")
    if not tag or not wanted:
        return response
    tags = {t.strip().removeprefix("W/") for t in wanted.split(",")}
    if "*" in tags or tag.removeprefix("W/") in tags:
        return Response(status_code=304, headers={"ETag": tag})
    return response
