"""The attack form and the fight's refusals in Debian's Chromium against a real uvicorn: « Attaquer »
opens with the sheet's first weapon chosen (not « — aucune — »), and a refused action keeps the
server's reason beside its code (the rule, the distance), in French and in English."""

from __future__ import annotations

from contextlib import closing

from tests.browser.dash_support import at_phone_widths, campaign
from tests.browser.test_dashboard import clean, open_with_token
from tests.factories import as_fighter, gc_fighter

SWORD = {"name": "Sword", "kind": "weapon", "slots": 2, "damage": "1d8+2"}
DAGGER = {"name": "Dague", "kind": "weapon", "slots": 1, "damage": "1d4"}
EPEE = {"name": "epee", "damage_dice": 2, "ranged": False}
HACHE = {"name": "hache", "damage_dice": 2, "ranged": False}


def refusal(page) -> str:
    """The fight's message line once it shows an error."""
    page.wait_for_selector("#encounter-message .error", timeout=15_000)
    return page.locator("#encounter-message").inner_text().replace("\u202f", " ").replace("\u00a0", " ")


def test_gc_d1_attack_form_takes_the_sheets_first_weapon_and_out_of_reach_says_the_distance(live, pages):
    """Two swordsmen two cells apart (GC-D1: melee needs distance 1): whoever acts first attacks the
    other with the form; its weapon is already the sheet's first; the refusal gives the distance."""
    server = live.start()
    http, cid, gm = campaign(live, server, "great-cosmos", "Cosmos")
    page = pages(viewport={"width": 1280, "height": 1000})
    with closing(http):
        made = {}
        for name, agility in (("Aiko", 60), ("Brute", 40)):
            sheet = gc_fighter(agility, inventory={"items": [SWORD, DAGGER]})
            r = http.post(f"/v1/campaigns/{cid}/characters", json={"name": name, "kind": "npc", "sheet": sheet})
            assert r.status_code == 201, r.text
            made[name] = r.json()["id"]
        r = http.post(
            f"/v1/campaigns/{cid}/encounters",
            json={
                "name": "Couloir",
                "combatants": [
                    {"character_id": made["Aiko"], "side": "héros", "position": {"x": 0, "y": 0}},
                    {"character_id": made["Brute"], "side": "ennemis", "position": {"x": 3, "y": 0}},
                ],
            },
        )
        assert r.status_code == 201, r.text
        eid = r.json()["id"]
        started = http.post(f"/v1/encounters/{eid}/start", json={"seed": 3})
        assert started.status_code == 201, started.text
        current = started.json()["current"]["combatant_id"]
        other = next(c for c in started.json()["combatants"] if c["id"] != current)
        open_with_token(page, server.url, gm)
        expected = {
            "fr": ("Arme", "Cible", "Agir", "Cible hors de portée (règle GC-D1, distance 3, portée 1)."),
            "en": ("Weapon", "Target", "Act", "Target out of reach (rule GC-D1, distance 3, reach 1)."),
        }
        for lang, (weapon_label, target_label, act, said) in expected.items():
            if lang == "en":
                page.evaluate("localStorage.setItem('jdr.lang', 'en')")
                page.reload()
                page.wait_for_selector("html[lang=en][data-ready=dashboard]")
            page.wait_for_selector(f"#encounter-view[data-version='{started.json()['version']}']")
            page.get_by_label("Action", exact=True).select_option("attack")
            weapon = page.get_by_label(weapon_label, exact=True)
            assert weapon.input_value() == "Sword"  # the sheet's first weapon, not « — aucune — »
            assert weapon.locator("option").all_inner_texts()[1:] == ["Sword", "Dague"]  # the others still offered
            target = page.get_by_label(target_label, exact=True)
            target.select_option(other["id"])
            page.get_by_role("button", name=act, exact=True).click()
            text = refusal(page)
            assert said in text, text  # the distance and the reach the rule allows
            under = page.locator(f"#{target.get_attribute('id')}-error")  # and under the target, in these words
            assert under.inner_text() == said.rstrip("."), under.inner_text()
            at_phone_widths(page)
        assert [a for a in http.get(f"/v1/encounters/{eid}/actions").json()["items"] if a["type"] == "attack"] == []
        clean(page)


def test_as_c11_a_non_extra_is_offered_no_group_only_its_sides_cooperation(live, pages):
    """Sigrid (not an extra) attacks the troll: only extras act in groups (AS-C11), so the form offers her
    none; she may cooperate (AS-T6) with Bjorn, of her side, never with the troll she attacks; in both
    languages, her axe already chosen."""
    server = live.start()
    http, cid, gm = campaign(live, server, "asgard", "Ragnarök")
    page = pages(viewport={"width": 1280, "height": 1000})
    with closing(http):
        made = {
            name: http.post(f"/v1/campaigns/{cid}/characters", json={"name": name, "kind": kind, "sheet": sheet}).json()
            for name, kind, sheet in (
                ("Sigrid", "pc", as_fighter(perception=5, weapons=[HACHE, EPEE])),
                ("Bjorn", "pc", as_fighter(perception=3, weapons=[EPEE])),
                ("Troll", "npc", as_fighter(perception=0, vitality=30, vitality_max=30, weapons=[EPEE])),
            )
        }
        r = http.post(
            f"/v1/campaigns/{cid}/encounters",
            json={
                "name": "Le gué",
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
        for lang, (action, weapon_label, target, group_legend, together) in {
            "fr": ("Action", "Arme", "Cible", "Groupe", "En coopération"),
            "en": ("Action", "Weapon", "Target", "Group", "Cooperating"),
        }.items():
            if lang == "en":
                page.evaluate("localStorage.setItem('jdr.lang', 'en')")
                page.reload()
                page.wait_for_selector("html[lang=en][data-ready=dashboard]")
            page.wait_for_selector(f"#encounter-view[data-version='{started.json()['version']}']")
            page.get_by_label(action, exact=True).select_option("attack")
            assert page.get_by_label(weapon_label, exact=True).input_value() == "hache"  # the sheet's first
            page.get_by_label(target, exact=True).select_option(n["Troll"])
            form = page.locator("form[aria-labelledby=action-title]")
            group = form.locator("fieldset", has=page.get_by_text(group_legend, exact=True))
            assert group.count() == 1 and not group.is_visible()  # Sigrid is no extra: no group to offer
            cooperation = form.locator("fieldset", has=page.get_by_text(together, exact=True))
            assert cooperation.locator(".check:not([hidden]) label").all_inner_texts() == ["Bjorn"]
            at_phone_widths(page)
        assert [a for a in http.get(f"/v1/encounters/{eid}/actions").json()["items"] if a["type"] == "attack"] == []
        clean(page)
