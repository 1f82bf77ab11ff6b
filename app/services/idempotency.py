"""An `Idempotency-Key` (API.md): the key and its request's fingerprint, and the first
response stored under it. Below every use case that takes one: it imports only the
records of `app.services`."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from app.models.tables import IdempotencyRecord
from app.models.validation import InvalidBody
from app.services.records import Principal


@dataclass(frozen=True)
class Idempotency:
    """An `Idempotency-Key` and the fingerprint of the request it came with."""

    key: str
    fingerprint: str

    @classmethod
    def of(cls, key: str | None, method: str, path: str, body: Any) -> Idempotency | None:
        if key is None:
            return None
        if not 1 <= len(key) <= 200:
            raise InvalidBody(
                "Idempotency-Key must be 1 to 200 characters", field="Idempotency-Key", code="idempotency_key_invalid"
            )
        canonical = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"), default=str)
        return cls(key, hashlib.sha256(canonical.encode()).hexdigest())


def replay(session: Session, principal: Principal, idem: Idempotency | None) -> dict | None:
    """The first response to this key, or None; the key with another request → 422."""
    if idem is None:
        return None
    record = session.get(IdempotencyRecord, (principal.token_hash, idem.key))
    if record is None:
        return None
    if record.request_hash != idem.fingerprint:
        raise InvalidBody(
            "this Idempotency-Key was already used with a different request",
            field="Idempotency-Key",
            code="idempotency_key_reused",
        )
    return record.body
