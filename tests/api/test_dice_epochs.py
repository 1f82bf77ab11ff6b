"""Verifiable server dice (API.md round 4, "Verifiable server dice (commit, then reveal)"): every
die the server rolls is number `k` of its campaign's current epoch, derived from the epoch's
seed, committed to before the first die and revealed by the GM. Checked here against a second
implementation of the derivation, written from the contract's words (not `app.rules.dice`)."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest

from app.services import dice_epochs

from tests.api.support import assert_problem, read_events
from tests.factories import AS, GC, RB, SHEETS, TEST_BODIES, WA


def derived(seed_hex: str, epoch_id: str, k: int, salts: list[str], faces: int) -> int:
    """The contract's derivation, written again: the whole digest as one big integer, cut in words."""
    msg = f"{epoch_id}:{k}" + "".join("\n" + s for s in salts)
    bound = (1 << 32) - (1 << 32) % faces
    for j in range(100):
        digest = int.from_bytes(hmac.new(bytes.fromhex(seed_hex), f"{msg}:{j}".encode(), hashlib.sha256).digest())
        for i in range(8):
            u = (digest >> (32 * (7 - i))) & 0xFFFFFFFF
            if u < bound:
                return u % faces + 1
    raise AssertionError("no word below the bound in 100 digests")


def server_dice(value: Any) -> list[dict]:
    """Every server die of an entry, or of a list of them (the service's own walk)."""
    return list(dice_epochs.server_dice(value))


def entry_dice(entries: list[dict]) -> list[dict]:
    """Each entry's server dice, a die an entry shows in two places (a level-up's chance test, also
    in its `rolls`) once."""
    out = []
    for entry in entries:
        unique = {(d["epoch"], d["k"]): d for d in server_dice(entry)}
        assert len({(e, k, d["value"]) for (e, k), d in unique.items()}) == len(unique)
        assert all(unique[(d["epoch"], d["k"])]["value"] == d["value"] for d in server_dice(entry))
        out += unique.values()
    return out


def whole_log(client, cid: str, headers) -> list[dict]:
    items, cursor = [], None
    while True:
        r = client.get(
            f"/v1/campaigns/{cid}/rolls",
            params={"limit": 500, **({"cursor": cursor} if cursor else {})},
            headers=headers,
        )
        assert r.status_code == 200, r.text
        items += r.json()["items"]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return items


