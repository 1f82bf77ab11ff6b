"""Issue 27 item 5: the last controls of the dashboard — an opposition (AS-T9) and a cooperation
(AS-T6) from the test panel, their forms built from the catalogue's `operations.schemas`, table dice
entered on the page; the answer is the API's log entry."""

from __future__ import annotations

from contextlib import closing

from tests.browser.dash_support import axe, campaign
from tests.browser.test_dashboard import clean, enter_dice, open_with_token
from tests.factories import as_fighter


def asgard_table(live, server):
    http, cid, gm = campaign(live, server, "asgard", "Ragnarök")
    sigrid = http.post(f"/v1/campaigns/{cid}/characters", json={"name": "Sigrid", "kind": "pc", "sheet": as_fighter()})
    bjorn = http.post(f"/v1/campaigns/{cid}/characters", json={"name": "Bjorn", "kind": "pc", "sheet": as_fighter()})
    assert sigrid.status_code == bjorn.status_code == 201, (sigrid.text, bjorn.text)
    return http, cid, gm, sigrid.json(), bjorn.json()


def side(page, form: str, legend: str):
    return page.locator(f"{form} fieldset", has=page.locator("legend", has_text=legend))


def logged(page, http, cid: str, kind: str):
    """The page's answer once shown, and the API's one log entry of `kind`, with the table dice it took."""
    result = page.locator(f"#ops-{kind}-result .outcome")
    result.wait_for(timeout=15_000)
    [entry] = [e for e in http.get(f"/v1/campaigns/{cid}/rolls").json()["items"] if e["kind"] == kind]
    assert [r["value"] for r in entry["rolls"]] == [6, 6, 5, 2, 2, 1]
    assert result.get_attribute("data-entry-id") == entry["id"]
    return result, entry


def close_after_the_log_shows(page, entry) -> None:
    page.locator(f"#log-list li.entry[data-entry-id='{entry['id']}']").wait_for(state="attached", timeout=15_000)
    page.get_by_role("button", name="Fermer").click()
    page.locator("dialog").wait_for(state="detached")
    clean(page)


def test_issue27_item5_as_t9_as_t6_opposed_and_group_tests_from_the_test_panel(live, pages):
    server = live.start()
    http, cid, gm, sigrid, bjorn = asgard_table(live, server)
    page = pages(viewport={"width": 1280, "height": 1000})
    with closing(http):
        schemas = http.get("/v1/rulesets/asgard").json()["operations"]["schemas"]
        assert {"opposed", "group"} <= set(schemas)
        open_with_token(page, server.url, gm)
        # AS-T9: Sigrid's combat against Bjorn's defense, table dice
        page.get_by_role("button", name="Test d'opposition").click()
        opposed = page.locator("dialog #ops-opposed")
        opposed.get_by_role("heading", name="Test d'opposition").wait_for()
        assert axe(page, context="dialog") == []
        acts, opposes = side(page, "#ops-opposed", "Qui agit"), side(page, "#ops-opposed", "Qui s'oppose")
        acts.get_by_label("Personnage").select_option(label="Sigrid")
        acts.get_by_label("Compétence", exact=True).select_option("combat")
        opposes.get_by_label("Personnage").select_option(label="Bjorn")
        opposes.get_by_label("Compétence", exact=True).select_option("defense")
        opposed.get_by_role("button", name="Saisir les dés de table").click()
        assert enter_dice(page, {"test": [6, 6, 5, 2, 2, 1]}) == ["test"] * 6  # a's 3d6, then b's
        result, entry = logged(page, http, cid, "opposed")
        assert entry["winner_character_id"] == sigrid["id"]
        assert result.text_content() == f"opposition : Sigrid l'emporte (marge : {entry['margin']})"
        close_after_the_log_shows(page, entry)


