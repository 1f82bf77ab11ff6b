"""The action form and the dice plan (issue 26 item 4, issue 27 items 2 and 9), in Debian's Chromium
against a real uvicorn: the exact `hit` and `down` odds of `POST …/actions/plan` before the Act button,
following the target chosen; the table dice asked all at once in the plan's order, a conditioned die
sent only when the API asks for it; nothing about odds when the plan has none; the targets in reach
(`GET …/choices`) named under the target and marked on the grid."""

from __future__ import annotations

import json
import re
from contextlib import closing

from tests.browser.dash_support import axe, campaign
from tests.browser.test_dashboard import clean, open_with_token
from tests.factories import wa_fighter

AXE = {"name": "hache", "stat": "FOR", "damage": "1d4"}  # d20 × d4 × d4: few enough for exact odds today


def wa_fight(live, server) -> dict:
    """Hero (an axe, 1d4) against Goblin (3 HP) and Orc (1 HP): Hero's turn first (WA-C4: 13, 12, 11)."""
    http, cid, gm = campaign(live, server, "worlds-awakening", "Éveil")
    made = {}
    for name, sheet in (
        ("Hero", wa_fighter(dex=3, weapons=[AXE])),
        ("Goblin", wa_fighter(dex=1, hp=3)),
        ("Orc", wa_fighter(dex=2, hp=1)),
    ):
        r = http.post(f"/v1/campaigns/{cid}/characters", json={"name": name, "kind": "npc", "sheet": sheet})
        assert r.status_code == 201, r.text
        made[name] = r.json()["id"]
    r = http.post(
        f"/v1/campaigns/{cid}/encounters",
        json={
            "name": "Ruines",
            "combatants": [
                {"character_id": made["Hero"], "side": "héros"},
                {"character_id": made["Goblin"], "side": "ennemis"},
                {"character_id": made["Orc"], "side": "ennemis"},
            ],
        },
    )
    assert r.status_code == 201, r.text
    eid = r.json()["id"]
    ids = {c["name"]: c["id"] for c in r.json()["combatants"]}
    started = http.post(f"/v1/encounters/{eid}/start", json={"dice": []})
    assert started.status_code == 201, started.text
    assert started.json()["current"]["combatant_id"] == ids["Hero"]
    return {"http": http, "gm": gm, "eid": eid, "ids": ids}


