"""The running fight's add form follows the campaign's characters at once: one made, renamed or deleted
by another client (`character.created`, `character.updated`, `character.deleted`) changes the form's
list without a reload nor a change of the fight (its list used to follow only at the fight's next
redraw), and what the GM already typed or chose stays, the field typed in still focused."""

from __future__ import annotations

from contextlib import closing

from tests.browser.dash_support import add_and_read, fight, table
from tests.browser.test_dashboard import GOBLIN_SHEET, clean, open_with_token

OPTIONS = "() => [...document.querySelectorAll('#encounter-adder select[name=add-who] option')].map(o => o.textContent)"


def test_issue27_item5_the_add_form_lists_a_character_made_renamed_or_deleted_meanwhile(live, pages):
    server = live.start()
    s = table(live, server)
    page = pages(viewport={"width": 1280, "height": 900})
    with closing(s["http"]) as http:
        state = fight(s)
        eid = state["id"]
        r = http.post(
            f"/v1/campaigns/{s['cid']}/characters", json={"name": "Renfort", "kind": "npc", "sheet": GOBLIN_SHEET}
        )
        assert r.status_code == 201, r.text
        open_with_token(page, server.url, s["gm"])
        page.wait_for_selector("html[data-synced=true]")  # the first re-read after the stream opened is done
        page.wait_for_selector(f"#encounter-view[data-status=active][data-version='{state['version']}']")
        page.wait_for_selector("html:not([data-busy])", state="attached")
        page.evaluate("() => { window.notReloaded = true; }")  # gone if the page were loaded again
        fight_reads: list[str] = []  # the fight read again (GET /v1/encounters/{id}…) from here on
        page.on("request", lambda req: fight_reads.append(req.url) if f"/v1/encounters/{eid}" in req.url else None)
        adder = page.locator("#encounter-adder")
        assert page.evaluate(OPTIONS) == ["Renfort"]
        adder.get_by_label("Combattant à ajouter").select_option(label="Renfort")
        adder.get_by_label("caché").check()
        adder.get_by_label("Initiative (MJ)").fill("7")

        def kept() -> None:
            assert adder.get_by_label("Initiative (MJ)").input_value() == "7"
            assert adder.get_by_label("caché").is_checked()
            assert adder.locator("select[name=add-who] option:checked").text_content() == "Renfort"
            assert page.evaluate("() => document.activeElement?.name") == "add-initiative"
            assert page.evaluate("() => window.notReloaded") is True
            assert page.locator("#encounter-view").get_attribute("data-version") == str(state["version"])

        # another client makes a character: the form lists it at once
        r = http.post(
            f"/v1/campaigns/{s['cid']}/characters", json={"name": "Éclaireur", "kind": "npc", "sheet": GOBLIN_SHEET}
        )
        assert r.status_code == 201, r.text
        scout = r.json()
        page.wait_for_function(f"() => ({OPTIONS})().includes('Éclaireur')", timeout=15_000)
        assert page.evaluate(OPTIONS) == ["Éclaireur", "Renfort"]
        kept()
        # renamed: the form's list says the new name
        r = http.patch(f"/v1/characters/{scout['id']}", json={"name": "Guetteur"})
        assert r.status_code == 200, r.text
        page.wait_for_function(f"() => ({OPTIONS})().includes('Guetteur')", timeout=15_000)
        assert page.evaluate(OPTIONS) == ["Guetteur", "Renfort"]
        kept()
        # deleted: gone from the form's list
        r = http.delete(f"/v1/characters/{scout['id']}")
        assert r.status_code == 204, r.text
        page.wait_for_function(f"() => !({OPTIONS})().includes('Guetteur')", timeout=15_000)
        assert page.evaluate(OPTIONS) == ["Renfort"]
        kept()
        assert fight_reads == []  # the list followed the characters, not a read of the fight
        # what the GM typed is what is sent
        page.keyboard.press("End")
        page.keyboard.type("5")  # still typing in the initiative field: 75
        _, renfort = add_and_read(page, adder, http, eid, state["version"], "Renfort")
        assert (renfort["hidden"], renfort["initiative"]) == (True, 75)
        clean(page)
