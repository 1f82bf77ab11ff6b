"""Issue 27 item 5: the GM adds a combatant to a running fight from the tracker's add control (the
API places it by the ruleset's initiative rule, GC-O1: here the GM's initiative replaces agilité);
the current combatant stays current, a hidden one stays out of the player's view, and Undo names the
joining and takes it back."""

from __future__ import annotations

from contextlib import closing

from tests.browser.dash_support import axe, fight, table
from tests.browser.test_dashboard import GOBLIN_SHEET, api, clean, open_with_token


def test_issue27_item5_gc_o1_a_hidden_reinforcement_added_while_the_fight_runs_then_undone(live, pages):
    server = live.start()
    s = table(live, server)
    page = pages(viewport={"width": 1280, "height": 900})
    with closing(s["http"]) as http, closing(api(server.url, s["player"]["token"])) as lea:
        state = fight(s)
        eid, current = state["id"], state["current"]
        r = http.post(
            f"/v1/campaigns/{s['cid']}/characters", json={"name": "Renfort", "kind": "npc", "sheet": GOBLIN_SHEET}
        )
        assert r.status_code == 201, r.text
        open_with_token(page, server.url, s["gm"])
        page.wait_for_selector(f"#encounter-view[data-status=active][data-version='{state['version']}']")
        adder = page.locator("#encounter-adder")
        assert axe(page, context="#encounter-adder") == []
        adder.get_by_label("Combattant à ajouter").select_option(label="Renfort")
        adder.get_by_label("Initiative (MJ)").fill("99")
        adder.get_by_label("caché").check()
        adder.get_by_role("button", name="Ajouter au combat").click()
        page.wait_for_function(
            f"() => Number(document.querySelector('#encounter-view').dataset.version) > {state['version']}",
            timeout=15_000,
        )
        after = http.get(f"/v1/encounters/{eid}").json()
        renfort = next(c for c in after["combatants"] if c["name"] == "Renfort")
        assert (renfort["hidden"], renfort["initiative"]) == (True, 99)
        assert after["order"][0]["combatant_id"] == renfort["id"]
        assert after["current"]["combatant_id"] == current["combatant_id"]  # the current one stays current
        assert after["current"]["slot"] == current["slot"] + 1
        page.wait_for_function("() => document.querySelectorAll('#turn-order li.combatant').length === 3")
        first = page.locator("#turn-order li.combatant").first
        assert first.get_attribute("data-combatant-id") == renfort["id"]
        page.locator("#undo", has_text="Annuler : Renfort rejoint le combat").wait_for(timeout=15_000)
        theirs = lea.get(f"/v1/encounters/{eid}").json()  # the player never sees it
        assert renfort["id"] not in str(theirs) and len(theirs["combatants"]) == 2
        # Undo: the fight as it was
        page.locator("#undo").click()
        page.wait_for_function(
            "() => document.querySelectorAll('#turn-order li.combatant').length === 2", timeout=15_000
        )
        back = http.get(f"/v1/encounters/{eid}").json()
        assert [c["id"] for c in back["combatants"]] == [c["id"] for c in state["combatants"]]
        assert (back["order"], back["current"]) == (state["order"], state["current"])
        clean(page)
