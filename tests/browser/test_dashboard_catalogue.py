"""The dashboard builds its encounter action forms from the catalogue (`GET /v1/rulesets/{id}`,
`combat`; issue 23), not from openapi.json: a Worlds Awakening attack made in the page with table
dice (WA-C1), and not one request of the page for /openapi.json."""

from __future__ import annotations

from tests.browser.dash_support import campaign
from tests.browser.test_dashboard import clean, enter_dice, open_with_token
from tests.factories import wa_fighter

AXE = {"name": "hache", "stat": "FOR", "damage": "1d6"}


def test_wa_c1_an_attack_form_built_from_the_catalogue_works_without_openapi_json(live, pages):
    server = live.start()
    http, cid, gm = campaign(live, server, "worlds-awakening", "Éveil")
    hero = http.post(
        f"/v1/campaigns/{cid}/characters",
        json={"name": "Hero", "kind": "npc", "sheet": wa_fighter(dex=3, weapons=[AXE])},
    )
    goblin = http.post(f"/v1/campaigns/{cid}/characters", json={"name": "Goblin", "kind": "npc", "sheet": wa_fighter()})
    assert (hero.status_code, goblin.status_code) == (201, 201)
    r = http.post(
        f"/v1/campaigns/{cid}/encounters",
        json={
            "name": "Ruins",
            "combatants": [
                {"character_id": hero.json()["id"], "side": "heroes"},
                {"character_id": goblin.json()["id"], "side": "foes"},
            ],
        },
    )
    assert r.status_code == 201, r.text
    eid = r.json()["id"]
    ids = {c["name"]: c["id"] for c in r.json()["combatants"]}
    started = http.post(f"/v1/encounters/{eid}/start", json={"dice": []})  # WA-C4: 13 then 11, no tie
    assert started.status_code == 201, started.text
    assert started.json()["current"]["combatant_id"] == ids["Hero"]
    goblin_hp = goblin.json()["sheet"]["hp"]

    page = pages(viewport={"width": 1280, "height": 1000})
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    open_with_token(page, server.url, gm)
    page.wait_for_selector("#encounter-view[data-status=active]")

    catalogue = http.get("/v1/rulesets/worlds-awakening").json()["combat"]["actions"]
    shown = page.get_by_label("Action", exact=True).evaluate("s => [...s.options].map(o => o.value)")
    assert shown == ["attack", "heal", "damage", "condition"]  # the ruleset's actions first, then the GM's
    assert set(shown) == set(catalogue)
    page.get_by_label("Action", exact=True).select_option("attack")
    kinds = page.get_by_label("Type", exact=True).evaluate("s => [...s.options].map(o => o.textContent)")
    assert [k.lower() for k in kinds if k != "—"] == [
        "physique",
        "magique",
    ]  # the catalogue's attack `kind` enum, in French
    assert page.get_by_label("Cible", exact=True).evaluate("s => s.selectedOptions[0].textContent") == "Goblin"
    page.get_by_label("Arme", exact=True).select_option("hache")
    page.get_by_role("button", name="Agir avec les dés de table").click()
    # every die of the plan asked at once; the damage (on a hit) and bonus damage (on a critical) marked (WA-C1)
    page.locator(".dice-entry form.dice-plan").wait_for()
    assert page.locator(".dice-plan li.conditioned input").evaluate_all("i => i.map(x => x.dataset.purpose)") == [
        "damage",
        "bonus damage",
    ]
    assert enter_dice(page, {"attack": [15], "damage": [4]}) == ["attack", "damage", "bonus damage"]

    page.locator("#encounter-history li[data-type=attack]").wait_for()
    [done] = [a for a in http.get(f"/v1/encounters/{eid}/actions").json()["items"] if a["type"] == "attack"]
    assert [(d["die"], d["value"], d["purpose"]) for d in done["rolls"]] == [("d20", 15, "attack"), ("d6", 4, "damage")]
    assert (done["actor_id"], done["target_id"], done["provenance"]) == (ids["Hero"], ids["Goblin"], "table")
    state = http.get(f"/v1/encounters/{eid}").json()
    assert {c["name"]: c["resources"]["hp"]["value"] for c in state["combatants"]}["Goblin"] == goblin_hp - 4
    http.close()

    assert any(url.endswith("/v1/rulesets/worlds-awakening") for url in asked)
    assert [url for url in asked if "openapi" in url] == []
    clean(page)