def current(client, cid: str, headers) -> dict:
    r = client.get(f"/v1/campaigns/{cid}/dice-epochs/current", headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def reveal(client, cid: str, headers) -> dict:
    r = client.post(f"/v1/campaigns/{cid}/dice-epochs/current/reveal", headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def check_epoch(epoch: dict, dice: list[dict]) -> None:
    """Every die of the revealed epoch recomputes; its numbers are 0…dice-1, each once."""
    assert hashlib.sha256(bytes.fromhex(epoch["seed"])).hexdigest() == epoch["commitment"]
    mine = [d for d in dice if d["epoch"] == epoch["id"]]
    assert sorted(d["k"] for d in mine) == list(range(epoch["dice"]))
    for d in mine:
        assert d["value"] == derived(epoch["seed"], epoch["id"], d["k"], epoch["salts"], int(d["die"][1:])), d


def test_a_campaign_is_committed_to_its_first_epoch_before_any_die(client, campaign_factory, player_factory):
    c = campaign_factory(GC)
    alice = player_factory(c, "Alice")
    epoch = current(client, c.id, alice.headers)
    assert epoch["dice"] == 0 and epoch["salts"] == [] and epoch["revealed_at"] is None
    assert "seed" not in epoch and len(epoch["commitment"]) == 64
    listed = client.get(f"/v1/campaigns/{c.id}/dice-epochs", headers=alice.headers).json()["items"]
    assert listed == [epoch]


@pytest.mark.parametrize("ruleset", [GC, AS, RB, WA])
def test_every_server_die_is_its_epochs_number_k_and_recomputes_after_the_reveal(table, ruleset):
    t = table(ruleset)
    hero = t.character("Hero", SHEETS[ruleset], kind="pc", player=t.alice)
    foe = t.character("Foe", SHEETS[ruleset])
    salted = t.post(f"/v1/campaigns/{t.c.id}/dice-epochs/current/salts", {"salt": "Léa a soufflé sur les dés"})
    assert salted["salts"] == ["Léa a soufflé sur les dés"]
    server_test = {k: v for k, v in TEST_BODIES[ruleset].items() if k != "seed"}
    for _ in range(3):  # a player's test: the server's dice
        t.post(f"/v1/characters/{hero}/tests", server_test, headers=t.alice.headers)
    t.post(f"/v1/characters/{hero}/tests", TEST_BODIES[ruleset])  # a seed: outside epochs
    t.post(f"/v1/campaigns/{t.c.id}/rolls", {"expression": "4d6kh3"}, headers=t.alice.headers)
    t.post(f"/v1/campaigns/{t.c.id}/rolls", {"expression": "1d1000", "hidden": True})  # the GM's, hidden
    s = t.encounter([{"character_id": hero}, {"character_id": foe}])
    t.start(s["id"])  # initiative: the server's dice
    state = t.state(s["id"])
    actor = state["current"]["combatant_id"] if state.get("current") else None
    if actor is not None:
        target = next(c["id"] for c in state["combatants"] if c["id"] != actor)
        body = {"type": "attack", "actor_id": actor, "target_id": target}
        r = t.client.post(f"/v1/encounters/{s['id']}/actions", json=body, headers=t.gm)
        if r.status_code == 422 and "damage" in r.text:
            r = t.client.post(f"/v1/encounters/{s['id']}/actions", json={**body, "damage": "1d6"}, headers=t.gm)
        assert r.status_code == 201, r.text
    t.next_turn(s["id"])

    gm_log = whole_log(t.client, t.c.id, t.gm)
    dice = server_dice(gm_log)
    assert dice, "no server die logged"
    seeded = [e for e in gm_log if e.get("provenance") == "seed"]
    assert seeded and not server_dice(seeded)  # a caller's seed: no epoch
    epoch = current(t.client, t.c.id, t.gm)
    assert epoch["dice"] == len(dice)
    assert {d["epoch"] for d in dice} == {epoch["id"]}
    # a player's log lacks the hidden roll: its k is a gap in what the player sees, counted all the same
    seen = entry_dice(whole_log(t.client, t.c.id, t.alice.headers))
    assert len(seen) < len(dice)

    revealed = reveal(t.client, t.c.id, t.gm)
    assert revealed["id"] == epoch["id"] and revealed["revealed_at"] is not None
    check_epoch(revealed, dice)
    nxt = revealed["next"]
    assert nxt["id"] != epoch["id"] and nxt["dice"] == 0 and nxt["commitment"] != epoch["commitment"]
    assert "seed" not in nxt
    # the next die is number 0 of the next epoch
    after = t.post(f"/v1/campaigns/{t.c.id}/rolls", {"expression": "d20"})
    assert [(d["epoch"], d["k"]) for d in after["rolls"]] == [(nxt["id"], 0)]
    listed = t.client.get(f"/v1/campaigns/{t.c.id}/dice-epochs", headers=t.alice.headers).json()["items"]
    assert [e["id"] for e in listed] == [nxt["id"], epoch["id"]]
    assert listed[1]["seed"] == revealed["seed"] and "seed" not in listed[0]


def test_a_rolled_back_request_gives_its_numbers_back(table):
    """AS-H2: a test rolled again once; a second reroll rolls its dice, then is refused (409): its
    numbers are given again to the next request, so the epoch has no gap."""
    t = table(AS)
    sheet = {"skills": {"survie": 3}, "vitality": 20, "vitality_max": 20, "heroism": 3}
    hero = t.character("Hero", sheet, kind="pc", player=t.alice)
    first = t.post(f"/v1/characters/{hero}/tests", {"skill": "survie", "difficulty": "moyen"})
    again = t.post(f"/v1/characters/{hero}/tests/{first['id']}/reroll", {})
    before = current(t.client, t.c.id, t.gm)["dice"]
    assert before == len(server_dice([first, again])) > 0
    twice = t.client.post(f"/v1/characters/{hero}/tests/{first['id']}/reroll", json={}, headers=t.gm)
    assert_problem(twice, 409, "already-rerolled")
    assert current(t.client, t.c.id, t.gm)["dice"] == before
    roll = t.post(f"/v1/campaigns/{t.c.id}/rolls", {"expression": "d6"})
    assert roll["rolls"][0]["k"] == before  # the refused reroll's numbers, given again
    dice = entry_dice(whole_log(t.client, t.c.id, t.gm))
    assert sorted(d["k"] for d in dice) == list(range(before + 1))


def test_salts_before_the_first_die_only_printable_and_sixteen_at_most(table):
    t = table(GC)
    cid = t.c.id
    path = f"/v1/campaigns/{cid}/dice-epochs/current/salts"
    for bad in ["", "x" * 65, "a\nb", "nul\x00", "tab\there"]:
        r = t.client.post(path, json={"salt": bad}, headers=t.alice.headers)
        assert r.status_code == 422, (bad, r.text)
    for i in range(16):
        t.post(path, {"salt": f"sel {i}"}, headers=t.alice.headers if i % 2 else t.gm)
    assert_problem(t.client.post(path, json={"salt": "one more"}, headers=t.gm), 409, "too-many-salts")
    salts = current(t.client, cid, t.bob.headers)["salts"]
    assert salts == [f"sel {i}" for i in range(16)]
    # each salt an event every member's mirror sees
    told = [e for e in read_events(t.client, cid, t.bob.headers) if e["type"] == "dice_epoch.salted"]
    assert [e["data"]["epoch"]["salts"][-1] for e in told] == salts
    # after the first die: 409 epoch_started (the next epoch takes salts again)
    reveal(t.client, cid, t.gm)
    t.post(f"/v1/campaigns/{cid}/rolls", {"expression": "d6"}, headers=t.bob.headers)
    r = t.client.post(path, json={"salt": "too late"}, headers=t.alice.headers)
    assert r.status_code == 409 and r.json()["code"] == "epoch_started", r.text
    assert current(t.client, cid, t.gm)["salts"] == []


def test_only_the_gm_reveals_and_a_player_never_reads_a_seed_before(table):
    t = table(RB)
    cid = t.c.id
    r = t.client.post(f"/v1/campaigns/{cid}/dice-epochs/current/reveal", headers=t.alice.headers)
    assert r.status_code == 403, r.text
    t.post(f"/v1/campaigns/{cid}/rolls", {"expression": "3d6"}, headers=t.alice.headers)
    epoch = current(t.client, cid, t.alice.headers)
    assert "seed" not in epoch
    assert "seed" not in t.client.get(f"/v1/campaigns/{cid}/dice-epochs", headers=t.gm).json()["items"][0]
    revealed = reveal(t.client, cid, t.gm)
    told = [e for e in read_events(t.client, cid, t.alice.headers) if e["type"] == "dice_epoch.revealed"]
    assert [e["data"]["epoch"]["seed"] for e in told] == [revealed["seed"]]
    assert told[0]["data"]["next"]["id"] == revealed["next"]["id"]


def test_a_hidden_gm_roll_stays_hidden_until_the_gm_publishes_it_after_the_reveal(table):
    t = table(WA)
    cid = t.c.id
    hidden = t.post(f"/v1/campaigns/{cid}/rolls", {"expression": "2d10", "hidden": True})
    assert len(server_dice(hidden)) == 2
    assert t.client.get(f"/v1/campaigns/{cid}/rolls/{hidden['id']}", headers=t.alice.headers).status_code == 404
    assert current(t.client, cid, t.alice.headers)["dice"] == 2  # counted, not shown
    publish = f"/v1/campaigns/{cid}/rolls/{hidden['id']}/publish"
    assert t.client.post(publish, headers=t.alice.headers).status_code == 403
    r = t.client.post(publish, headers=t.gm)
    assert r.status_code == 409 and r.json()["code"] == "epoch_not_revealed", r.text
    revealed = reveal(t.client, cid, t.gm)
    r = t.client.post(publish, headers=t.gm)
    assert r.status_code == 200, r.text
    assert r.json()["published_at"] and r.json()["rolls"] == hidden["rolls"]
    seen = t.client.get(f"/v1/campaigns/{cid}/rolls/{hidden['id']}", headers=t.alice.headers)
    assert seen.status_code == 200 and seen.json()["rolls"] == hidden["rolls"]
    check_epoch(revealed, entry_dice(whole_log(t.client, cid, t.alice.headers)))
    assert [e["data"] for e in read_events(t.client, cid, t.alice.headers) if e["type"] == "log.published"] == [
        {"entry_id": hidden["id"]}
    ]
    # published once: again, the same entry
    assert t.client.post(publish, headers=t.gm).json() == r.json()
    shown = t.post(f"/v1/campaigns/{cid}/rolls", {"expression": "d4"})
    r = t.client.post(f"/v1/campaigns/{cid}/rolls/{shown['id']}/publish", headers=t.gm)
    assert r.status_code == 409 and r.json()["code"] == "not_hidden"


def test_table_and_seed_dice_are_outside_epochs(table):
    t = table(GC)
    hero = t.character("Hero", SHEETS[GC], kind="pc", player=t.alice)
    t.post(f"/v1/characters/{hero}/tests", {"stat": "force", "dice": [42]})
    t.post(f"/v1/campaigns/{t.c.id}/rolls", {"expression": "2d6", "seed": 7})
    assert entry_dice(whole_log(t.client, t.c.id, t.gm)) == []
    assert current(t.client, t.c.id, t.gm)["dice"] == 0


def test_a_plan_and_the_odds_take_no_number(table):
    t = table(GC)
    hero = t.character("Hero", SHEETS[GC], kind="pc", player=t.alice)
    foe = t.character("Foe", SHEETS[GC])
    s = t.encounter([{"character_id": hero}, {"character_id": foe}])
    t.start(s["id"], dice=[5, 3])
    state = t.state(s["id"])
    actor = state["current"]["combatant_id"]
    target = next(c["id"] for c in state["combatants"] if c["id"] != actor)
    r = t.client.post(
        f"/v1/encounters/{s['id']}/actions/plan",
        json={"type": "attack", "actor_id": actor, "target_id": target, "damage": "1d6"},
        headers=t.gm,
    )
    assert r.status_code == 200, r.text
    r = t.client.post(f"/v1/characters/{hero}/tests/odds", json={"stat": "force"}, headers=t.gm)
    assert r.status_code == 200, r.text
    assert current(t.client, t.c.id, t.gm)["dice"] == 0


def test_export_and_import_carry_the_epochs_and_their_numbers(table):
    t = table(GC)
    hero = t.character("Hero", SHEETS[GC], kind="pc", player=t.alice)
    t.post(f"/v1/characters/{hero}/tests", {"stat": "force"})
    revealed = reveal(t.client, t.c.id, t.gm)
    t.post(f"/v1/campaigns/{t.c.id}/rolls", {"expression": "2d6"})  # the next epoch's: no seed exported
    bundle = t.client.get(f"/v1/campaigns/{t.c.id}/export", headers=t.gm).json()
    assert [e["id"] for e in bundle["dice_epochs"]] == [revealed["id"], revealed["next"]["id"]]
    assert bundle["dice_epochs"][0]["seed"] == revealed["seed"] and bundle["dice_epochs"][1].get("seed") is None

    new = t.client.post("/v1/campaigns/import", json=bundle)
    assert new.status_code == 201, new.text
    gm = {"Authorization": f"Bearer {new.json()['gm_token']}"}
    cid = new.json()["id"]
    epochs = t.client.get(f"/v1/campaigns/{cid}/dice-epochs", headers=gm).json()["items"]
    imported = [e for e in epochs if e.get("imported")]
    assert sorted(e["id"] for e in imported) == sorted([revealed["id"], revealed["next"]["id"]])
    log = whole_log(t.client, cid, gm)
    assert {e["provenance"] for e in log} == {"imported"}  # an import vouches for no die
    old_dice = server_dice(log)
    check_epoch(next(e for e in imported if e["id"] == revealed["id"]), old_dice)  # still checkable
    # the new campaign rolls from an epoch of its own, from 0
    own = current(t.client, cid, gm)
    assert not own.get("imported") and own["dice"] == 0 and own["id"] not in {e["id"] for e in imported}
    roll = t.client.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "d8"}, headers=gm).json()
    assert [(d["epoch"], d["k"]) for d in roll["rolls"]] == [(own["id"], 0)]


