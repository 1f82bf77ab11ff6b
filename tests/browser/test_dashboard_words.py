"""The fight history and the roll log in the page's language (issue 44, item 5 and item 10's log
line): a scripted fight in each ruleset, table dice, plus a Great Cosmos level-up, read as the GM's
page shows them. In French no word of an English list appears (the server's `what` texts, its
parameter names, its dice purposes); in English the same lines are English. The step names and
figures come from each step's `key` and parameters, translated by the page."""

from __future__ import annotations

import ast
import re
from contextlib import closing
from typing import Any

from tests.browser.dash_support import at_phone_widths, campaign
from tests.browser.test_dashboard import clean, open_with_token
from tests.factories import AS, GC, RB, WA, as_fighter, gc_fighter, rb_fighter, sheet, wa_fighter
from tests.rulesets.test_step_keys import APP

# English words the server writes (step texts, parameter names, purposes, outcomes), chosen so that no
# French word of the page is among them: not "max" (« PV max »), "bonus" (« bonus de chance »), "test",
# "karma", "posture", "effective" (« agilité effective »), "initiative", "protection", "perception",
# "opposition", "round", "score", "total", "source", "expression", "extra", "riposte", nor the stats' ids
# fmt: off
ENGLISH = frozenset((
    "damage", "multiplier", "moved", "move", "locked", "advantage", "defender", "attacker", "level", "up", "hp",
    "attack", "dodge", "parry", "success", "failure", "sheet", "hit", "miss", "wins", "winner", "turn", "starts",
    "ends", "open", "vitality", "defense", "defence", "rules", "generic", "system", "the", "of", "and", "with", "no",
    "not", "by", "decided", "taken", "read", "dice", "die", "constant", "skill", "value", "stat", "natural", "raw",
    "weapon", "roll", "percentage", "kind", "melee", "holds", "available", "standing", "reaction", "none",
))
# French words the same lines use: none may be left in English (not "règles": a ruleset's own title)
FRENCH = frozenset((
    "dégâts", "l'emporte", "réussite", "échec", "touché", "déplacement", "niveau", "esquive", "attaque", "défense",
    "tour", "fiche", "vitalité", "agilité", "multiplicateur", "jet",
    # ids never shown raw in English (not those that are English words too: "force", "precision", "chance",
    # "combat", "defense", "resistance", "simple", "impossible", "hardcore"): Great Cosmos' stats, Asgard's
    # skills, the rulesets' difficulties
    "agilite", "esprit", "charisme", "furtivite", "survie", "volonte", "soins", "acrobatie", "athletisme",
    "pilotage", "equitation", "facile", "moyen", "difficile", "heroique", "automatique", "tres", "simplissime",
    "complexe", "quasi", "inratable", "moderee",
))
# fmt: on

VALUES = {"d100": 30, "d20": 15, "d10": 5, "d8": 5, "d6": 4}  # every die of the fights, entered at the table