def odds_shown(page, target: str) -> dict:
    """The odds the form shows once the plan of an attack on `target` is answered: hit/down → fraction."""
    page.wait_for_selector(f"#action-odds[data-state=ready][data-target='{target}']", timeout=15_000)
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#action-odds [data-probability]')]
        .map(s => [s.className.replace('odds-', ''), s.dataset.probability]))""")


def test_issue26_item4_wa_c1_exact_odds_before_act_follow_the_target_and_dice_asked_at_once(live, pages):
    server = live.start()
    w = wa_fight(live, server)
    http, eid, ids = w["http"], w["eid"], w["ids"]
    page = pages(viewport={"width": 1280, "height": 1000})
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and r.url.endswith("/actions") else None)
    with closing(http):
        open_with_token(page, server.url, w["gm"])
        page.wait_for_selector("#encounter-view[data-status=active]")
        page.get_by_label("Action", exact=True).select_option("attack")
        page.get_by_label("Arme", exact=True).select_option("hache")

        def plan(target: str) -> dict:
            body = {"type": "attack", "actor_id": ids["Hero"], "target_id": target, "weapon": "hache"}
            r = http.post(f"/v1/encounters/{eid}/actions/plan", json=body)
            assert r.status_code == 200, r.text
            return r.json()

        # the form's odds are the plan's, exactly (a fraction, not a rounded figure), for the target chosen
        cible = page.get_by_label("Cible", exact=True)
        cible.select_option(ids["Goblin"])
        goblin = plan(ids["Goblin"])["odds"]
        assert odds_shown(page, ids["Goblin"]) == {
            "hit": goblin["hit"]["probability"],
            "down": goblin["down"]["probability"],
        }
        assert 0 < goblin["down"]["p"] < goblin["hit"]["p"] < 1  # 3 HP: a hit downs it only on a 3+ (WA-C1, WA-C5)
        text = page.locator("#action-odds").inner_text().replace("\u202f", " ").replace("\u00a0", " ")
        assert text.startswith("Toucher : ") and "Mettre hors de combat : " in text and "%" in text, text
        # the odds come before the Act button
        odds_box, act_box = (
            page.locator("#action-odds").bounding_box(),
            page.get_by_role("button", name="Agir", exact=True).bounding_box(),
        )
        assert odds_box and act_box and odds_box["y"] < act_box["y"]
        cible.select_option(ids["Orc"])
        orc = plan(ids["Orc"])
        assert odds_shown(page, ids["Orc"]) == {
            "hit": orc["odds"]["hit"]["probability"],
            "down": orc["odds"]["down"]["probability"],
        }
        assert orc["odds"]["down"] == orc["odds"]["hit"] != goblin["down"]  # 1 HP: every hit downs it
        assert axe(page, context="#encounter") == []

        # table dice: every die of the plan at once, in its order, the conditioned ones marked
        page.get_by_role("button", name="Agir avec les dés de table").click()
        page.locator(".dice-entry form.dice-plan").wait_for()
        inputs = page.locator(".dice-plan input")
        shown = inputs.evaluate_all(
            "i => i.map(x => [x.dataset.die, x.dataset.purpose, Boolean(x.closest('li.conditioned'))])"
        )
        assert shown == [[d["die"], d["purpose"], "condition" in d] for d in orc["dice"]]
        assert [d["purpose"] for d in orc["dice"]] == ["attack", "damage", "bonus damage"]
        assert page.get_by_label("d4 pour dégâts (Hero), si nécessaire", exact=True).count() == 1
        assert axe(page, context="#encounter") == []
        # a conditioned die typed though the table did not need it (no critical): never sent
        values = {"attack": "17", "damage": "4", "bonus damage": "3"}
        for i in range(inputs.count()):
            inputs.nth(i).fill(values[inputs.nth(i).get_attribute("data-purpose")])
        posts.clear()
        page.get_by_role("button", name="Envoyer les dés").click()
        page.locator("#encounter-history li[data-type=attack]").wait_for(timeout=15_000)
        [done] = [a for a in http.get(f"/v1/encounters/{eid}/actions").json()["items"] if a["type"] == "attack"]
        assert [(d["die"], d["value"], d["purpose"]) for d in done["rolls"]] == [
            ("d20", 17, "attack"),
            ("d4", 4, "damage"),
        ]
        assert done["provenance"] == "table" and done["target_id"] == ids["Orc"]
        assert len(posts) == 2  # the attack die, then the damage the API asked for: not one request per die
        assert page.locator(".dice-entry li.asked").count() == 0  # nothing asked one by one
        clean(page)


def test_issue27_item9_no_odds_in_the_plan_nothing_said_about_odds(live, pages):
    server = live.start()
    w = wa_fight(live, server)
    page = pages()
    stripped: list[str] = []

    def without_odds(route) -> None:  # a ruleset whose plan has no exact odds (yet)
        response = route.fetch()
        body = response.json()
        body.pop("odds", None)
        stripped.append(route.request.url)
        route.fulfill(response=response, body=json.dumps(body))

    page.route(re.compile(r".*/actions/plan$"), without_odds)
    with closing(w["http"]):
        open_with_token(page, server.url, w["gm"])
        page.wait_for_selector("#encounter-view[data-status=active]")
        page.get_by_label("Action", exact=True).select_option("attack")
        page.get_by_label("Arme", exact=True).select_option("hache")
        page.get_by_label("Cible", exact=True).select_option(w["ids"]["Orc"])
        page.wait_for_selector(
            f"#action-odds[data-state=none][data-target='{w['ids']['Orc']}']", state="attached", timeout=15_000
        )
        assert stripped
        assert page.locator("#action-odds").is_hidden()
        assert page.locator("#action-odds").inner_text() == ""  # no placeholder
        assert "%" not in page.locator("form[aria-labelledby=action-title]").inner_text()
        clean(page)


def test_issue27_item2_targets_in_reach_from_choices_on_the_form_and_the_grid(live, pages):
    server = live.start()
    w = wa_fight(live, server)
    http, eid, ids = w["http"], w["eid"], w["ids"]
    page = pages(viewport={"width": 1280, "height": 1000})
    with closing(http):
        for name, (x, y) in (("Hero", (1, 1)), ("Goblin", (4, 1)), ("Orc", (6, 2))):
            r = http.patch(f"/v1/encounters/{eid}/combatants/{ids[name]}", json={"position": {"x": x, "y": y}})
            assert r.status_code == 200, r.text
        version = http.get(f"/v1/encounters/{eid}").json()["version"]
        open_with_token(page, server.url, w["gm"])
        page.wait_for_selector(f"#encounter-view[data-version='{version}']")
        page.get_by_label("Action", exact=True).select_option("attack")

        def attack_choice(of: str) -> dict:
            r = http.get(f"/v1/encounters/{eid}/choices", params={"combatant_id": of})
            assert r.status_code == 200, r.text
            return next(a for a in r.json()["actions"] if a["type"] == "attack")

        def reach(of: str) -> list[str]:
            return attack_choice(of)["targets"]

        def marked() -> list[str]:
            return page.locator("#grid button.in-reach").evaluate_all("b => b.map(x => x.title)")

        # the API's targets in reach for the combatant whose turn it is, named under the target, marked on the grid
        assert sorted(reach(ids["Hero"])) == sorted([ids["Goblin"], ids["Orc"]])
        page.wait_for_selector(f"#encounter-view[data-reach^='{eid}:{ids['Hero']}:']", state="attached", timeout=15_000)
        names = page.locator(".reach-hint[data-field=target_id]").inner_text().removeprefix("À portée : ").split(", ")
        assert sorted(names) == ["Goblin", "Orc"]
        assert sorted(marked()) == ["Goblin", "Orc"]
        cell = page.locator("#grid button[data-x='4'][data-y='1']")
        assert (cell.get_attribute("aria-label") or "").endswith(", à portée")
        assert axe(page, context="#encounter") == []
        # no weapon on Goblin's sheet: its attack `needs` a damage expression, never a reason to refuse it (the
        # GM acts for it): its targets are named and marked as any other's
        goblin = attack_choice(ids["Goblin"])
        assert goblin["allowed"] and goblin["needs"] == ["damage"], goblin
        assert sorted(goblin["targets"]) == sorted([ids["Hero"], ids["Orc"]])
        page.get_by_label("Acteur").select_option(ids["Goblin"])
        page.wait_for_selector(
            f"#encounter-view[data-reach^='{eid}:{ids['Goblin']}:']", state="attached", timeout=15_000
        )
        assert sorted(marked()) == ["Hero", "Orc"]
        # a combatant down (Orc, 1 HP, the GM's damage): the API refuses its attack, so no target is in reach
        r = http.post(f"/v1/encounters/{eid}/actions", json={"type": "damage", "target_id": ids["Orc"], "amount": 1})
        assert r.status_code == 201, r.text
        version = http.get(f"/v1/encounters/{eid}").json()["version"]
        page.wait_for_selector(f"#encounter-view[data-version='{version}']", timeout=15_000)
        assert attack_choice(ids["Orc"]) == {**attack_choice(ids["Orc"]), "allowed": False, "targets": []}
        page.get_by_label("Acteur").select_option(ids["Orc"])
        page.wait_for_selector(f"#encounter-view[data-reach^='{eid}:{ids['Orc']}:']", state="attached", timeout=15_000)
        assert page.locator(".reach-hint[data-field=target_id]").is_hidden()
        assert marked() == []
        # back to Hero: marked again
        page.get_by_label("Acteur").select_option(ids["Hero"])
        page.wait_for_selector(f"#encounter-view[data-reach^='{eid}:{ids['Hero']}:']", state="attached", timeout=15_000)
        page.locator(".reach-hint[data-field=target_id]").wait_for()
        assert sorted(marked()) == sorted(n for n, i in ids.items() if i in reach(ids["Hero"]))
        clean(page)
