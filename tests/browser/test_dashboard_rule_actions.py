"""Issue 27's last dashboard controls: the AS-T6 cooperation of an Asgard attack ticked by name in
the fight form (the tick boxes of `group`)."""

from __future__ import annotations

import json
from contextlib import closing

from tests.browser.dash_support import campaign
from tests.browser.test_dashboard import clean, enter_dice, open_with_token
from tests.factories import as_fighter

EPEE = {"name": "epee", "damage_dice": 2, "ranged": False}


def test_issue27_as_t6_cooperating_combatants_ticked_by_name_in_the_attack_form(live, pages):
    """The GM's Asgard attack: Sigrid attacks the troll, Bjorn ticked by name as cooperating (AS-T6),
    the table's dice; the API's action has Bjorn's cooperating attack test and the shared turn."""
    server = live.start()
    http, cid, gm = campaign(live, server, "asgard", "Ragnarök")
    page = pages(viewport={"width": 1280, "height": 1000})
    with closing(http):
        made = {
            name: http.post(f"/v1/campaigns/{cid}/characters", json={"name": name, "kind": kind, "sheet": sheet}).json()
            for name, kind, sheet in (
                ("Sigrid", "pc", as_fighter(perception=5, weapons=[EPEE])),
                ("Bjorn", "pc", as_fighter(perception=3, weapons=[EPEE])),
                ("Troll", "npc", as_fighter(perception=0, vitality=30, vitality_max=30, weapons=[EPEE])),
            )
        }
        r = http.post(
            f"/v1/campaigns/{cid}/encounters",
            json={
                "name": "Le gué",
                "options": {"hp_visibility": "exact", "reveal_on_turn": False},
                "combatants": [
                    {"character_id": made["Sigrid"]["id"], "side": "héros", "initiative": 15},
                    {"character_id": made["Bjorn"]["id"], "side": "héros", "initiative": 12},
                    {"character_id": made["Troll"]["id"], "side": "ennemis", "initiative": 5},
                ],
            },
        )
        assert r.status_code == 201, r.text
        eid = r.json()["id"]
        n = {c["name"]: c["id"] for c in r.json()["combatants"]}
        started = http.post(f"/v1/encounters/{eid}/start", json={"seed": 1})
        assert started.status_code == 201, started.text
        assert started.json()["current"]["combatant_id"] == n["Sigrid"]
        open_with_token(page, server.url, gm)
        page.wait_for_selector(f"#encounter-view[data-version='{started.json()['version']}']")
        page.get_by_label("Action", exact=True).select_option("attack")
        page.get_by_label("Cible", exact=True).select_option(label="Troll")
        page.get_by_label("Arme", exact=True).select_option("epee")
        cooperating = page.locator("fieldset", has=page.locator("legend", has_text="En coopération"))
        assert cooperating.locator("input[type=checkbox]").count() == 3  # one tick box per combatant, by name
        assert cooperating.get_by_role("textbox").count() == 0  # no longer a free text box of ids
        cooperating.get_by_label("Bjorn", exact=True).check()
        page.get_by_role("button", name="Agir avec les dés de table").click()
        # Sigrid 5+5+5 + 6, Bjorn 4+4+4 + 6 (AS-T6: Sigrid leads), the troll's defense 1+1+1 + 4
        asked = enter_dice(page, {"attack": [5, 5, 5, 4, 4, 4], "defense": [1, 1, 1], "damage": [3, 3, 3, 3, 3]})
        assert asked[:9] == ["attack"] * 6 + ["defense"] * 3, asked
        page.wait_for_function(
            "eid => document.querySelector('#encounter-history li[data-type=attack]')", arg=eid, timeout=15_000
        )
        [attack] = [a for a in http.get(f"/v1/encounters/{eid}/actions").json()["items"] if a["type"] == "attack"]
        cooperated = [s for s in attack["steps"] if s["key"] == "cooperating_attack_test"]
        assert [s["combatant_id"] for s in cooperated] == [n["Bjorn"]]
        [shared] = [s for s in attack["steps"] if s["key"] == "one_shared_turn_the_others_own_turns_of_this_round_pass"]
        assert shared["members"] == [n["Bjorn"]]
        assert attack["actor_id"] == n["Sigrid"] and attack["target_id"] == n["Troll"]
        page.locator(f"#encounter-history li[data-action-id='{attack['id']}']").wait_for()
        assert json.dumps(attack["steps"]).count(n["Bjorn"]) >= 2
        clean(page)