def dice_loop(http, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """`body` POSTed to `path` with table dice: each die the server says it needs next (422 `dice_needed`)
    entered as `VALUES` says, until it is accepted."""
    dice: list[int] = []
    for _ in range(40):
        r = http.post(path, json={**body, "dice": dice})
        if r.status_code == 422 and r.json().get("code") == "dice_needed":
            dice.append(VALUES[r.json()["needed"]["die"]])
            continue
        assert r.status_code == 201, r.text
        return r.json()
    raise AssertionError(f"{path}: more than 40 dice")


FIGHTERS = {
    GC: (gc_fighter(70, light_points=1), gc_fighter(40)),
    AS: (
        as_fighter(3, weapons=[{"name": "epee", "damage_dice": 2, "ranged": False}]),
        as_fighter(1, weapons=[{"name": "hache", "damage_dice": 2, "ranged": False}]),
    ),
    RB: (rb_fighter(70), rb_fighter(40)),
    WA: ({**sheet(WA), "stats": {**sheet(WA)["stats"], "DEX": 3}}, wa_fighter(0)),
}


def scripted_fight(live, server, ruleset: str) -> dict[str, Any]:
    """A fight of Aiko against the Orc in `ruleset`, every die at the table: a round each way (Great
    Cosmos: a posture, an attack, a move, a special posture; then a level-up)."""
    http, cid, gm = campaign(live, server, ruleset, f"Mots {ruleset}")
    with closing(http):
        a, b = FIGHTERS[ruleset]
        aiko = http.post(f"/v1/campaigns/{cid}/characters", json={"name": "Aiko", "kind": "pc", "sheet": a}).json()
        orc = http.post(f"/v1/campaigns/{cid}/characters", json={"name": "Orc", "kind": "npc", "sheet": b}).json()
        grid = ruleset == GC
        r = http.post(
            f"/v1/campaigns/{cid}/encounters",
            json={
                "name": "La passe",
                "combatants": [
                    {"character_id": aiko["id"], "side": "héros", "position": {"x": 0, "y": 0} if grid else None},
                    {"character_id": orc["id"], "side": "ennemis", "position": {"x": 1, "y": 0} if grid else None},
                ],
            },
        )
        assert r.status_code == 201, r.text
        eid = r.json()["id"]
        dice_loop(http, f"/v1/encounters/{eid}/start", {})
        ids = {c["name"]: c["id"] for c in http.get(f"/v1/encounters/{eid}").json()["combatants"]}
        me, it = ids["Aiko"], ids["Orc"]
        acts = f"/v1/encounters/{eid}/actions"
        weaponless = {"damage": "1d6"} if ruleset in (GC, RB) else {}
        if ruleset == GC:
            dice_loop(http, acts, {"type": "posture", "actor_id": me, "posture": "offensive"})
        dice_loop(http, acts, {"type": "attack", "actor_id": me, "target_id": it, **weaponless})
        if ruleset == GC:
            dice_loop(http, acts, {"type": "move", "actor_id": me, "to": {"x": 1, "y": 1}})
        dice_loop(http, f"/v1/encounters/{eid}/next-turn", {})
        dice_loop(http, acts, {"type": "attack", "actor_id": it, "target_id": me, "damage": "1d6"})
        dice_loop(http, f"/v1/encounters/{eid}/next-turn", {})
        if ruleset == GC:
            dice_loop(http, acts, {"type": "posture", "actor_id": me, "posture": "illumination"})
            edit = http.patch(f"/v1/characters/{aiko['id']}", json={"sheet": {"karma": 4, "light_points": 3}})
            assert edit.status_code == 200, edit.text  # the GM's edit of rule-governed fields: a `sheet_edit` entry
            dice_loop(
                http,
                f"/v1/characters/{aiko['id']}/level-ups",
                {"mode": "one_d20", "stats": ["agilite"], "chance_bonus_pool": "hp"},
            )
        # free rolls, with no purpose (the dice's own is "roll"), the campaign's and a character's
        for body in (
            {"expression": "2d6", "dice": [3, 4]},
            {"expression": "1d6", "dice": [5], "character_id": aiko["id"]},
        ):
            assert http.post(f"/v1/campaigns/{cid}/rolls", json=body).status_code == 201
        actions = http.get(f"/v1/encounters/{eid}/actions").json()["items"]
    return {"gm": gm, "actions": len(actions), "aiko": aiko}


READ = """() => {
    const text = el => { const copy = el.cloneNode(true);
                         copy.querySelectorAll('.rule-id, time').forEach(x => x.remove());
                         return copy.textContent.replace(/\\s+/g, ' ').trim(); };
    return { history: [...document.querySelectorAll('#encounter-history li')].map(text),
             log: [...document.querySelectorAll('#log-list li.entry')].map(text),
             ruleset: document.querySelector('.ruleset')?.textContent || '',
             // the cards' figures by name, and the test panel's choices (a stat's name)
             cards: [...document.querySelectorAll('#character-cards dt, #test select option')].map(text) };
}"""


def lines_of(page, fight: dict[str, Any]) -> dict[str, Any]:
    page.wait_for_function(
        "n => document.querySelectorAll('#encounter-history li').length >= n", arg=fight["actions"], timeout=15_000
    )
    page.wait_for_function("() => document.querySelector('#log-list li.entry')")
    return page.evaluate(READ)


def sheet_form_labels(page) -> list[str]:
    """The legends and labels of the new-character form (then closed)."""
    page.get_by_role("button", name=re.compile("^(Nouveau personnage|New character)$")).click()
    dialog = page.locator("dialog")
    dialog.locator("legend").first.wait_for()
    labels = dialog.locator("legend, label").all_text_contents()
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached")
    return labels


# the games' own names, in their French originals too (« Règles - The Tale of Great Cosmos »)
PROPER = ("The Tale of Great Cosmos", "Worlds Awakening", "Règles de Base", "Clé en main")


def words(text: str) -> set[str]:
    for name in PROPER:
        text = text.replace(name, "")
    return {w.lower() for w in re.findall(r"[A-Za-zÀ-ÿ']+", text)} | {
        w.lower() for w in re.findall(r"[A-Za-zÀ-ÿ]+", text)
    }


def test_issue44_item5_history_and_log_of_a_fight_in_every_ruleset_in_french_then_english(live, pages):
    server = live.start()
    fights = {ruleset: scripted_fight(live, server, ruleset) for ruleset in (GC, AS, RB, WA)}
    french: dict[str, Any] = {}
    english: dict[str, Any] = {}
    for ruleset, fight in fights.items():
        page = pages(viewport={"width": 1280, "height": 1000})
        open_with_token(page, server.url, fight["gm"])
        french[ruleset] = {**lines_of(page, fight), "form": sheet_form_labels(page)}
        at_phone_widths(page)
        page.evaluate("localStorage.setItem('jdr.lang', 'en')")
        page.reload()
        page.wait_for_selector("html[lang=en][data-ready=dashboard]")
        english[ruleset] = {**lines_of(page, fight), "form": sheet_form_labels(page)}
        at_phone_widths(page)
        clean(page)
    leaks: dict[str, list[tuple[str, str]]] = {}
    for ruleset in fights:
        fr, en = french[ruleset], english[ruleset]
        assert len(fr["history"]) == len(en["history"]) == fights[ruleset]["actions"]
        shown = [*fr["history"], *fr["log"], fr["ruleset"], *fr["form"], *fr["cards"]]
        leaks[f"{ruleset} fr"] = sorted({(w, line) for line in shown for w in words(line) & ENGLISH})
        shown_en = [*en["history"], *en["log"], en["ruleset"], *en["form"], *en["cards"]]
        leaks[f"{ruleset} en"] = sorted({(w, line) for line in shown_en for w in words(line) & FRENCH})
    found = {where: [f"{word}: {line}" for word, line in pairs] for where, pairs in leaks.items() if pairs}
    assert not found, "\n".join(f"{where}\n  " + "\n  ".join(lines) for where, lines in found.items())
    # what the lines say, in both languages (the figures are the table's dice)
    gc_fr, gc_en = "\n".join(french[GC]["history"]), "\n".join(english[GC]["history"])
    assert "posture offensive" in gc_fr and "dégâts ×2" in gc_fr, gc_fr
    assert "déplacement max" in gc_fr and "2 cases sur 4" in gc_fr, gc_fr
    assert "entre en Illumination : karma bloqué à 10, dé d'avantage 4, bonus de +10" in gc_fr, gc_fr
    assert "damage ×2" in gc_en and "2 of 4 squares" in gc_en and "karma locked at 10" in gc_en, gc_en
    rb_fr, rb_en = "\n".join(french[RB]["history"]), "\n".join(english[RB]["history"])
    assert "le défenseur l'emporte" in rb_fr and "the defender wins" in rb_en, (rb_fr, rb_en)
    [level_fr] = [line for line in french[GC]["log"] if line.startswith("niveau")]
    [level_en] = [line for line in english[GC]["log"] if line.startswith("level")]
    assert "niveau 1 → 2" in level_fr and "agilité 70 → 80" in level_fr and "PV max 100 → " in level_fr, level_fr
    assert "level 1 → 2" in level_en and "agility 70 → 80" in level_en and "hp max 100 → " in level_en, level_en
    rolls_fr = [line for line in french[GC]["log"] if line.startswith("jet ")]
    assert sorted(rolls_fr) == ["jet 2d6 = 7 [d6 3, d6 4]", "jet Aiko — 1d6 = 5 [d6 5]"], rolls_fr  # no « (roll) »
    assert {"Agilité", "Esprit"} <= set(french[GC]["form"]) and {"Agility", "Mind"} <= set(english[GC]["form"])
    assert {"agility", "strength", "luck"} <= set(english[GC]["cards"]), english[GC]["cards"]
    assert {"willpower", "survival", "heroic"} <= set(english[AS]["cards"]), english[AS]["cards"]
    assert {"volonté", "survie", "héroïque"} <= set(french[AS]["cards"]), french[AS]["cards"]
    [edit_fr] = [line for line in french[GC]["log"] if line.startswith("fiche modifiée")]
    assert "karma 0 → 4" in edit_fr, edit_fr
    assert "Fiche" in french[GC]["form"] and "Sheet" in english[GC]["form"]
    assert french[GC]["ruleset"] == "The Tale of Great Cosmos (règles v6)"
    assert english[RB]["ruleset"] == "Rulebook (generic D100 system, pelican-jdr)"
    assert french[RB]["ruleset"] == "Rulebook (système D100 générique, pelican-jdr)"


def step_figure_names() -> list[str]:
    """Every figure name the server's code gives a step (the keywords of a ruleset's `step(…)`, of
    `_test_step(…)` and `FlowStep(…)`, the keys of a literal step or of one annotated as a step
    (`refused: GreatCosmosStep = {**why, …}`), read from the code as tests/rulesets/test_step_keys.py
    reads it."""
    names: set[str] = set()
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                if {"rule", "what"} <= set(keys):
                    names |= set(keys)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Dict):
                if ast.unparse(node.annotation).endswith("Step"):
                    names |= {
                        k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
                    }
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("step", "_test_step", "FlowStep")
            ):
                names |= {k.arg for k in node.keywords if k.arg}
    return sorted(names - {"rule", "key", "what"})


