"""Helpers of the dashboard's round-2 browser tests (issue 27): a Great Cosmos table with a player,
its fight, the page's views as data, and axe-core (vendored, tests/browser/vendor/README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser.test_dashboard import GC_SHEET, GOBLIN_SHEET, api

AXE = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"


def campaign(live, server, ruleset: str, name: str) -> tuple[Any, str, str]:
    """A new campaign of `ruleset` (removed after the test): its GM's client (the caller closes it),
    its id and the GM's token."""
    with api(server.url) as http:
        r = http.post("/v1/campaigns", json={"name": name, "ruleset": ruleset})
        assert r.status_code == 201, r.text
        cid, gm = r.json()["id"], r.json()["gm_token"]
        live.campaigns.append(cid)
    return api(server.url, gm), cid, gm


def table(live, server, *, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """A campaign (French names) with Léa owning Aiko, and the GM's NPC Seigneur Vorath (`player_access`
    left to its default: none)."""
    with api(server.url) as http:
        body: dict[str, Any] = {"name": "Les Ombres de Séléné", "ruleset": "great-cosmos"}
        if options:
            body["options"] = options
        r = http.post("/v1/campaigns", json=body)
        assert r.status_code == 201, r.text
        cid, gm = r.json()["id"], r.json()["gm_token"]
        live.campaigns.append(cid)
    http = api(server.url, gm)
    player = http.post(f"/v1/campaigns/{cid}/players", json={"name": "Léa"}).json()
    aiko = http.post(
        f"/v1/campaigns/{cid}/characters",
        json={"name": "Aiko", "kind": "pc", "player_id": player["id"], "sheet": GC_SHEET},
    ).json()
    vorath = http.post(
        f"/v1/campaigns/{cid}/characters", json={"name": "Seigneur Vorath", "kind": "npc", "sheet": GOBLIN_SHEET}
    ).json()
    return {"http": http, "cid": cid, "gm": gm, "player": player, "aiko": aiko, "vorath": vorath}


def fight(s: dict[str, Any], *, hidden: bool = False, visibility: str = "exact", seed: int = 3) -> dict[str, Any]:
    """A started fight of Aiko against Vorath; returns the encounter state."""
    http = s["http"]
    r = http.post(
        f"/v1/campaigns/{s['cid']}/encounters",
        json={
            "name": "Le pont de Séléné",
            "options": {"hp_visibility": visibility, "reveal_on_turn": False},
            "combatants": [
                {"character_id": s["aiko"]["id"], "side": "héros"},
                {"character_id": s["vorath"]["id"], "side": "ennemis", "hidden": hidden},
            ],
        },
    )
    assert r.status_code == 201, r.text
    eid = r.json()["id"]
    started = http.post(f"/v1/encounters/{eid}/start", json={"seed": seed})
    assert started.status_code == 201, started.text
    return http.get(f"/v1/encounters/{eid}").json()


def card_pools(page, character_id: str) -> dict[str, list[int]]:
    """The pools a character card shows: resource → [value, max]."""
    return page.evaluate(
        """id => Object.fromEntries([...document.querySelectorAll(
             `article.character[data-character-id='${id}'] [role=meter]`)].map(m =>
             [m.dataset.resource, [Number(m.getAttribute('aria-valuenow')), Number(m.getAttribute('aria-valuemax'))]]))""",
        character_id,
    )


def tracker_pools(page, combatant_id: str) -> dict[str, list[int]]:
    return page.evaluate(
        """id => Object.fromEntries([...document.querySelectorAll(
             `#turn-order li[data-combatant-id='${id}'] [role=meter]`)].map(m =>
             [m.dataset.resource, [Number(m.getAttribute('aria-valuenow')), Number(m.getAttribute('aria-valuemax'))]]))""",
        combatant_id,
    )


def pools_of(sheet: dict[str, Any]) -> dict[str, list[int]]:
    return {k[:-4]: [sheet[k[:-4]], sheet[k]] for k in sheet if k.endswith("_max") and sheet[k] > 0}


def axe(page, *, context: str | None = None) -> list[dict[str, Any]]:
    """The serious and critical violations axe-core finds on the page as it is now."""
    if not page.evaluate("() => Boolean(window.axe)"):
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;0")  # by the DevTools protocol: no CSP applies
    found = page.evaluate(
        """async context => {
            const result = await axe.run(context || document, {resultTypes: ['violations']});
            return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
              .map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}));
        }""",
        context,
    )
    return found


def add_and_read(page, adder, http, eid: str, version: int, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fight form's "Ajouter au combat" pressed, the page's fight past `version`: the fight as the
    API then reads it, and the combatant named `name` in it."""
    adder.get_by_role("button", name="Ajouter au combat").click()
    page.wait_for_function(
        f"() => Number(document.querySelector('#encounter-view').dataset.version) > {version}", timeout=15_000
    )
    after = http.get(f"/v1/encounters/{eid}").json()
    return after, next(c for c in after["combatants"] if c["name"] == name)


PHONES = (360, 390)  # the widths every page state must fit (touch phones)
TV = {"width": 1920, "height": 1080}  # the table's screen, which nobody scrolls


def no_overflow(page) -> None:
    """The page fits its viewport's width as it is now: nothing scrolls sideways (a phone's
    page must never need a horizontal scroll), else the widest elements that stick out are named."""
    wide = page.evaluate(
        """() => {
            const width = window.innerWidth;
            if (document.documentElement.scrollWidth <= width) return null;
            const out = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > width + 0.5)
              .map(e => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className && typeof e.className === 'string'
                ? '.' + e.className.trim().split(/\\s+/).join('.') : ''} ${Math.round(e.getBoundingClientRect().right)}px`);
            return {scrollWidth: document.documentElement.scrollWidth, innerWidth: width, out: out.slice(0, 12)};
        }"""
    )
    assert wide is None, wide


def at_phone_widths(page, check=None) -> None:
    """`no_overflow` at each phone width of `PHONES` (the page resized, then set back to its size), and
    `check(page)` at each when given."""
    before = page.viewport_size
    try:
        for width in PHONES:
            page.set_viewport_size({"width": width, "height": before["height"] if before else 800})
            page.wait_for_timeout(50)  # a layout after the resize
            no_overflow(page)
            if check:
                check(page)
    finally:
        if before:
            page.set_viewport_size(before)