def test_an_import_refuses_an_epoch_that_breaks_its_word_or_a_die_of_no_epoch(table):
    t = table(GC)
    t.post(f"/v1/campaigns/{t.c.id}/rolls", {"expression": "d6"})
    reveal(t.client, t.c.id, t.gm)
    bundle = t.client.get(f"/v1/campaigns/{t.c.id}/export", headers=t.gm).json()
    lying = {**bundle, "dice_epochs": [{**bundle["dice_epochs"][0], "seed": "00" * 32}, *bundle["dice_epochs"][1:]]}
    r = t.client.post("/v1/campaigns/import", json=lying)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "dice_epochs", "0", "seed"], r.text
    r = t.client.post("/v1/campaigns/import", json={**bundle, "dice_epochs": bundle["dice_epochs"][1:]})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][:3] == ["body", "log", "0"], r.text


def test_gc_l1_a_level_up_rolls_numbered_server_dice(table):
    """A level-up (GC-L1: two d10, the chance d100, its bonus d20s) draws from the epoch like a test."""
    t = table(GC)
    hero = t.character("Hero", SHEETS[GC], kind="pc", player=t.alice)
    body = {"mode": "two_d10", "stats": ["force", "agilite"], "chance_bonus_pool": "mp"}
    up = t.post(f"/v1/characters/{hero}/level-ups", body)
    assert [d["k"] for d in up["rolls"]] == list(range(len(up["rolls"]))) and len(up["rolls"]) >= 3
    check_epoch(reveal(t.client, t.c.id, t.gm), entry_dice(whole_log(t.client, t.c.id, t.gm)))