def test_issue44_item5_every_figure_of_a_step_is_shown_in_french_words_or_as_a_bare_value(live, pages):
    """A step the page has no sentence for shows its figures by their French names (« valeur N » for a name
    it does not know), never the server's parameter name: each figure the server's code writes, alone in
    a step of an unknown key, as a number and as `true`."""
    names = step_figure_names()
    assert len(names) > 80 and {"damage_multiplier", "max_move", "moved", "karma_locked", "advantage_die"} <= set(names)
    server = live.start()
    page = pages()
    page.goto(f"{server.url}/")
    page.wait_for_selector("#lang-toggle")
    shown = page.evaluate(
        """async names => { const m = await import('/web/js/format.js');
           const text = step => m.stepNode(step, () => 'Aiko')?.textContent ?? '';
           return names.flatMap(name => [text({key: 'not_known', [name]: 3}), text({key: 'not_known', [name]: true})]); }""",
        names,
    )
    leaks = sorted({f"{w}: {line}" for line in shown for w in words(line) & ENGLISH})
    assert leaks == []
    assert "valeur 3" in page.evaluate(
        "async () => (await import('/web/js/format.js')).stepNode({key: 'not_known', zorglub: 3}, () => '').textContent"
    )
    # in English too the words are the page's, by key: a step the server rewords keeps them
    said = page.evaluate(
        """async () => { const i = await import('/web/js/i18n.js'), m = await import('/web/js/format.js');
           i.setLang('en');
           const out = [m.stepNode({key: 'attack_test', what: 'the attack roll (reworded)', combatant_id: 'c'}, () => 'Aiko').textContent,
                        m.stepNode({key: 'max_move', combatant_id: 'c', max_move: 4, moved: 2}, () => 'Aiko').textContent];
           i.setLang('fr');
           return out; }"""
    )
    assert said == ["Aiko — attack test", "Aiko — max move: 2 of 4 squares"]
    clean(page)
