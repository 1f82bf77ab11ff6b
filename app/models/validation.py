"""Validating bodies whose schema depends on the campaign's ruleset."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.rules.errors import RuleError

M = TypeVar("M", bound=BaseModel)


class InvalidBody(RuleError):
    title = "Validation error"
    code = "validation_failed"


def _errors(exc: ValidationError, loc: tuple) -> list[dict]:
    return [
        {"loc": [*loc, *(p if isinstance(p, (int, str)) else str(p) for p in e.get("loc", ()))], "msg": e["msg"]}
        for e in exc.errors(include_url=False)
    ]


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