def test_rb_c1_an_opposed_test_rolls_numbered_server_dice(table):
    """A confrontation (RB-C1) rolls both sides' dice from the epoch, in order."""
    t = table(RB)
    hero = t.character("Hero", SHEETS[RB], kind="pc", player=t.alice)
    foe = t.character("Foe", SHEETS[RB])
    opposed = t.post(
        f"/v1/campaigns/{t.c.id}/tests/opposed",
        {"a": {"character_id": hero, "stat": "FOR"}, "b": {"character_id": foe, "stat": "FOR"}},
    )
    numbers = [d["k"] for d in server_dice(opposed)]
    assert numbers == list(range(len(numbers))) and len(numbers) >= 2
    check_epoch(reveal(t.client, t.c.id, t.gm), entry_dice(whole_log(t.client, t.c.id, t.gm)))


def test_an_entry_hidden_for_what_it_shows_is_not_the_gms_to_publish(table):
    """A combat entry players do not read because of what it shows (a pool's exact figures in a
    `status` fight), not because the GM hid it: publishing is refused (409 `not_hidden`)."""
    t = table(WA)
    hero = t.character("Aiko", SHEETS[WA], kind="pc", player=t.alice)
    ogre = t.character("Ogre", SHEETS[WA])
    s = t.encounter([{"character_id": hero}, {"character_id": ogre}], {"hp_visibility": "status"})
    t.start(s["id"])
    ogre_c = next(c["id"] for c in t.state(s["id"])["combatants"] if c["character_id"] == ogre)
    action = t.act(s["id"], {"type": "damage", "target_id": ogre_c, "amount": 1, "resource": "hp"})
    assert t.client.get(f"/v1/campaigns/{t.c.id}/rolls/{action['id']}", headers=t.bob.headers).status_code == 404
    reveal(t.client, t.c.id, t.gm)
    r = t.client.post(f"/v1/campaigns/{t.c.id}/rolls/{action['id']}/publish", headers=t.gm)
    assert r.status_code == 409 and r.json()["code"] == "not_hidden", r.text
    assert t.client.get(f"/v1/campaigns/{t.c.id}/rolls/{action['id']}", headers=t.bob.headers).status_code == 404


