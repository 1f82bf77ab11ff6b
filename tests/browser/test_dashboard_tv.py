"""The table screen (a TV nobody scrolls) and the fight's grid: out of a fight the table's dice
tray, live from the event stream, never a hidden roll; in a fight 10 combatants and the grid
within 1920×1080; pawns named in full and coloured by side; in French and in English."""

from __future__ import annotations

from contextlib import closing
from typing import Any

import pytest

from tests.browser.dash_support import TV, at_phone_widths, axe, fight, table
from tests.browser.test_dashboard import clean, open_with_token, snap

WORDS = {
    "fr": {
        "turn": "Au tour de {}",
        "order": "Ordre du tour",
        "grid": "Grille du combat",
        "sides": "Camps sur la grille",
        "cell": "case 1, 3 : Aiko",
    },
    "en": {
        "turn": "Turn of {}",
        "order": "Turn order",
        "grid": "The fight's grid",
        "sides": "Sides on the grid",
        "cell": "cell 1, 3: Aiko",
    },
}


def tv(pages, server, token: str, *, lang: str | None = None, viewport: dict[str, int] = TV) -> Any:
    screen = pages(viewport=viewport)
    open_with_token(screen, server.url, token, lang or "fr")
    screen.goto(f"{server.url}/#/table")
    screen.wait_for_selector("html[data-ready=table]")
    return screen


def english_open(page, url: str, token: str) -> None:
    page.goto(f"{url}/")
    page.get_by_label("Token (GM or player)").fill(token)
    page.get_by_role("button", name="Open", exact=True).click()
    page.wait_for_selector("html[data-ready=dashboard]")


def big_fight(s: dict[str, Any], *, start: bool = True) -> dict[str, Any]:
    """Aiko (héros) against nine copies of Seigneur Vorath (ennemis), all placed on the grid."""
    http = s["http"]
    r = http.post(
        f"/v1/campaigns/{s['cid']}/encounters",
        json={
            "name": "La horde",
            "options": {"hp_visibility": "exact", "reveal_on_turn": False},
            "combatants": [
                {"character_id": s["aiko"]["id"], "side": "héros", "position": {"x": 1, "y": 3}},
                {"character_id": s["vorath"]["id"], "side": "ennemis", "count": 9, "position": {"x": 6, "y": 3}},
            ],
        },
    )
    assert r.status_code == 201, r.text
    eid = r.json()["id"]
    if start:
        started = http.post(f"/v1/encounters/{eid}/start", json={"seed": 5})
        assert started.status_code == 201, started.text
    return http.get(f"/v1/encounters/{eid}").json()


