"""Issue 28 item 3: authorization declared once. Every route that takes a caller declares who
may call it (`@access`, on the route, once), the caller's dependency enforces it (`auth.granted`,
then `auth.authorize` on the row its path names); the services no longer pick a role of their own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.api.deps import CheckedRoute, PrincipalDep, access, declared
from app.main import app as default_app
from tests.hardening.test_authz_matrix import TABLE


def _routes(routes, prefix: str = ""):
    from fastapi.routing import _IncludedRouter

    for route in routes:
        if isinstance(route, _IncludedRouter):
            yield from _routes(route.original_router.routes, prefix + route.include_context.prefix)
        elif hasattr(route, "endpoint") and prefix + getattr(route, "path", "") in {p for _m, p in TABLE}:
            yield route


def _served() -> dict[tuple[str, str], object]:
    return {(m, r.path): r for r in _routes(default_app.routes) for m in r.methods or () if m != "HEAD"}


def test_every_route_of_the_matrix_declares_its_access():
    served = _served()
    assert set(served) == set(TABLE)  # every route is found here, so none escapes the checks below
    undeclared = {key for key, route in served.items() if declared(route)[0] is None}
    public = {key for key, cell in TABLE.items() if cell.expected["none"] < 400}  # no token needed
    admin = {("POST", "/v1/campaigns"), ("POST", "/v1/campaigns/import")}  # open while no ADMIN_TOKEN is set
    assert undeclared == public - admin
    assert ("GET", "/v1/rulesets") in undeclared and ("POST", "/v1/characters/{character_id}/tests") not in undeclared


@pytest.mark.parametrize("key", sorted(TABLE), ids=lambda k: f"{k[0]} {k[1]}")
def test_the_declared_access_is_what_the_matrix_answers(key):
    """The one declaration is the rule the app enforces: a GM's route refuses both players (403),
    an owner's or the GM's refuses the other player only, a member's refuses neither."""
    role, _action = declared(_served()[key])
    expected = TABLE[key].expected
    if role in (None, "admin"):  # public; the admin's while an ADMIN_TOKEN is set (none here)
        assert expected["none"] < 400
        return
    assert expected["none"] == 401 and expected["bad"] == 401
    if role == "gm":
        assert (expected["player"], expected["owner"]) == (403, 403)
    elif role == "owner_or_gm":
        assert expected["player"] == 403 and expected["owner"] < 400
    elif role == "member":
        assert expected["player"] < 400 or expected["player"] == 403  # a body's own rule may refuse a player
        assert expected["other_gm"] in (404, 201, 200)


def test_access_is_declared_once():
    def endpoint() -> None: ...

    access("member")(endpoint)
    with pytest.raises(TypeError, match="declared twice"):
        access("gm")(endpoint)


def test_a_route_that_takes_a_caller_without_a_declaration_is_refused():
    async def undeclared(principal: PrincipalDep) -> None: ...

    with pytest.raises(TypeError, match="declares who may call it"):
        CheckedRoute("/v1/campaigns/{campaign_id}/nothing", undeclared, methods=["GET"])


# the rules a service still applies are about what the request asks (its body), not the route's:
# a GM's action type in a fight, the order players chose for a tie, a free roll attributed to a
# character, a GM's character action
BODY_RULES = {
    ("app/services/encounters/actions.py", "check_gm"): 1,
    ("app/services/encounters/turns.py", "check_gm"): 1,
    ("app/services/rolls.py", "check_owner_or_gm"): 1,
    ("app/services/play.py", "check_gm"): 1,
}


def test_the_services_pick_no_role_of_their_own():
    root = Path(__file__).resolve().parents[2]
    found: dict[tuple[str, str], int] = {}
    for path in sorted((root / "app" / "services").rglob("*.py")):
        name = str(path.relative_to(root))
        if name == "app/services/auth.py":
            continue
        for check in re.findall(r"\b(check_gm|check_owner_or_gm)\(", path.read_text()):
            found[name, check] = found.get((name, check), 0) + 1
    assert found == BODY_RULES