def test_a_published_hidden_attack_is_in_the_players_fight_history_too(table):
    """The GM's hidden attack, published after the reveal: the players read it in the fight's history
    as in the roll log, with the same dice; before, in neither."""
    t = table(GC)
    made = [t.character(n, SHEETS[GC], kind="pc", player=t.alice) for n in "ABC"]
    s = t.encounter([{"character_id": c} for c in made])
    state = t.start(s["id"], dice=[9, 5, 4])
    current_ids = set(state["current"]["combatant_ids"])
    actor, target = [c["id"] for c in state["combatants"] if c["id"] not in current_ids][:2]
    body = {"type": "attack", "actor_id": actor, "target_id": target, "kind": "ranged", "damage": "1d6"}
    hidden = t.act(s["id"], {**body, "hidden": True})
    history = f"/v1/encounters/{s['id']}/actions"

    def players_history() -> list[str]:
        return [a["id"] for a in t.client.get(history, headers=t.bob.headers).json()["items"]]

    assert hidden["id"] not in players_history()
    assert t.client.get(f"{history}/{hidden['id']}", headers=t.bob.headers).status_code == 404
    reveal(t.client, t.c.id, t.gm)
    assert t.client.post(f"/v1/campaigns/{t.c.id}/rolls/{hidden['id']}/publish", headers=t.gm).status_code == 200
    assert hidden["id"] in players_history()
    one = t.client.get(f"{history}/{hidden['id']}", headers=t.bob.headers)
    assert one.status_code == 200, one.text
    logged = t.client.get(f"/v1/campaigns/{t.c.id}/rolls/{hidden['id']}", headers=t.bob.headers).json()
    assert one.json()["rolls"] == logged["rolls"] == hidden["rolls"] and server_dice(one.json())
