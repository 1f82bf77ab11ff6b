"""The request's boundary: no C0 control character (U+0000–U+001F) in a path or query parameter.

One rule for every route, checked by the route class before the endpoint runs (and before the
direct call, app.api.direct, on the hot routes): such a value is no id, no filter, no cursor
this service has, and PostgreSQL text cannot even hold NUL (a driver error, not a "no match").
It is a 422 naming its place (`["path", "encounter_id"]`, `["query", "after"]`), on every
backend alike. The ids of request bodies follow the same rule through their type
(`app.models.fields.Id`).

`CheckedRoute` (app.api.deps) answers that refusal in its order (the caller's 401 and 403 first;
a path parameter it refuses names no resource, so it is not looked up); `BoundaryRoute` is the
route class of the routers that take no caller dependency (the event stream, which reads its own
credential, the rulesets, the probes): it refuses at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request

from app.models.fields import has_control

MESSAGE = "must not contain a control character (U+0000 to U+001F)"


def refused_parameter(request: Request) -> tuple[RequestValidationError, frozenset[str]] | None:
    """The refusal of the path and query parameters holding a control character, with the names
    of the path parameters that do (not to be looked up); None when there is none. Cheap on the
    hot path: `isprintable` (a C loop) on the path's few values; the query parsed only when sent."""
    scope = request.scope
    path = scope.get("path_params") or {}
    for value in path.values():
        if type(value) is str and not value.isprintable():
            break  # maybe a control character (or another unprintable one): looked at below
    else:
        if not scope.get("query_string"):
            return None
    bad_paths = [name for name, value in path.items() if type(value) is str and has_control(value)]
    errors = [_error("path", name, path[name]) for name in bad_paths]
    if scope.get("query_string"):
        for name, value in request.query_params.multi_items():
            if has_control(name) or has_control(value):
                errors.append(_error("query", name, value))
    return (RequestValidationError(errors), frozenset(bad_paths)) if errors else None


def _error(where: str, name: str, value: str) -> dict[str, Any]:
    return {"type": "string_pattern_mismatch", "loc": (where, name), "msg": MESSAGE, "input": value}


class BoundaryRoute(APIRoute):
    """A route whose path and query parameters hold no control character (422 before its endpoint)."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()

        async def bounded(request: Request) -> Any:
            refused = refused_parameter(request)
            if refused is not None:
                raise refused[0]
            return await handler(request)

        return bounded
