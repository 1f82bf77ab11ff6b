"""The Asgard attack form in Debian's Chromium against a real uvicorn, on a touch phone, in French and in
English: compact (one label per control, the skill picked from the sheet, a field shown only once the
option it serves is chosen), « Groupe » offering only the actor's side's extras (AS-C11: never a
non-extra, never the target), and a field's fault said under it in the page's words from its `type`."""

from __future__ import annotations

from contextlib import closing

from tests.browser.dash_support import at_phone_widths, axe, campaign
from tests.browser.test_dashboard import clean, open_with_token
from tests.factories import as_fighter

HACHE = {"name": "hache", "damage_dice": 2, "ranged": False}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
FORM = "#encounter-view form[aria-labelledby=action-title]"
# the form's controls a person sees now, each by its label (a button, a summary: its text)
SHOWN = f"""() => [...document.querySelectorAll('{FORM} :is(input, select, textarea, button, summary)')]
  .filter(e => e.checkVisibility())
  .map(e => (e.labels?.[0]?.textContent || e.getAttribute('aria-label') || e.textContent || '').trim())"""
WORDS = {
    "fr": {
        "action": "Action",
        "target": "Cible",
        "skill": "Compétence",
        "weapon": "Arme",
        "damage": "Dégâts",
        "prime": "Prime achetée",
        "penalty": "Payée par la pénalité",
        "second": "Seconde cible",
        "unperceived": "Non perçue",
        "difficulty": "Difficulté",
        "group": "Groupe",
        "act": "Agir",
        "more": "Circonstances et options",
        "free": "efficacité",
        "none": "— aucune —",
        "too_many": "au plus 4 élément(s)",
        "le": "doit être inférieur ou égal à 100",
    },
    "en": {
        "action": "Action",
        "target": "Target",
        "skill": "Skill",
        "weapon": "Weapon",
        "damage": "Damage",
        "prime": "Prime bought",
        "penalty": "Paid with the penalty",
        "second": "Second target",
        "unperceived": "Unperceived",
        "difficulty": "Difficulty",
        "group": "Group",
        "act": "Act",
        "more": "Circumstances and options",
        "free": "efficacite",
        "none": "— none —",
        "too_many": "at most 4 item(s)",
        "le": "must be less than or equal to 100",
    },
}


def scene(live, server):
    """Sigrid (a PC) against six draugar (extras, copies of one NPC) and their jarl (no extra), a draugr
    first: (the GM's client, the fight as started, names → combatant ids)."""
    http, cid, gm = campaign(live, server, "asgard", "Ragnarök")
    made = {
        name: http.post(f"/v1/campaigns/{cid}/characters", json={"name": name, "kind": kind, "sheet": sheet}).json()
        for name, kind, sheet in (
            ("Sigrid", "pc", as_fighter(perception=5, weapons=[HACHE])),
            ("Draugr", "npc", as_fighter(perception=1, weapons=[HACHE], tier="figurant")),
            ("Jarl", "npc", as_fighter(perception=0, weapons=[HACHE], tier="second_couteau")),
        )
    }
    r = http.post(
        f"/v1/campaigns/{cid}/encounters",
        json={
            "name": "Le tertre",
            "options": {"hp_visibility": "exact", "reveal_on_turn": False},
            "combatants": [
                {"character_id": made["Sigrid"]["id"], "side": "héros", "initiative": 10},
                {"character_id": made["Draugr"]["id"], "side": "morts", "initiative": 20, "count": 6},
                {"character_id": made["Jarl"]["id"], "side": "morts", "initiative": 5},
            ],
        },
    )
    assert r.status_code == 201, r.text
    eid = r.json()["id"]
    started = http.post(f"/v1/encounters/{eid}/start", json={"seed": 1})
    assert started.status_code == 201, started.text
    return http, gm, started.json(), {c["name"]: c["id"] for c in started.json()["combatants"]}


