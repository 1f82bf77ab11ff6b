"""One error hierarchy for the whole app, without HTTP.

The rules, the models and the services raise these; `app.api.problems` maps each
class to its status code in one place and renders problem+json. An error carries
what a client needs to act (a detail, the field at fault, extra figures, how
long to wait before retrying) and nothing of the transport.
"""

from __future__ import annotations

from typing import Any


class AppError(Exception):
    """A request the service refuses."""

    title = "Refused"
    slug = "refused"

    def __init__(
        self,
        detail: str,
        *,
        field: str | None = None,
        extra: dict[str, Any] | None = None,
        retry_after: int | None = None,
    ):
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.extra = dict(extra or {})
        self.retry_after = retry_after


class RuleError(AppError):
    """The request is invalid: its body, or what the rules allow with it."""

    title = "Rule violation"
    slug = "rule-violation"


class BadRequest(AppError):
    """A request malformed outside its body (a header, a cursor)."""

    title = "Bad request"
    slug = "bad-request"


class Unauthorized(AppError):
    """No credentials, or credentials that name nobody."""

    title = "Unauthorized"
    slug = "unauthorized"


class Forbidden(AppError):
    """Known caller, not allowed to do this."""

    title = "Forbidden"
    slug = "forbidden"


class NotFound(AppError):
    """Nothing with this id for this caller (another campaign's things included)."""

    title = "Not found"
    slug = "not-found"


class Conflict(AppError):
    """The current state forbids it (already done, a race lost, a cap reached)."""

    title = "Conflict"
    slug = "conflict"


class PreconditionFailed(AppError):
    """A stale If-Match."""

    title = "Precondition failed"
    slug = "precondition-failed"


class PayloadTooLarge(AppError):
    title = "Payload too large"
    slug = "payload-too-large"


class TooManyRequests(AppError):
    """A rate limit or a cap of concurrent use; `retry_after` says when to come back."""

    title = "Too many requests"
    slug = "too-many-requests"


class Unavailable(AppError):
    """The service cannot answer now (database down, saturated); `retry_after` says when to retry."""

    title = "Service unavailable"
    slug = "unavailable"
