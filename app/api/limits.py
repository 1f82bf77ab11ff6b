"""A pure ASGI middleware refusing request bodies over the configured size with
413 problem+json, whether or not the client sent a Content-Length, at once:
before authentication, since it protects the server (nothing more than the
limit is ever read, whoever asks). The body (at most the size limit) is read
first, then handed to the app unchanged.

Two other refusals of a body are only judged here: a body whose media type is
not JSON (415) and JSON nesting deeper than `max_depth` containers (422: deep
nesting makes the JSON encoders, pydantic's serialiser and `json.dumps`, fail
with a 500). They are left in the request's scope (`BODY_REFUSAL`) for the
route to raise after its authentication and access checks (API.md's order,
app.api.deps.CheckedRoute); a route that takes no body ignores them."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from itertools import accumulate, count
from operator import sub

from fastapi.exceptions import RequestValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.problems import BODY_REFUSAL, BodyTooDeep, not_json

MAX_JSON_DEPTH = 32

# a JSON string, escapes included (unrolled: no backtracking on long strings)
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_ONE_KIND = bytes.maketrans(b"{}", b"[]")  # depth does not depend on the kind of container


def json_too_deep(body: bytes, limit: int) -> bool:
    """Whether the JSON text `body` opens more than `limit` containers at some point.

    Fast path (most bodies): at most `limit` brackets in all, counted in C, and
    the depth cannot exceed it. Otherwise, exactly: strings are cut out (their
    brackets are text), everything but brackets dropped and `{}` read as `[]`;
    a run of limit + 1 opening brackets is too deep at once (the usual attack);
    the innermost pairs, most of a body's, are removed (depth minus one), and the
    depth of the rest is the largest count of opening brackets before a closing
    one minus the closing ones before it. Each step is a C-level scan: the cost
    follows the body's size only (at worst about what json.loads of it costs).
    Brackets that do not pair are not JSON: refused here or by the JSON parser."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    if b"\\" in body:
        outside_strings = _JSON_STRING.sub(b"", body)
    else:  # no escaped quote: strings are every other piece between quotes
        outside_strings = b"".join(body.split(b'"')[::2])
    brackets = outside_strings.translate(_ONE_KIND, _NOT_BRACKETS)
    if not brackets:
        return False
    if b"[" * (limit + 1) in brackets:
        return True
    rest = brackets.replace(b"[]", b"")  # one scan: a pair it empties stays, so the depth drops by exactly one
    if rest.count(b"[") < limit:
        return False
    return 1 + max(map(sub, accumulate(map(len, rest.split(b"]"))), count())) > limit


class BodySizeLimit:
    """`larger`: (path pattern, limit) pairs of routes with a limit of their own (the imports'
    bundles, app.api.bundles.larger_bodies): the first whose pattern matches the whole path wins.
    Those routes judge their bodies' depth themselves, off the event loop (`max_depth` None
    here): scanning a bundle of tens of megabytes here would hold up every other request."""

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        max_depth: int | None = MAX_JSON_DEPTH,
        larger: Sequence[tuple[re.Pattern[str], int]] = (),
    ):
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.larger = tuple(larger)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            return await self.app(scope, receive, send)
        if self.larger:
            path = scope.get("path", "")
            limit = next((n for pattern, n in self.larger if pattern.fullmatch(path)), None)
            if limit is not None:
                return await BodySizeLimit(self.app, limit, None)(scope, receive, send)
        if self._declared_too_big(scope):
            return await self._refuse(send)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                return await self._refuse(send)
            chunks.append(body)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body:
            media_type = _media_type(scope)
            if media_type is not None and not _is_json(media_type):
                scope[BODY_REFUSAL] = not_json(media_type)
            elif self.max_depth is not None and json_too_deep(body, self.max_depth):
                scope[BODY_REFUSAL] = too_deep(self.max_depth)
            elif _NUL in body and (refusal := nul_refusal(body, locate=self.max_depth is not None)) is not None:
                scope[BODY_REFUSAL] = refusal
        await self.app(scope, _replay(body, receive), send)

    def _declared_too_big(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                return value.isdigit() and int(value) > self.max_bytes
        return False

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "type": "https://jdr-rules-api.dev/problems/payload-too-large",
                "title": "Payload too large",
                "status": 413,
                "code": "payload_too_large",
                "detail": f"the body exceeds {self.max_bytes} bytes",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/problem+json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


_NUL = b"\\u0000"  # JSON spells NUL only so (a raw control character is no valid JSON)
NUL_MESSAGE = "must not contain NUL (U+0000): no stored text holds it"


def nul_refusal(body: bytes, *, locate: bool = True) -> RequestValidationError | None:
    """The 422 of a body with NUL in a string (a key or a value), naming the first such place; None when
    every `\\u0000` in the bytes is only text (an escaped backslash before `u0000`). PostgreSQL text cannot
    hold NUL, and one rule for every body keeps SQLite's rows the same as PostgreSQL's. `locate`: parse the
    body to name the place (not for the imports' large bodies, parsed off the event loop by their route)."""
    at = body.find(_NUL)
    while at != -1:
        start = at
        while start and body[start - 1] == 0x5C:  # the backslashes before it: an odd count escapes this one
            start -= 1
        if (at - start) % 2 == 0:
            break
        at = body.find(_NUL, at + 1)
    else:
        return None
    loc: list[str | int] = ["body"]
    if locate:
        try:
            where = _nul_place(json.loads(body))
        except ValueError:
            return None  # malformed JSON: the route's 400 says where
        if where is None:
            return None
        loc += where
    return RequestValidationError([{"type": "string_pattern_mismatch", "loc": tuple(loc), "msg": NUL_MESSAGE}])


def _nul_place(value: object) -> list[str | int] | None:
    """The path of the first string holding NUL in the body's order (a key's path ends with "[key]", as
    pydantic names keys): a walk with a stack, each container's items pushed last first."""
    todo: list[tuple[object, list[str | int]]] = [(value, [])]
    while todo:
        item, path = todo.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return path
        elif isinstance(item, dict):
            for key in item:
                if "\x00" in key:
                    return [*path, key, "[key]"]
            todo.extend((inner, [*path, key]) for key, inner in reversed(item.items()))
        elif isinstance(item, list):
            todo.extend((inner, [*path, i]) for i, inner in reversed(list(enumerate(item))))
    return None


def too_deep(limit: int) -> BodyTooDeep:
    msg = f"objects and arrays nest more than {limit} levels deep; at most {limit} are allowed"
    return BodyTooDeep(f"body: {msg}", extra={"errors": [{"loc": ["body"], "msg": msg}]})


def nests_deeper(value: object, limit: int) -> bool:
    """Whether a parsed JSON value nests more than `limit` objects and arrays (`json_too_deep` of its
    text): a walk of its containers, Python bytecode throughout, so a thread running it lets the
    event loop run too."""
    level: list[tuple[dict | list, int]] = [(value, 1)] if isinstance(value, (dict, list)) else []
    while level:
        item, depth = level.pop()
        if depth > limit:
            return True
        inner = item.values() if isinstance(item, dict) else item
        level.extend((v, depth + 1) for v in inner if isinstance(v, (dict, list)))
    return False


def _media_type(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return value.decode("latin-1").split(";", 1)[0].strip().lower()
    return None


def _is_json(media_type: str) -> bool:
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # later calls wait for the disconnect, as the server's would

    return replay
