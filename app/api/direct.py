"""The plain request's direct call: a route MARKED `@direct` has its endpoint called without
FastAPI's per-request machinery when the request is one whose parameters need no validation.

FastAPI prepares every request the same way: its telemetry hooks, the endpoint's error
context, the media type parsed with `email.message`, the dependency solve, and each
parameter, the body included, validated by pydantic (copying a `dict[str, Any]` body),
before it calls the endpoint. For the hot routes (`POST …/tests` and its kin) that is a
tenth of the server's CPU a request, spent proving what the route's own declarations
already say of a plain request: string path parameters, an optional header within its
length, a JSON object as the body, the caller from one dependency.

Only a route whose endpoint is marked `@direct` takes it: a reader of the route sees which
path it takes, and a route of the same shape without the mark is always FastAPI's.
`direct_call(route)` reads the marked route's declarations once, at startup, and refuses
(TypeError) a mark on a route that declares anything else (a query parameter, a cookie, a
constrained path parameter, a body model, another dependency, an endpoint that may return
something other than a `Response`). The call it returns takes a request and:

- answers None — and does nothing else: no dependency has run, no rate limit is counted —
  when the request is not plain (no body, not JSON or not an object, a media type other than
  `application/json`, a header outside its bounds or missing, a dependency overridden by the
  app). FastAPI's own handler then serves it, its refusals and their order unchanged;
- otherwise calls the caller's dependency and the endpoint with the same values FastAPI
  would have given them, and returns the endpoint's response.

Only public declarations are read: the route's `dependant` (FastAPI's model of its
parameters), pydantic's `FieldInfo` (annotation, alias, metadata) and annotated-types'
length bounds."""

from __future__ import annotations

import inspect
import types
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, Union, get_args, get_origin

from annotated_types import MaxLen, MinLen
from fastapi.dependencies.utils import get_typed_return_annotation
from fastapi.params import Body
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from app.core import json_codec

DirectCall = Callable[[Request], Awaitable[Response | None]]
E = TypeVar("E", bound=Callable[..., Any])
_JSON_MEDIA = "application/json"


class _NotPlain(Exception):
    """A declaration the direct call does not read."""


def direct(endpoint: E) -> E:
    """Marks a route's endpoint to be served by its direct call (see the module) when the request is
    plain. Its declarations must all be plain ones: `direct_call` refuses the mark otherwise."""
    if is_direct(endpoint):
        raise TypeError(f"{endpoint!r}: marked direct twice")
    endpoint.direct = True  # type: ignore[attr-defined]  # a mark on the route (read by direct_call)
    return endpoint


def is_direct(endpoint: Callable[..., Any]) -> bool:
    return getattr(endpoint, "direct", False) is True


def direct_call(route: APIRoute, dependencies: tuple[Callable[..., Any], ...]) -> DirectCall | None:
    """The direct call of `route` when its endpoint is marked `@direct`, else None (FastAPI serves
    it). `dependencies`: the dependencies it may call itself (each is called with the request
    alone, as FastAPI calls a dependency that takes only the request). A marked route that declares
    anything the direct call does not read is a TypeError (at startup: the mark is never ignored)."""
    if not is_direct(route.endpoint):
        return None
    try:
        return _build(route, dependencies)
    except _NotPlain as e:
        raise TypeError(f"{route.path}: marked @direct, but the direct call does not read {e}") from None


def _build(route: APIRoute, allowed: tuple[Callable[..., Any], ...]) -> DirectCall:
    d = route.dependant
    endpoint = d.call
    if endpoint is None or not inspect.iscoroutinefunction(endpoint):
        raise _NotPlain("a sync endpoint")
    returned = get_typed_return_annotation(endpoint)
    if not (inspect.isclass(returned) and issubclass(returned, Response)):
        raise _NotPlain("an endpoint whose result FastAPI serialises")
    if d.query_params or d.cookie_params or len(d.body_params) != 1:
        raise _NotPlain("query, cookie or not one body")
    if d.websocket_param_name or d.http_connection_param_name or d.response_param_name:
        raise _NotPlain("another special parameter")
    if d.background_tasks_param_name or d.security_scopes_param_name:
        raise _NotPlain("another special parameter")
    body = d.body_params[0]
    info = body.field_info
    if not isinstance(info, Body) or info.embed or info.metadata or get_origin(info.annotation) is not dict:
        raise _NotPlain("a body other than a JSON object")
    if get_args(info.annotation)[0] is not str or get_args(info.annotation)[1] is not Any:
        raise _NotPlain("a body other than dict[str, Any]")
    paths = []
    for field in d.path_params:
        if field.field_info.annotation is not str or field.field_info.metadata:
            raise _NotPlain("a path parameter FastAPI converts or checks")
        paths.append(field.name)
    headers = [_header(field) for field in d.header_params]
    calls = []
    for sub in d.dependencies:
        if sub.call not in allowed or sub.name is None:
            raise _NotPlain("another dependency")
        calls.append((sub.name, sub.call))
    request_name, body_name = d.request_param_name, body.name
    overridable = tuple(call for _, call in calls)

    async def call(request: Request) -> Response | None:
        overrides = request.app.dependency_overrides
        if overrides and any(c in overrides for c in overridable):
            return None
        media = request.headers.get("content-type")
        if media is not None and not _is_plain_json(media):
            return None
        raw = await request.body()  # kept by the request: FastAPI's handler reads it again if it serves it
        if not raw:
            return None
        try:
            value = json_codec.loads(raw)
        except ValueError:  # not JSON, or JSON orjson refuses (FastAPI's handler judges it)
            return None
        if type(value) is not dict:
            return None
        values: dict[str, Any] = {body_name: value}
        for name, alias, required, least, most in headers:
            given = request.headers.get(alias)
            if given is None:
                if required:
                    return None
            elif not least <= len(given) <= most:
                return None
            values[name] = given
        path_params = request.path_params
        for name in paths:
            values[name] = path_params[name]
        if request_name is not None:
            values[request_name] = request
        for name, dependency in calls:  # the last step before the endpoint: nothing after it answers None
            values[name] = await dependency(request)
        response = await endpoint(**values)
        if not isinstance(response, Response):
            raise TypeError(f"{route.path}: the endpoint returned {type(response).__name__}, not a Response")
        return response

    return call


def _header(field: Any) -> tuple[str, str, bool, int, float]:
    """(parameter name, header name, required, min length, max length) of a plain string header."""
    info = field.field_info
    annotation = info.annotation
    optional = get_origin(annotation) in (Union, types.UnionType) and set(get_args(annotation)) == {str, type(None)}
    if (annotation is not str and not optional) or info.alias is None:
        raise _NotPlain("a header other than a string named by its alias")
    least, most = 0, float("inf")
    for bound in info.metadata:
        if isinstance(bound, MaxLen):
            most = bound.max_length
        elif isinstance(bound, MinLen):
            least = bound.min_length
        else:
            raise _NotPlain("a header with another constraint")
    required = info.is_required()
    if not required and info.default is not None:
        raise _NotPlain("a header with a default other than None")
    return field.name, info.alias, required, least, most


def _is_plain_json(media: str) -> bool:
    """`application/json`, with parameters or not (FastAPI's handler judges every other type)."""
    if not media.startswith(_JSON_MEDIA):
        return False
    rest = media[len(_JSON_MEDIA) :].lstrip(" \t")
    return not rest or rest[0] == ";"
