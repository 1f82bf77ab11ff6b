"""A player's phone in a fight: why the others' sheets turned into status words (the fight's
hp_visibility, said in one line), the test panel one tap away (a short bar of the page's parts), and
the focus on « Tour suivant » after acting; in French and in English."""

from __future__ import annotations

from contextlib import closing
from typing import Any

import pytest

from tests.browser.dash_support import at_phone_widths, axe, fight, no_overflow, table
from tests.browser.test_dashboard import clean, open_with_token

NOTE_FR = "Pendant ce combat, les PV des autres sont montrés en mots d'état."
NOTE_EN = "During this fight, the others' HP are shown as status words."
WORDS = {
    "fr": {
        "nav": "Aller à",
        "parts": ["Personnages", "Combat", "Tests", "Journal"],
        "fight": "Combat",
        "act": "Agir",
        "next": "Tour suivant",
        "posture": "posture : ",
        "down": "hors de combat",
    },
    "en": {
        "nav": "Go to",
        "parts": ["Characters", "Fight", "Tests", "Log"],
        "fight": "Fight",
        "act": "Act",
        "next": "Next turn",
        "posture": "posture: ",
        "down": "down",
    },
}


def phone(pages, width: int = 390, lang: str | None = None) -> Any:
    page = pages(viewport={"width": width, "height": 844}, is_mobile=True, has_touch=True)
    if lang:
        page.add_init_script(f"localStorage.setItem('jdr.lang', '{lang}')")
    return page


def whole_names(page) -> None:
    cut = page.evaluate(
        "() => [...document.querySelectorAll('#parts-bar button')].filter(b => b.scrollWidth > b.clientWidth)"
        ".map(b => b.textContent)"
    )
    assert cut == [], cut


def aiko_turn(s: dict[str, Any], encounter: dict[str, Any]) -> dict[str, Any]:
    aiko = next(c["id"] for c in encounter["combatants"] if c["character_id"] == s["aiko"]["id"])
    while encounter["current"]["combatant_id"] != aiko:
        assert s["http"].post(f"/v1/encounters/{encounter['id']}/next-turn", json={}).status_code == 201
        encounter = s["http"].get(f"/v1/encounters/{encounter['id']}").json()
    return encounter


def test_the_phone_says_why_the_others_hp_became_status_words(live, pages):
    server = live.start()
    s = table(live, server)
    with closing(s["http"]) as http:
        player = phone(pages)
        open_with_token(player, server.url, s["player"]["token"])
        note = player.locator("#visibility-note")
        assert note.is_hidden()  # no fight: nothing to explain
        encounter = fight(s, visibility="status")
        player.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']", timeout=15_000)
        note.wait_for(state="visible")
        assert note.inner_text() == NOTE_FR
        assert axe(player) == []
        at_phone_widths(player)
        # the GM sees every figure: nothing to explain on its page
        gm = pages(viewport={"width": 1280, "height": 900})
        open_with_token(gm, server.url, s["gm"])
        gm.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']", timeout=15_000)
        assert gm.locator("#visibility-note").is_hidden()
        # in English
        english = phone(pages, lang="en")
        english.goto(f"{server.url}/")
        english.get_by_label("Token (GM or player)").fill(s["player"]["token"])
        english.get_by_role("button", name="Open", exact=True).click()
        english.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']", timeout=15_000)
        english.locator("#visibility-note").wait_for(state="visible")
        assert english.locator("#visibility-note").inner_text() == NOTE_EN
        # the fight over: the figures are back, and the line goes
        assert http.post(f"/v1/encounters/{encounter['id']}/end").status_code in (200, 201)
        note.wait_for(state="hidden", timeout=15_000)
        for page in (player, gm, english):
            clean(page)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_phone_test_panel_one_tap_away_and_focus_on_next_turn_after_acting(live, pages, lang):
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    with closing(s["http"]) as http:
        # the GM's Vorath shown to the players (its status words): a card before Aiko's by kind and name
        assert http.patch(f"/v1/characters/{s['vorath']['id']}", json={"player_access": "limited"}).status_code == 200
        encounter = aiko_turn(s, fight(s))
        player = phone(pages)
        open_with_token(player, server.url, s["player"]["token"], lang)
        player.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']", timeout=15_000)
        player.locator(".your-turn").wait_for()
        # the player's own character first among the cards
        cards = player.locator("#character-cards article.character")
        player.wait_for_function("() => document.querySelectorAll('#character-cards article.character').length === 2")
        assert cards.first.get_attribute("data-character-id") == s["aiko"]["id"]
        # the test panel: far down the page, one tap on the page's bar, in sight at once
        assert player.evaluate("document.getElementById('test').getBoundingClientRect().top") > 844
        nav = player.get_by_role("navigation", name=words["nav"])
        assert nav.is_visible()
        assert nav.get_by_role("button").all_inner_texts() == words["parts"]
        nav.get_by_role("button", name="Tests").click()
        player.wait_for_function(
            """() => { const r = document.getElementById('test-title').getBoundingClientRect();
                       return r.top >= 0 && r.bottom <= innerHeight; }""",
            timeout=5_000,
        )
        assert player.evaluate("document.activeElement.id") == "test-title"
        at_phone_widths(player, whole_names)  # every part's name whole on the bar, at each phone width
        # acting: the focus on « Tour suivant », not <body>
        nav.get_by_role("button", name=words["fight"]).click()
        player.get_by_label("Action", exact=True).select_option("posture")
        player.locator("#encounter select[name=posture]").select_option(index=1)
        before = encounter["version"]
        player.get_by_role("button", name=words["act"], exact=True).click()
        player.wait_for_function(
            f"() => Number(document.querySelector('#encounter-view').dataset.version) > {before}", timeout=15_000
        )
        player.wait_for_function(
            "() => document.activeElement && document.activeElement.id === 'next-turn'", timeout=5_000
        )
        assert player.evaluate("document.activeElement.textContent") == words["next"]
        aiko = next(c["id"] for c in encounter["combatants"] if c["character_id"] == s["aiko"]["id"])
        assert words["posture"] in player.locator(f"#turn-order li[data-combatant-id='{aiko}'] .chips").inner_text()
        assert axe(player) == []
        at_phone_widths(player)
        clean(player)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_gm_focus_never_left_on_body_after_an_action_redraws_the_form(live, pages, lang):
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    with closing(s["http"]):
        encounter = fight(s)
        aiko = next(c["id"] for c in encounter["combatants"] if c["character_id"] == s["aiko"]["id"])
        gm = phone(pages)
        open_with_token(gm, server.url, s["gm"], lang)
        gm.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']", timeout=15_000)
        # GM damage that downs Aiko: the action form is drawn again (who may be targeted changed), its
        # « Agir » button pressed gone from the page
        gm.get_by_label("Action", exact=True).select_option("damage")
        gm.locator("#encounter select[name=target_id]").select_option(aiko)
        gm.locator("#encounter input[name=amount]").fill("40")
        gm.get_by_role("button", name=words["act"], exact=True).click()
        down = gm.locator(f"#turn-order li.down[data-combatant-id='{aiko}']")
        down.wait_for(timeout=15_000)
        assert down.locator(".badge.down").inner_text() == words["down"]
        gm.wait_for_function("() => document.activeElement && document.activeElement.id === 'next-turn'", timeout=5_000)
        assert gm.evaluate("document.activeElement.textContent") == words["next"]
        no_overflow(gm)
        clean(gm)
