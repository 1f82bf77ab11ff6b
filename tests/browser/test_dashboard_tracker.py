"""The tracker holds still: drawn by keyed rows patched in place (dom.js `patch`), a read that changes
nothing makes no DOM mutation, and a focused or hovered tracker button stays so across the fight's
events (a keyboard user's focus used to drop to <body> at every event, a click across a redraw was
lost); in French and in English."""

from __future__ import annotations

from contextlib import closing

import pytest

from tests.browser.dash_support import fight, table
from tests.browser.test_dashboard import clean, open_with_token

WORDS = {
    "fr": {
        "hide": "Cacher Seigneur Vorath aux joueurs",
        "reveal": "Révéler Seigneur Vorath aux joueurs",
        "order": "Ordre du tour",
    },
    "en": {
        "hide": "Hide Seigneur Vorath from the players",
        "reveal": "Reveal Seigneur Vorath to the players",
        "order": "Turn order",
    },
}

WATCH = """() => {
    window.jdrMutations = [];
    new MutationObserver(records => window.jdrMutations.push(...records.map(r =>
        `${r.type} ${r.target.nodeType === 1 ? r.target.tagName + (r.target.id ? '#' + r.target.id : '') : r.target.parentNode?.tagName}`
        + (r.attributeName ? ' @' + r.attributeName : ''))))
      .observe(document.getElementById('encounter'), {subtree: true, childList: true, attributes: true, characterData: true});
}"""


def unchanged_read(page, eid: str) -> list[str]:
    """The fight read again with nothing changed (the picker re-chooses it): the mutations it made."""
    page.wait_for_function("() => !document.documentElement.dataset.busy", timeout=30_000)  # the form's own reads done
    page.evaluate("() => { window.jdrMutations.length = 0; }")
    with page.expect_response(lambda r: f"/v1/encounters/{eid}/actions" in r.url):
        page.evaluate("() => document.querySelector('select[name=encounter]').dispatchEvent(new Event('change'))")
    page.wait_for_timeout(150)  # the answer drawn
    page.wait_for_function("() => !document.documentElement.dataset.busy", timeout=30_000)
    return page.evaluate("() => window.jdrMutations.slice(0, 20)")


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_a_read_that_changes_nothing_touches_no_node(live, pages, lang):
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    with closing(s["http"]):
        encounter = fight(s)
        gm = pages(viewport={"width": 1280, "height": 900})
        open_with_token(gm, server.url, s["gm"], lang)
        gm.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']")
        gm.wait_for_selector("html[data-synced=true]")
        # the tracker in the page's language: its rows' words are the ones a read redraws, or not
        assert gm.get_by_role("list", name=words["order"]).count() == 1
        assert gm.get_by_role("button", name=words["hide"]).count() == 1
        gm.evaluate(WATCH)
        assert unchanged_read(gm, encounter["id"]) == []
        # the observer sees what a real change does (the check can fail)
        vorath = next(c for c in encounter["combatants"] if c["character_id"] == s["vorath"]["id"])
        r = s["http"].post(
            f"/v1/encounters/{encounter['id']}/actions",
            json={"type": "damage", "target_id": vorath["id"], "amount": 1, "resource": "hp"},
        )
        assert r.status_code == 201, r.text
        gm.wait_for_selector(f"#encounter-view[data-version='{encounter['version'] + 1}']")
        assert gm.evaluate("() => window.jdrMutations.length") > 0
        assert unchanged_read(gm, encounter["id"]) == []
        clean(gm)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_focus_and_hover_survive_twenty_events(live, pages, lang):
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    with closing(s["http"]) as http:
        encounter = fight(s)
        eid, version = encounter["id"], encounter["version"]
        vorath = next(c for c in encounter["combatants"] if c["character_id"] == s["vorath"]["id"])
        gm = pages(viewport={"width": 1280, "height": 900})
        open_with_token(gm, server.url, s["gm"], lang)
        gm.wait_for_selector(f"#encounter-view[data-version='{version}']")
        row = f"#turn-order li[data-combatant-id='{vorath['id']}']"
        hide = gm.get_by_role("button", name=words["hide"])
        hide.focus()  # a keyboard user on the row's button of the very combatant the events change
        gm.evaluate(
            f'() => {{ document.activeElement.jdrProbe = true; document.querySelector("{row}").jdrProbe = true; }}'
        )
        gm.locator("#next-turn").hover()
        hp = [vorath["resources"]["hp"]["value"]]
        for i in range(20):
            body = {
                "type": "damage" if i % 2 == 0 else "heal",
                "target_id": vorath["id"],
                "amount": 1,
                "resource": "hp",
            }
            r = http.post(f"/v1/encounters/{eid}/actions", json=body)
            assert r.status_code == 201, r.text
            version += 1
            hp.append(hp[-1] + (-1 if i % 2 == 0 else 1))
            gm.wait_for_selector(f"#encounter-view[data-version='{version}']")
            state = gm.evaluate(
                f"""() => ({{focused: Boolean(document.activeElement.jdrProbe),
                    row: Boolean(document.querySelector("{row}").jdrProbe),
                    hovered: document.getElementById('next-turn').matches(':hover'),
                    hp: Number(document.querySelector("{row} [role=meter][data-resource=hp]").getAttribute('aria-valuenow'))}})"""
            )
            assert state == {"focused": True, "row": True, "hovered": True, "hp": hp[-1]}, (i, state)
        # the kept button acts on the fight as it is now: Enter hides Vorath, the focus stays on it
        gm.keyboard.press("Enter")
        gm.get_by_role("button", name=words["reveal"]).wait_for()
        assert gm.evaluate("() => Boolean(document.activeElement.jdrProbe)")
        assert next(c for c in http.get(f"/v1/encounters/{eid}").json()["combatants"] if c["id"] == vorath["id"])[
            "hidden"
        ]
        clean(gm)