def test_issue27_item5_as_t6_a_cooperation_from_the_test_panel_is_the_apis_log_entry(live, pages):
    server = live.start()
    http, cid, gm, sigrid, bjorn = asgard_table(live, server)
    page = pages(viewport={"width": 1280, "height": 1000})
    with closing(http):
        open_with_token(page, server.url, gm)
        page.get_by_role("button", name="Test de groupe").click()
        group = page.locator("dialog #ops-group")
        group.get_by_role("heading", name="Test de groupe").wait_for()
        group.get_by_label("Compétence", exact=True).first.select_option("combat")
        group.get_by_label("Difficulté").select_option(label="moyen")
        add = group.get_by_role("button", name="Ajouter à Participants")
        for who in ("Sigrid", "Bjorn"):
            add.click()
            group.locator("fieldset fieldset").last.get_by_label("Personnage").select_option(label=who)
        assert axe(page, context="dialog") == []
        group.get_by_role("button", name="Saisir les dés de table").click()
        # AS-T6: Sigrid 6+6+5+combat 6 = 23 leads; Bjorn 2+2+1+6 = 11 (between 10 and 15: no adjustment)
        enter_dice(page, {"test": [6, 6, 5, 2, 2, 1]})
        result, entry = logged(page, http, cid, "group")
        assert entry["leader_character_id"] == sigrid["id"] and entry["success"] is True
        assert [p["character_id"] for p in entry["participants"]] == [sigrid["id"], bjorn["id"]]
        assert result.text_content().startswith("groupe : Sigrid mène : ")
        close_after_the_log_shows(page, entry)


def test_issue27_item5_as_c5_a_combatant_mal_en_point_shows_it_on_its_row(live, pages):
    server = live.start()
    http, cid, gm, sigrid, bjorn = asgard_table(live, server)
    page = pages(viewport={"width": 1280, "height": 1000})
    with closing(http):
        r = http.post(
            f"/v1/campaigns/{cid}/encounters",
            json={
                "name": "Le gué",
                "combatants": [
                    {"character_id": sigrid["id"], "side": "Ases"},
                    {"character_id": bjorn["id"], "side": "Vanes"},
                ],
            },
        )
        assert r.status_code == 201, r.text
        eid = r.json()["id"]
        assert http.post(f"/v1/encounters/{eid}/start", json={"seed": 1}).status_code == 201
        open_with_token(page, server.url, gm)
        started = http.get(f"/v1/encounters/{eid}").json()
        page.wait_for_selector(f"#encounter-view[data-status=active][data-version='{started['version']}']")
        row_of = next(c for c in started["combatants"] if c["name"] == "Bjorn")
        # AS-C5: the GM's damage brings Bjorn to 0; resistance 1+1+2 fails (dying in 1 round), volonte 1+2+1
        # fails (unconscious 1+2 = 3 rounds)
        r = http.post(
            f"/v1/encounters/{eid}/actions",
            json={"type": "damage", "target_id": row_of["id"], "amount": 20, "dice": [1, 1, 2, 1, 1, 2, 1, 1, 2]},
        )
        assert r.status_code == 201, r.text
        assert [s["key"] for s in r.json()["steps"]][:2] == ["damage", "mal_en_point"]
        after = http.get(f"/v1/encounters/{eid}").json()
        page.wait_for_selector(f"#encounter-view[data-version='{after['version']}']", timeout=15_000)
        bjorn_now = next(c for c in after["combatants"] if c["id"] == row_of["id"])
        assert bjorn_now["down"] is True
        assert {c["name"]: c["rounds_left"] for c in bjorn_now["conditions"]} == {"dying": 1, "unconscious": 3}
        row = page.locator(f"#turn-order li[data-combatant-id='{row_of['id']}']")
        row.locator(".badge.down", has_text="hors de combat").wait_for()
        assert row.locator(".chip.condition[data-condition=dying]").text_content() == "mourant (1)"
        assert row.locator(".chip.condition[data-condition=unconscious]").text_content() == "inconscient (3)"
        assert row.locator("[role=meter][data-resource=vitality]").get_attribute("aria-valuenow") == "0"
        page.locator(f"#encounter-history li[data-action-id='{r.json()['id']}']", has_text="mal en point").wait_for()
        clean(page)
