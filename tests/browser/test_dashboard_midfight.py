"""Issue 27 item 5: the GM adds a combatant to a running fight from the tracker's add control (the
API places it by the ruleset's initiative rule, GC-O1: here the GM's initiative replaces agilité);
the current combatant stays current, a hidden one stays out of the player's view, and Undo names the
joining and takes it back."""

from __future__ import annotations

from contextlib import closing

from tests.browser.dash_support import add_and_read, axe, fight, table
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
        page.wait_for_selector("html[data-synced=true]")  # the reads after the stream opened are done
        adder = page.locator("#encounter-adder")
        assert axe(page, context="#encounter-adder") == []
        adder.get_by_label("Combattant à ajouter").select_option(label="Renfort")
        adder.get_by_label("Initiative (MJ)").fill("99")
        adder.get_by_label("caché").check()
        # a character made meanwhile, then the fight redrawn (renamed): the form's list changes, and what
        # the GM typed stays (a redraw used to build the form anew, empty: the initiative rolled instead)
        r = http.post(
            f"/v1/campaigns/{s['cid']}/characters", json={"name": "Éclaireur", "kind": "npc", "sheet": GOBLIN_SHEET}
        )
        assert r.status_code == 201, r.text
        r = http.patch(f"/v1/encounters/{eid}", json={"name": "Embuscade au gué"})
        assert r.status_code == 200, r.text
        state = r.json()
        page.wait_for_function(
            """() => [...document.querySelectorAll('#encounter-adder select[name=add-who] option')]
                .some(o => o.textContent === 'Éclaireur')""",
            timeout=15_000,
        )
        assert adder.get_by_label("Initiative (MJ)").input_value() == "99"
        assert adder.get_by_label("caché").is_checked()
        assert adder.locator("select[name=add-who] option:checked").text_content() == "Renfort"
        after, renfort = add_and_read(page, adder, http, eid, state["version"], "Renfort")
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


def test_issue27_undoing_a_join_with_count_drops_the_npc_copies_from_both_pages(live, pages):
    """Two copies of an NPC players may see join the running fight (`count`); the GM's Undo deletes
    them: the GM's and the player's pages drop their cards and their rows (the revert's
    `character.deleted` and `encounter.reverted`), as the API has it."""
    server = live.start()
    s = table(live, server)
    gm, player = pages(viewport={"width": 1280, "height": 900}), pages()
    with closing(s["http"]) as http:
        state = fight(s)
        eid = state["id"]
        r = http.post(
            f"/v1/campaigns/{s['cid']}/characters",
            json={"name": "Renfort", "kind": "npc", "sheet": GOBLIN_SHEET, "player_access": "observer"},
        )
        assert r.status_code == 201, r.text
        open_with_token(gm, server.url, s["gm"])
        open_with_token(player, server.url, s["player"]["token"])
        joined = http.post(
            f"/v1/encounters/{eid}/combatants", json={"character_id": r.json()["id"], "count": 2, "initiative": 5}
        )
        assert joined.status_code == 201, joined.text
        copies = [c["character_id"] for c in joined.json()["combatants"] if c["name"].startswith("Renfort ")]
        assert len(copies) == 2
        cards = " , ".join(f"article.character[data-character-id='{c}']" for c in copies)
        for page in (gm, player):
            page.wait_for_function(
                "n => document.querySelectorAll('#turn-order li.combatant').length === n", arg=4, timeout=15_000
            )
            page.wait_for_function("sel => document.querySelectorAll(sel).length === 2", arg=cards, timeout=15_000)
        gm.locator("#undo", has_text="Annuler : Renfort 1 rejoint le combat").wait_for(timeout=15_000)
        gm.locator("#undo").click()
        for page in (gm, player):
            page.wait_for_function(
                "n => document.querySelectorAll('#turn-order li.combatant').length === n", arg=2, timeout=15_000
            )
            page.wait_for_function("sel => document.querySelectorAll(sel).length === 0", arg=cards, timeout=15_000)
        names = sorted(c["name"] for c in http.get(f"/v1/campaigns/{s['cid']}/characters").json()["items"])
        assert names == ["Aiko", "Renfort", "Seigneur Vorath"]
        for character_id in copies:
            assert http.get(f"/v1/characters/{character_id}").status_code == 404
        clean(gm)
        clean(player)
