"""`X-Request-Id`: every response carries one, every problem
body names it (`request_id`), and every log line of the request shows it.

asgi-correlation-id reads the client's id (kept when it is sane: 1 to 64 safe
characters), generates one otherwise (32 hex digits), keeps it in a context
variable and sets the response header. `ProblemRequestId`, inside it, adds the
id to every `application/problem+json` body, whoever wrote it (a handler, the
body limit, admission control): only error responses are rewritten.
It also adds the IETF `RateLimit-Policy` and `RateLimit` fields of the limits the request met
(app.api.ratelimit). `RequestIdFilter` puts it on log records (`%(request_id)s`); LOG_CONFIG is
uvicorn's logging with it in every line, the access line included. Only the
request line is logged, never a header, so a token never reaches the log."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from asgi_correlation_id import CorrelationIdMiddleware, correlation_id
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.ratelimit import quota_fields, watch_quotas

HEADER = "X-Request-Id"
_SANE = re.compile(r"[A-Za-z0-9._:@+=/-]{1,64}")
_PROBLEM = b"application/problem+json"


def sane(value: str) -> bool:
    """An id worth echoing: short, and nothing a log or a header could misread."""
    return _SANE.fullmatch(value) is not None


def current() -> str | None:
    return correlation_id.get()


class ProblemRequestId:
    """Adds `request_id` to problem+json bodies, and the RateLimit fields (a pure ASGI middleware)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start: Message | None = None
        chunks: list[bytes] = []
        quotas = watch_quotas()  # the rate limits this request meets: its RateLimit fields

        async def send_with_id(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if quotas:
                    message = {**message, "headers": [*message.get("headers", ()), *quota_fields(quotas)]}
                if _is_problem(message):
                    start = message  # held until the body is complete
                    return
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                body = _with_id(b"".join(chunks))
                headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
                message = {"type": "http.response.body", "body": body}
            await send(message)

        await self.app(scope, receive, send_with_id)


def _is_problem(message: Message) -> bool:
    return any(k.lower() == b"content-type" and v.startswith(_PROBLEM) for k, v in message.get("headers", ()))


def _with_id(body: bytes) -> bytes:
    request_id = correlation_id.get()
    try:
        problem = json.loads(body)
    except ValueError:
        return body
    if not isinstance(problem, dict) or request_id is None:
        return body
    problem.setdefault("request_id", request_id)
    return json.dumps(problem).encode()


def install(app: Any) -> None:
    """Outermost: every response, refusals of the other middlewares included, gets the id."""
    app.add_middleware(ProblemRequestId)
    app.add_middleware(CorrelationIdMiddleware, header_name=HEADER, validator=sane)


class RequestIdFilter(logging.Filter):
    """Puts the request's id on every record (`-` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = correlation_id.get() or "-"
        return True


_SECRET_PARAM = re.compile(r"([?&]ticket=)[^&#\s]*", re.IGNORECASE)


def redacted(path: str) -> str:
    """A request target with the value of a stream ticket (a one-use credential) left out."""
    return _SECRET_PARAM.sub(r"\1[redacted]", path)


class RedactSecrets(logging.Filter):
    """The access line never carries a ticket: uvicorn's access record's
    arguments are (client, method, path with query, HTTP version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str) and "ticket=" in args[2].lower():
            record.args = (args[0], args[1], redacted(args[2]), args[3], args[4])
        return True


LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": RequestIdFilter}, "redact": {"()": RedactSecrets}},
    "formatters": {
        "default": {
            "()": "uvicorn.logging.DefaultFormatter",
            "fmt": "%(levelprefix)s [%(request_id)s] %(name)s: %(message)s",
        },
        "access": {
            "()": "uvicorn.logging.AccessFormatter",
            "fmt": '%(levelprefix)s [%(request_id)s] %(client_addr)s - "%(request_line)s" %(status_code)s',
        },
    },
    "handlers": {
        "default": {
            "class": "logging.StreamHandler",
            "formatter": "default",
            "filters": ["request_id"],
            "stream": "ext://sys.stderr",
        },
        "access": {
            "class": "logging.StreamHandler",
            "formatter": "access",
            "filters": ["request_id", "redact"],
            "stream": "ext://sys.stdout",
        },
    },
    "loggers": {
        "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "uvicorn.error": {"level": "INFO"},
        "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        "app": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "asgi_correlation_id": {"handlers": ["default"], "level": "WARNING", "propagate": False},
    },
}
