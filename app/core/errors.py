"""Domain errors with their HTTP status (rendered as problem+json by app.api.problems)."""
from __future__ import annotations

from app.rules.errors import RuleError

TYPE_BASE = "https://jdr-rules-api.dev/problems/"


class DomainError(RuleError):
    """A service-level refusal; subclasses set status, title and slug."""


class Unauthorized(DomainError):
    status_code = 401
    title = "Unauthorized"
    slug = "unauthorized"


class Forbidden(DomainError):
    status_code = 403
    title = "Forbidden"
    slug = "forbidden"


class NotFound(DomainError):
    status_code = 404
    title = "Not found"
    slug = "not-found"


class Conflict(DomainError):
    status_code = 409
    title = "Conflict"
    slug = "conflict"


class PreconditionFailed(DomainError):
    status_code = 412
    title = "Precondition failed"
    slug = "precondition-failed"


class PayloadTooLarge(DomainError):
    status_code = 413
    title = "Payload too large"
    slug = "payload-too-large"


class TooManyRequests(DomainError):
    status_code = 429
    title = "Too many requests"
    slug = "too-many-requests"


class Unavailable(DomainError):
    status_code = 503
    title = "Service unavailable"
    slug = "unavailable"
