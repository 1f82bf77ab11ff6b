"""Issue 27's last dashboard controls: a character's rule actions (AS-C6 first aid, AS-H4 cancel
damage), their forms built from the catalogue's `operations.character_actions`, and the AS-T6
cooperation of an Asgard attack ticked by name in the fight form (the tick boxes of `group`)."""

from __future__ import annotations

import json
from contextlib import closing

from tests.browser.dash_support import axe, campaign
from tests.browser.test_dashboard import clean, enter_dice, log_ids, open_with_token
from tests.factories import as_fighter

EPEE = {"name": "epee", "damage_dice": 2, "ranged": False}


def _card_pools(page, character_id: str) -> dict[str, int]:
    return page.evaluate(
        """id => Object.fromEntries([...document.querySelectorAll(
            `article.character[data-character-id='${id}'] [role=meter]`)].map(m =>
            [m.dataset.resource, Number(m.getAttribute('aria-valuenow'))]))""",
        character_id,
    )


def _card_follows(page, http, character_id: str) -> dict:
    """The card shows the API's sheet (its vitality bar and its heroism): returns that sheet."""
    sheet = http.get(f"/v1/characters/{character_id}").json()["sheet"]
    page.wait_for_function(
        """([id, vitality, heroism]) => {
            const card = document.querySelector(`article.character[data-character-id='${id}']`);
            const bar = card?.querySelector('[role=meter][data-resource=vitality]');
            const points = [...(card?.querySelectorAll('dl.points div') || [])].find(d => d.textContent.startsWith('héroïsme'));
            return bar?.getAttribute('aria-valuenow') === String(vitality) && points?.textContent === `héroïsme${heroism}`;
        }""",
        arg=[character_id, sheet["vitality"], sheet["heroism"]],
        timeout=15_000,
    )
    assert _card_pools(page, character_id)["vitality"] == sheet["vitality"]
    return sheet


