"""axe-core (vendored from its npm package, tests/browser/vendor/README.md) on every screen of the
dashboard (issue 27): 0 serious or critical violations — the first screen, the GM's dashboard, the
character form, the encounter builder, a fight in setup, the GM's fight with a dice prompt, the player's phone in a
fight, the table screen; then the GM's page, the phone and the TV with someone down, someone hidden,
revealed again, the fight ended. Each state in French and in English (whose words are other and
longer): skipping some in English would save little, the run's time being mostly its pages' opening."""

from __future__ import annotations

from contextlib import closing

import pytest

from tests.browser.dash_support import at_phone_widths, axe, fight, no_overflow, table
from tests.browser.test_dashboard import clean, open_with_token, snap, speaking

WORDS = {
    "fr": {
        "new character": "Nouveau personnage",
        "cancel": "Annuler",
        "new encounter": "Nouvelle rencontre",
        "damage": "Dégâts",
        "act with dice": "Agir avec les dés de table",
        "rules": "Afficher les règles appliquées",
        "role": "Joueur : Léa",
        "down": "hors de combat",
        "hidden": "caché",
        "hide": "Cacher Seigneur Vorath aux joueurs",
        "tray": "Les derniers jets",
    },
    "en": {
        "new character": "New character",
        "cancel": "Cancel",
        "new encounter": "New encounter",
        "damage": "Damage",
        "act with dice": "Act with table dice",
        "rules": "Show the rules applied",
        "role": "Player: Léa",
        "down": "down",
        "hidden": "hidden",
        "hide": "Hide Seigneur Vorath from the players",
        "tray": "The latest rolls",
    },
}


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_issue27_axe_finds_no_serious_or_critical_violation_on_any_screen(live, pages, lang):
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    found: dict[str, list] = {}
    page = speaking(pages(viewport={"width": 1280, "height": 900}), lang)
    page.goto(f"{server.url}/")
    page.wait_for_selector(f"html[lang={lang}] #lang-toggle")
    page.locator("select option").first.wait_for(state="attached")
    found["login"] = axe(page)
    at_phone_widths(page)  # each state also fits a phone's width (360 and 390 px): nothing scrolls sideways

    with closing(s["http"]) as http:
        http.patch(f"/v1/characters/{s['vorath']['id']}", json={"player_access": "limited"})
        open_with_token(page, server.url, s["gm"], lang)
        found["gm"] = axe(page)
        at_phone_widths(page)

        page.get_by_role("button", name=words["new character"]).click()
        page.locator("dialog").wait_for()
        found["character form"] = axe(page)
        at_phone_widths(page)
        page.locator("dialog").get_by_role("button", name=words["cancel"]).click()

        page.get_by_role("button", name=words["new encounter"]).click()
        page.locator("dialog").wait_for()
        found["encounter builder"] = axe(page)
        at_phone_widths(page)
        page.locator("dialog").get_by_role("button", name=words["cancel"]).click()

        r = http.post(
            f"/v1/campaigns/{s['cid']}/encounters",
            json={"name": "Préparation", "combatants": [{"character_id": s["aiko"]["id"]}]},
        )
        assert r.status_code == 201, r.text
        page.wait_for_selector("#encounter-view[data-status=setup]", timeout=15_000)
        found["gm fight setup"] = axe(page)
        at_phone_widths(page)

        encounter = fight(s)
        page.locator("select[name=encounter]").select_option(encounter["id"])
        page.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']", timeout=15_000)
        page.get_by_label("Action", exact=True).select_option("attack")
        page.get_by_label(words["damage"], exact=True).fill("1d6")
        page.get_by_role("button", name=words["act with dice"]).click()
        page.locator(".dice-entry input").first.wait_for()
        page.get_by_role("button", name=words["rules"]).click()
        found["gm fight, dice prompt"] = axe(page)
        at_phone_widths(page)
        if lang == "fr":
            snap(page, "fight")

        phone = pages(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        open_with_token(phone, server.url, s["player"]["token"], lang)
        phone.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']")
        assert phone.locator("#role").text_content() == words["role"]
        found["player phone"] = axe(phone)
        no_overflow(phone)  # and it fits the phone's width
        if lang == "fr":
            snap(phone, "phone")

        screen = pages(viewport={"width": 1280, "height": 720})
        open_with_token(screen, server.url, s["gm"], lang)
        screen.goto(f"{server.url}/#/table")
        screen.wait_for_selector("html[data-ready=table]")
        screen.wait_for_selector("#table-screen[data-version]")
        found["table screen"] = axe(screen)
        at_phone_widths(screen)
        if lang == "fr":
            snap(screen, "table")

        # every later state of the fight, on the GM's page, the phone and the TV: someone down, someone
        # hidden, revealed again, the fight ended
        eid, vorath = encounter["id"], next(c for c in encounter["combatants"] if c["name"] == "Seigneur Vorath")
        aiko = next(c for c in encounter["combatants"] if c["name"] == "Aiko")
        screens = {"gm": page, "phone": phone, "table": screen}

        def reached(state: str) -> None:
            after = http.get(f"/v1/encounters/{eid}").json()
            page.wait_for_selector(f"#encounter-view[data-version='{after['version']}']", timeout=15_000)
            phone.wait_for_selector(f"#encounter-view[data-version='{after['version']}']", timeout=15_000)
            if after["status"] == "active":
                screen.wait_for_selector(f"#table-screen[data-version='{after['version']}']", timeout=15_000)
            else:
                screen.wait_for_selector("#table-screen[data-mode=dice]", timeout=15_000)
            for name, target in screens.items():
                found[f"{name}, {state}"] = axe(target)
                at_phone_widths(target)

        page.locator(".dice-entry button.cancel").click()
        r = http.post(f"/v1/encounters/{eid}/actions", json={"type": "damage", "target_id": aiko["id"], "amount": 40})
        assert r.status_code == 201, r.text
        reached("someone down")
        for target in (page, phone, screen):
            down = target.locator(f"li.down[data-combatant-id='{aiko['id']}'] .badge.down")
            assert down.inner_text() == words["down"]
        r = http.patch(f"/v1/encounters/{eid}/combatants/{vorath['id']}", json={"hidden": True})
        assert r.status_code == 200, r.text
        reached("hidden")
        row = page.locator(f"#turn-order li[data-combatant-id='{vorath['id']}']")
        assert row.locator(".badge.hidden-roll").inner_text() == words["hidden"]
        r = http.patch(f"/v1/encounters/{eid}/combatants/{vorath['id']}", json={"hidden": False})
        assert r.status_code == 200, r.text
        reached("revealed")
        assert row.get_by_role("button", name=words["hide"]).count() == 1
        assert http.post(f"/v1/encounters/{eid}/end").status_code in (200, 201)
        reached("ended")
        assert screen.locator("#tray-title").inner_text() == words["tray"]

    assert {name: v for name, v in found.items() if v} == {}
    assert len(found) == 8 + 4 * 3
    # the check can fail: a button without a name is a critical violation axe reports
    page.evaluate(
        "document.querySelector('main').append(Object.assign(document.createElement('button'), {id: 'nameless'}))"
    )
    assert "button-name" in [v["id"] for v in axe(page)]
    page.evaluate("document.getElementById('nameless').remove()")
    for p in (page, phone, screen):
        clean(p)
