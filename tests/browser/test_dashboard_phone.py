"""A phone fits every page (360 and 390 px wide, touch): nothing scrolls sideways on the first
screen, the GM's page (in a fight, an invitation open), the player's phone in a fight (on its
turn, its action form open) and the table screen."""

from __future__ import annotations

from contextlib import closing

from tests.browser.dash_support import PHONES, at_phone_widths, fight, no_overflow, table
from tests.browser.test_dashboard import clean, open_with_token


def phone(pages, width: int):
    return pages(viewport={"width": width, "height": 800}, is_mobile=True, has_touch=True)


def test_no_page_scrolls_sideways_on_a_phone(live, pages):
    server = live.start()
    s = table(live, server)
    with closing(s["http"]) as http:
        encounter = fight(s)
        # Aiko's turn: the player's phone shows its banner and action form
        while encounter["current"]["combatant_id"] != next(
            c["id"] for c in encounter["combatants"] if c["character_id"] == s["aiko"]["id"]
        ):
            assert http.post(f"/v1/encounters/{encounter['id']}/next-turn", json={}).status_code == 201
            encounter = http.get(f"/v1/encounters/{encounter['id']}").json()

        first = phone(pages, 360)
        first.goto(f"{server.url}/")
        first.locator("select option").first.wait_for(state="attached")
        at_phone_widths(first)

        gm = pages(viewport={"width": 1280, "height": 900})
        open_with_token(gm, server.url, s["gm"])
        gm.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']")
        gm.get_by_role("button", name="Inviter Léa par un lien").click()
        gm.locator("#invite-qr").wait_for()
        at_phone_widths(gm)

        players = []
        for width in PHONES:
            page = phone(pages, width)
            open_with_token(page, server.url, s["player"]["token"])
            page.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']")
            page.locator(".your-turn").wait_for()
            no_overflow(page)
            players.append(page)

        screen = phone(pages, 390)
        open_with_token(screen, server.url, s["gm"])
        screen.goto(f"{server.url}/#/table")
        screen.wait_for_selector("#table-screen[data-version]")
        at_phone_widths(screen)
        for page in (first, gm, *players, screen):
            clean(page)
