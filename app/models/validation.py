"""Validating bodies whose schema depends on the campaign's ruleset."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.rules.errors import RuleError

M = TypeVar("M", bound=BaseModel)


class InvalidBody(RuleError):
    title = "Validation error"
    code = "validation_failed"


def _shown(value: Any) -> bool:
    """A figure of pydantic's `ctx` a client may read as JSON (not an exception, a Decimal, an infinity)."""
    return isinstance(value, (str, int)) or (isinstance(value, float) and math.isfinite(value))


def faults(errors: Iterable[Mapping[str, Any]], loc: tuple = ()) -> list[dict]:
    """pydantic's errors as a 422 lists them: `loc` (under `loc`), the English `msg`, and `type` and
    `ctx` (its JSON figures: `le`, `max_length`, `expected`…) from which a client writes its own words."""
    out = []
    for e in errors:
        item: dict[str, Any] = {
            "loc": [*loc, *(p if isinstance(p, (int, str)) else str(p) for p in e.get("loc", ()))],
            "msg": e.get("msg", "invalid"),
        }
        if e.get("type"):
            item["type"] = e["type"]
        ctx = {k: v for k, v in (e.get("ctx") or {}).items() if _shown(v)}
        if ctx:
            item["ctx"] = ctx
        out.append(item)
    return out


def _errors(exc: ValidationError, loc: tuple) -> list[dict]:
    return faults(exc.errors(include_url=False), loc)


def invalid_from(exc: ValidationError, loc: tuple = ("body",)) -> InvalidBody:
    return invalid(_errors(exc, loc))


def invalid(errors: list[dict]) -> InvalidBody:
    """The 422 of these errors (`loc`, `msg` each), the first named in its detail."""
    first = errors[0]
    return InvalidBody(f"{'.'.join(map(str, first['loc']))}: {first['msg']}", extra={"errors": errors})


def errors_at(exc: ValidationError, loc: tuple) -> list[dict]:
    """pydantic's errors as a 422 lists them, located under `loc`."""
    return _errors(exc, loc)


def validate(model: type[M], data: Any, *, loc: tuple = ("body",)) -> M:
    """`model.model_validate(data)`, turning pydantic's error into a 422 with `errors` located under `loc`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_from(exc, loc) from None


def prefixed(exc: RuleError, prefix: str) -> RuleError:
    """Re-locate a rule error raised inside a nested document (e.g. the sheet)."""
    if exc.field == prefix or (exc.field or "").startswith(prefix + "."):
        field = exc.field or prefix  # located already (a non-empty field)
    else:
        field = f"{prefix}.{exc.field}" if exc.field else prefix
    exc.field = field
    if "errors" not in exc.extra:
        exc.extra["errors"] = [{"loc": ["body", *field.split(".")], "msg": exc.detail}]
    return exc
