"""Issue 11, item 1: one error hierarchy without HTTP (app.kit.errors); the API
maps each class to a status code in one place (app.api.problems.STATUS)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import app
from app.api.problems import STATUS, app_error_response, status_of
from app.kit import errors as e
from app.rules.errors import DiceNeeded, InsufficientResource, TooManyDice

APP = Path(app.__file__).parent


def _all_subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _all_subclasses(sub)
    return found


def test_no_error_class_carries_an_http_status():
    for name, _ in [(m.name, m) for m in pkgutil.walk_packages([str(APP)], "app.")]:
        importlib.import_module(name)
    for cls in _all_subclasses(e.AppError):
        assert "status_code" not in vars(cls), f"{cls.__module__}.{cls.__qualname__} sets an HTTP status"


def test_no_rules_module_mentions_http():
    paths = [*(APP / "rules").rglob("*.py"), *(APP / "rulesets").glob("*/rules/*.py")]
    assert len(paths) > 10, paths  # the shared rules and each ruleset's
    for path in paths:
        tree = ast.parse(path.read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
        }
        imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names} | {
            n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
        }
        assert "status_code" not in names, path
        assert not {m for m in imported if m.split(".")[0] in ("http", "fastapi", "starlette")}, path


def test_every_error_class_maps_to_one_status():
    expected = {
        e.RuleError: 422,
        DiceNeeded: 422,
        TooManyDice: 422,
        e.Unauthorized: 401,
        e.Forbidden: 403,
        e.NotFound: 404,
        e.Conflict: 409,
        InsufficientResource: 409,
        e.PreconditionFailed: 412,
        e.TooManyRequests: 429,
        e.Unavailable: 503,
        e.BadRequest: 400,
    }
    for cls, status in expected.items():
        assert status_of(cls) == status, cls
    for cls in _all_subclasses(e.AppError):
        assert 400 <= status_of(cls) < 600
    assert set(STATUS) <= {e.AppError} | _all_subclasses(e.AppError)


def test_transport_details_are_derived_from_the_error_not_carried_by_it():
    r = app_error_response(e.TooManyRequests("slow down", retry_after=7))
    assert r.status_code == 429 and r.headers["Retry-After"] == "7"
    r = app_error_response(e.Unauthorized("who are you"))
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Bearer"
    r = app_error_response(DiceNeeded(1, "d10", "karma"))
    assert r.status_code == 422 and b'"needed"' in r.body and b'"errors"' in r.body