def test_the_attack_form_is_compact_and_its_group_offers_only_the_sides_extras(live, pages):
    server = live.start()
    http, gm, started, n = scene(live, server)
    eid, actor = started["id"], started["current"]["combatant_id"]
    name_of = {i: name for name, i in n.items()}
    assert name_of[actor].startswith("Draugr ")
    others = sorted(name for name in n if name.startswith("Draugr ") and n[name] != actor)
    page = pages(**PHONE)
    with closing(http):
        open_with_token(page, server.url, gm)
        form = page.locator(FORM)
        for lang, w in WORDS.items():
            if lang == "en":
                page.evaluate("localStorage.setItem('jdr.lang', 'en')")
                page.reload()
                page.wait_for_selector("html[lang=en][data-ready=dashboard]")
            page.wait_for_selector(f"#encounter-view[data-version='{started['version']}']")
            form.get_by_label(w["action"], exact=True).select_option("attack")
            form.get_by_label(w["target"], exact=True).select_option(n["Sigrid"])
            page.wait_for_selector("html:not([data-busy])", state="attached")
            shown = page.evaluate(SHOWN)
            assert len(shown) == len(set(shown)), shown  # one name per control
            assert len(shown) <= 20, shown  # 43 before, in this fight (a box per other combatant, twice)
            # the skill: the actor's sheet's skills, the ruleset's default first
            skill = form.get_by_label(w["skill"], exact=True)
            assert skill.evaluate("s => s.tagName") == "SELECT" and skill.input_value() == "combat"
            assert skill.locator("option").evaluate_all("os => os.map(o => o.value)") == [
                "combat",
                "defense",
                "perception",
            ]
            assert skill.locator("option").first.inner_text() == "combat (6)"  # its value on the sheet
            # the group: the other draugar only (extras of the actor's side), not the jarl, Sigrid or the actor
            group = form.locator("fieldset", has=page.locator("legend", has_text=w["group"])).first
            assert group.locator(".check:not([hidden]) label").all_inner_texts() == others
            form.get_by_label(w["target"], exact=True).select_option(n[others[0]])  # the GM aims at a draugr
            assert group.locator(".check:not([hidden]) label").all_inner_texts() == others[1:]  # never the target
            form.get_by_label(w["target"], exact=True).select_option(n["Sigrid"])
            # what only an option needs is shown once that option is chosen
            for label in (w["penalty"], w["second"], w["difficulty"], w["damage"]):
                assert not form.get_by_label(label, exact=True).is_visible(), label
            form.get_by_label(w["prime"], exact=True).select_option("attaques_multiples")
            assert form.get_by_label(w["penalty"], exact=True).is_visible()
            assert form.get_by_label(w["second"], exact=True).is_visible()
            form.get_by_label(w["prime"], exact=True).select_option("")
            form.get_by_label(w["unperceived"], exact=True).check()
            assert form.get_by_label(w["difficulty"], exact=True).is_visible()
            form.get_by_label(w["unperceived"], exact=True).uncheck()
            form.get_by_label(w["weapon"], exact=True).select_option("")
            assert form.get_by_label(w["damage"], exact=True).is_visible()
            form.get_by_label(w["weapon"], exact=True).select_option("hache")
            assert page.locator(f"{FORM} details summary").inner_text() == w["more"]
            form.locator("details summary").click()  # the rarer circumstances, opened
            assert form.get_by_label(w["free"], exact=True).is_visible()
            assert axe(page, context=FORM) == []
            at_phone_widths(page)
            # five draugar ticked (at most 4 others, AS-C11): said under the group in the page's words
            for other in others:
                group.get_by_label(other, exact=True).check()
            page.get_by_role("button", name=w["act"], exact=True).click()
            error = group.locator("p.error")
            error.wait_for(timeout=15_000)
            assert error.inner_text() == w["too_many"], error.inner_text()
            form.get_by_label(w["skill"], exact=True).scroll_into_view_if_needed()
            at_phone_widths(page)
            group.get_by_label(others[-1], exact=True).uncheck()
            if lang == "fr":
                continue  # the group attack itself is made once, in English
            page.get_by_role("button", name=w["act"], exact=True).click()
            page.wait_for_selector("#encounter-history li[data-type=attack]", timeout=15_000)
        [attack] = [a for a in http.get(f"/v1/encounters/{eid}/actions").json()["items"] if a["type"] == "attack"]
        [grouped] = [s for s in attack["steps"] if s["key"] == "group_of_extras_one_test"]
        assert grouped["members"] == [actor, *(n[o] for o in others[:-1])]
        assert attack["target_id"] == n["Sigrid"]
        clean(page)


def test_a_fields_fault_is_said_from_its_type_in_french_and_english(live, pages):
    """A modifier over 100 (`less_than_equal`, `le` 100): under the field in the page's words."""
    server = live.start()
    http, gm, started, n = scene(live, server)
    page = pages(**PHONE)
    with closing(http):
        open_with_token(page, server.url, gm)
        form = page.locator(FORM)
        for lang, w in WORDS.items():
            if lang == "en":
                page.evaluate("localStorage.setItem('jdr.lang', 'en')")
                page.reload()
                page.wait_for_selector("html[lang=en][data-ready=dashboard]")
            page.wait_for_selector(f"#encounter-view[data-version='{started['version']}']")
            form.get_by_label(w["action"], exact=True).select_option("attack")
            form.get_by_label(w["target"], exact=True).select_option(n["Sigrid"])
            modifier = page.locator(f"{FORM} input[name=modifier]")
            modifier.fill("101")
            page.get_by_role("button", name=w["act"], exact=True).click()
            error = page.locator(f"#{modifier.get_attribute('id')}-error")
            error.wait_for(timeout=15_000)
            assert error.inner_text() == w["le"], error.inner_text()
            at_phone_widths(page)
        assert [
            a for a in http.get(f"/v1/encounters/{started['id']}/actions").json()["items"] if a["type"] == "attack"
        ] == []
        clean(page)