def test_table_screen_out_of_a_fight_is_a_live_dice_tray_without_hidden_rolls(live, pages):
    server = live.start()
    s = table(live, server)
    with closing(s["http"]) as http:
        screen = tv(pages, server, s["gm"])
        screen.wait_for_selector("#table-screen[data-mode=dice]")
        assert "Aucune rencontre" not in screen.inner_text("#table-screen")
        assert "Aucun jet pour l'instant" in screen.inner_text("#table-screen")
        assert axe(screen) == []
        at_phone_widths(screen)

        r = http.post(f"/v1/characters/{s['aiko']['id']}/tests", json={"stat": "force", "dice": [42]})
        assert r.status_code == 201, r.text
        tile = screen.locator("#dice-tray li.roll").first
        tile.wait_for(timeout=15_000)  # live, by the stream
        assert tile.locator(".roll-head strong").inner_text() == "Aiko"
        assert tile.locator(".tray-value").all_inner_texts() == ["42"]
        assert tile.locator("li.tray-die").get_attribute("aria-label") == "d100 : 42"
        # a hidden GM roll never reaches the table's screen, though the GM's token opened it
        hidden = http.post(f"/v1/campaigns/{s['cid']}/rolls", json={"expression": "1d6", "dice": [6], "hidden": True})
        assert hidden.status_code == 201, hidden.text
        shown = http.post(f"/v1/campaigns/{s['cid']}/rolls", json={"expression": "2d6", "dice": [3, 4]})
        assert shown.status_code == 201, shown.text
        screen.wait_for_function("() => document.querySelectorAll('#dice-tray li.roll').length === 2", timeout=15_000)
        assert screen.locator("#dice-tray li.roll").first.locator(".tray-value").all_inner_texts() == ["3", "4"]
        assert screen.locator("#dice-tray li.roll.newest").count() == 1
        # a free roll says what it rolled, with no « (roll) » (its dice's purpose when none is given)
        assert screen.locator("#dice-tray li.roll .roll-line").all_inner_texts() == [
            "2d6 = 7",
            "Aiko — force : 42 contre 68 — réussite super-critique (karma 0 → -2)",
        ]
        screen.wait_for_timeout(300)
        assert screen.locator("#dice-tray li.roll").count() == 2
        # read again (a reload): the same tray, the hidden roll still left out
        screen.reload()
        screen.wait_for_selector("#dice-tray li.roll")
        assert screen.locator("#dice-tray li.roll").count() == 2
        assert axe(screen) == []
        at_phone_widths(screen)
        snap(screen, "tv-dice")

        english = tv(pages, server, s["gm"], lang="en")
        english.wait_for_selector("#dice-tray li.roll")
        assert english.locator("#tray-title").inner_text() == "The latest rolls"
        assert english.locator("li.tray-die").first.get_attribute("aria-label") == "d6: 3"
        # the stat by its English name, not its id (« force »)
        assert english.locator("#dice-tray li.roll .roll-line").all_inner_texts() == [
            "2d6 = 7",
            "Aiko — strength: 42 vs 68 — super-critical success (karma 0 → -2)",
        ]
        # a fight starts: the screen turns to it, live; it ends: the dice again
        encounter = fight(s)
        screen.wait_for_selector(
            f"#table-screen[data-mode=fight][data-version='{encounter['version']}']", timeout=15_000
        )
        assert screen.locator("#dice-tray").count() == 0
        assert http.post(f"/v1/encounters/{encounter['id']}/end").status_code in (200, 201)
        screen.wait_for_selector("#table-screen[data-mode=dice] #dice-tray li.roll", timeout=15_000)
        for page in (screen, english):
            clean(page)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_table_screen_shows_ten_combatants_and_the_grid_within_1080p(live, pages, lang):
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    with closing(s["http"]):
        encounter = big_fight(s)
        assert len(encounter["combatants"]) == 10
        screen = tv(pages, server, s["gm"], lang=lang)
        screen.wait_for_selector(f"#table-screen[data-version='{encounter['version']}']")
        current = next(c["name"] for c in encounter["combatants"] if c["id"] == encounter["current"]["combatant_id"])
        assert screen.locator("#table-turn").inner_text() == words["turn"].format(current)
        assert screen.get_by_role("list", name=words["order"]).count() == 1
        assert screen.get_by_role("group", name=words["grid"]).count() == 1
        boxes = screen.evaluate(
            """() => [...document.querySelectorAll('#table-screen li.combatant')].map(li => {
                 const r = li.getBoundingClientRect();
                 return {name: li.querySelector('.name').textContent, top: r.top, bottom: r.bottom, left: r.left, right: r.right};
               })"""
        )
        assert len(boxes) == 10
        outside = [b for b in boxes if b["top"] < 0 or b["left"] < 0 or b["bottom"] > 1080 or b["right"] > 1920]
        assert outside == [], outside
        assert screen.evaluate("document.documentElement.scrollHeight") <= 1080
        # the grid too, every pawn on it named in full, within the screen
        pawns = screen.evaluate(
            """() => [...document.querySelectorAll('#table-grid .pawn')].map(p => {
                 const r = p.getBoundingClientRect();
                 return {text: p.textContent, full: p.scrollHeight <= p.clientHeight + 1 && p.scrollWidth <= p.clientWidth + 1,
                         bottom: r.bottom, right: r.right};
               })"""
        )
        assert sorted(p["text"] for p in pawns) == sorted(c["name"] for c in encounter["combatants"])
        assert all(p["full"] and p["bottom"] <= 1080 and p["right"] <= 1920 for p in pawns), pawns
        assert axe(screen) == []
        at_phone_widths(screen)
        if lang == "fr":
            snap(screen, "tv-fight")
        clean(screen)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_grid_pawns_named_in_full_coloured_by_side(live, pages, lang):
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    with closing(s["http"]):
        encounter = big_fight(s, start=False)
        page = pages(viewport={"width": 1280, "height": 900})
        open_with_token(page, server.url, s["gm"], lang)
        page.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']")
        pawns = page.evaluate(
            """() => [...document.querySelectorAll('#grid button.cell.taken')].map(cell => {
                 const p = cell.querySelector('.pawn');
                 return {text: p.textContent, full: p.scrollHeight <= p.clientHeight + 1 && p.scrollWidth <= p.clientWidth + 1
                           && p.getBoundingClientRect().bottom <= cell.getBoundingClientRect().bottom + 1,
                         colour: getComputedStyle(cell).backgroundColor, width: cell.getBoundingClientRect().width};
               })"""
        )
        by_name = {p["text"]: p for p in pawns}
        assert sorted(by_name) == sorted(
            c["name"] for c in encounter["combatants"]
        )  # « Seigneur Vorath 1 », not « Seig »
        assert all(p["full"] for p in pawns), pawns
        assert min(p["width"] for p in pawns) >= 48  # cells a finger wide
        foes = {p["colour"] for name, p in by_name.items() if name != "Aiko"}
        assert len(foes) == 1 and by_name["Aiko"]["colour"] not in foes  # a colour per side
        # the sides as the GM named them, the legend and each cell said in the page's language
        assert page.get_by_role("list", name=words["sides"]).locator("li").all_inner_texts() == ["héros", "ennemis"]
        assert page.locator("#grid button.cell.taken", has_text="Aiko").get_attribute("aria-label") == words["cell"]
        assert axe(page, context="#grid") == []
        at_phone_widths(page)
        clean(page)