def test_issue27_as_c6_as_h4_first_aid_and_cancel_damage_from_the_card(live, pages):
    """The GM opens Sigrid's rule actions (mal en point: vitality 0): first aid by Bjorn (soins 5,
    difficulty 10) with the table's 3d6 [6, 5, 4] (20: success, AS-C6 +1 vitality, no longer dying),
    then, after the GM's blow of 1 (through the API), a cancel damage of 3 already applied (AS-H4:
    2 heroism, exactly what the blow took given back: 1, never the 3 named); each result is the
    API's log entry, the card and the log follow."""
    server = live.start()
    http, cid, gm = campaign(live, server, "asgard", "Ragnarök")
    page = pages(viewport={"width": 1280, "height": 1000})
    with closing(http):
        sigrid = http.post(
            f"/v1/campaigns/{cid}/characters",
            json={"name": "Sigrid", "kind": "pc", "sheet": as_fighter(vitality=0, heroism=5)},
        ).json()
        bjorn = http.post(
            f"/v1/campaigns/{cid}/characters", json={"name": "Bjorn", "kind": "pc", "sheet": as_fighter()}
        )
        assert bjorn.status_code == 201, bjorn.text
        schemas = http.get("/v1/rulesets/asgard").json()["operations"]["character_actions"]
        assert {"first_aid", "cancel_damage"} <= set(schemas)
        open_with_token(page, server.url, gm)
        page.get_by_role("button", name="Actions de règle : Sigrid").click()
        dialog = page.locator("dialog")
        dialog.get_by_role("heading", name="Sigrid : action de règle").wait_for()
        assert axe(page, context="dialog") == []
        dialog.get_by_label("Action", exact=True).select_option(label="Premiers soins")
        assert dialog.get_by_label("Seed").count() == 0 and dialog.get_by_label("Dice").count() == 0
        dialog.get_by_label("Soins du soigneur").fill("5")
        dialog.get_by_label("Soigneur", exact=True).select_option(label="Bjorn")
        dialog.get_by_label("Seuil").fill("10")
        dialog.get_by_role("button", name="Saisir les dés de table").click()
        assert enter_dice(page, {"soins": [6, 5, 4]}) == ["soins"] * 3
        result = dialog.locator("#character-action-result .outcome")
        result.wait_for(timeout=15_000)
        [aid] = [e for e in http.get(f"/v1/campaigns/{cid}/rolls").json()["items"] if e["type"] == "first_aid"]
        assert result.get_attribute("data-entry-id") == aid["id"]
        assert [r["value"] for r in aid["rolls"]] == [6, 5, 4] and aid["provenance"] == "table"
        assert (aid["healer_id"], aid["test"]["success"], aid["effects"]["vitality"]) == (
            bjorn.json()["id"],
            True,
            {"before": 0, "after": 1},
        )
        assert "Sigrid" in result.inner_text() and "premiers soins" in result.inner_text()
        after_aid = _card_follows(page, http, sigrid["id"])
        assert (after_aid["vitality"], after_aid["condition"]["dying"]) == (1, False)
        # AS-H4: another action of the same dialog, the server's (no dice), on the blow just taken
        first = http.post(f"/v1/characters/{sigrid['id']}/actions", json={"type": "damage", "amount": 1})
        assert first.status_code == 201, first.text
        assert first.json()["effects"]["vitality"] == {"before": 1, "after": 0}
        dialog.get_by_label("Action", exact=True).select_option(label="Annuler des dégâts")
        dialog.get_by_label("Dégâts", exact=True).fill("3")
        dialog.get_by_label("Déjà appliqués").check()
        dialog.get_by_role("button", name="Appliquer").click()
        page.wait_for_function(
            "id => document.querySelector('#character-action-result .outcome')?.dataset.entryId"
            " && document.querySelector('#character-action-result .outcome').dataset.entryId !== id",
            arg=aid["id"],
            timeout=15_000,
        )
        entries = http.get(f"/v1/campaigns/{cid}/rolls").json()["items"]
        [cancel] = [e for e in entries if e["type"] == "cancel_damage"]
        assert result.get_attribute("data-entry-id") == cancel["id"]
        assert (cancel["damage"], cancel["already_applied"], cancel["lost"], cancel["effects"]["heroism"]) == (
            3,
            True,
            1,
            {"before": 5, "after": 3},
        )
        after = _card_follows(page, http, sigrid["id"])
        assert (after["vitality"], after["heroism"]) == (1, 3)
        page.get_by_role("button", name="Fermer").click()
        page.locator("dialog").wait_for(state="detached")
        # AS-H4 naming the blow: the GM's damage of 2 (through the API: it takes the 1 left), then
        # cancelled by its log entry, picked by its line in a reopened dialog: exactly what it took is
        # given back
        blow = http.post(f"/v1/characters/{sigrid['id']}/actions", json={"type": "damage", "amount": 2})
        assert blow.status_code == 201, blow.text
        assert _card_follows(page, http, sigrid["id"])["vitality"] == 0
        page.get_by_role("button", name="Actions de règle : Sigrid").click()
        dialog.get_by_label("Action", exact=True).select_option(label="Annuler des dégâts")
        picker = dialog.get_by_label("Le coup (entrée du journal)")
        page.wait_for_selector("dialog select[name=damage_id][data-state=ready]")
        options = picker.locator("option")
        assert [options.nth(i).get_attribute("value") for i in range(options.count())] == [
            "",
            blow.json()["id"],
            first.json()["id"],
        ]
        assert options.nth(1).text_content().endswith("(−1)")
        picker.select_option(blow.json()["id"])
        dialog.get_by_label("Dégâts", exact=True).fill("2")
        dialog.get_by_role("button", name="Appliquer").click()
        result.wait_for(timeout=15_000)
        entries = http.get(f"/v1/campaigns/{cid}/rolls").json()["items"]
        [named, _] = [e for e in entries if e["type"] == "cancel_damage"]
        assert result.get_attribute("data-entry-id") == named["id"]
        assert (named["damage_id"], named["lost"]) == (blow.json()["id"], 1)
        after = _card_follows(page, http, sigrid["id"])
        assert (after["vitality"], after["heroism"]) == (1, 1)
        page.get_by_role("button", name="Fermer").click()
        page.locator("dialog").wait_for(state="detached")
        page.wait_for_function("n => document.querySelectorAll('#log-list li.entry').length === n", arg=len(entries))
        assert log_ids(page) == [e["id"] for e in entries]
        clean(page)


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
        boxes = cooperating.locator("input[type=checkbox]")
        shown = [
            boxes.nth(i).evaluate("b => b.labels[0].textContent")
            for i in range(boxes.count())
            if boxes.nth(i).is_visible()
        ]
        assert shown == [
            "Bjorn"
        ]  # one tick box per other combatant of her side, by name (not the actor, not the troll)
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
