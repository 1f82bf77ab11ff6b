"""A phone fits every page (360 and 390 px wide, touch): nothing scrolls sideways on the first
screen, the GM's page (in a fight, an invitation open), the player's phone in a fight (on its
turn, its action form open) and the table screen, in French and in English (whose words are longer)."""

from __future__ import annotations

from contextlib import closing

import pytest

from tests.browser.dash_support import PHONES, at_phone_widths, fight, no_overflow, table
from tests.browser.test_dashboard import clean, open_with_token, speaking

WORDS = {
    "fr": {
        "create": "Nouvelle campagne",
        "invite": "Inviter Léa par un lien",
        "turn": "À toi de jouer : Aiko",
        "next": "Tour suivant",
        "order": "Ordre du tour",
    },
    "en": {
        "create": "New campaign",
        "invite": "Invite Léa by a link",
        "turn": "Your turn: Aiko",
        "next": "Next turn",
        "order": "Turn order",
    },
}


def phone(pages, width: int, lang: str = "fr"):
    return speaking(pages(viewport={"width": width, "height": 800}, is_mobile=True, has_touch=True), lang)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_no_page_scrolls_sideways_on_a_phone(live, pages, lang):
    words = WORDS[lang]
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

        first = phone(pages, 360, lang)
        first.goto(f"{server.url}/")
        first.locator("select option").first.wait_for(state="attached")
        assert first.get_by_role("heading", name=words["create"]).is_visible()
        at_phone_widths(first)

        gm = speaking(pages(viewport={"width": 1280, "height": 900}), lang)
        open_with_token(gm, server.url, s["gm"], lang)
        gm.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']")
        gm.get_by_role("button", name=words["invite"]).click()
        gm.locator("#invite-qr").wait_for()
        at_phone_widths(gm)

        players = []
        for width in PHONES:
            page = phone(pages, width, lang)
            open_with_token(page, server.url, s["player"]["token"], lang)
            page.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']")
            assert page.locator(".your-turn").inner_text() == words["turn"]
            assert page.get_by_role("button", name=words["next"], exact=True).is_visible()
            no_overflow(page)
            players.append(page)

        screen = phone(pages, 390, lang)
        open_with_token(screen, server.url, s["gm"], lang)
        screen.goto(f"{server.url}/#/table")
        screen.wait_for_selector("#table-screen[data-version]")
        assert screen.get_by_role("list", name=words["order"]).is_visible()
        at_phone_widths(screen)
        for page in (first, gm, *players, screen):
            clean(page)
