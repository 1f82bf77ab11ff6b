"""An attack that rolls the server's dice claims its campaign's dice epoch in its load's round trip
on PostgreSQL (after the encounter and the characters it locks: the writers' order), not in a round
trip of its own at its first die. An action that then needs a character it did not lock there runs
again claiming the epoch at its first die: no character is ever locked after the epoch."""

from __future__ import annotations

import pytest

from app.services import epoch_store
from app.services.encounters import store
from tests.api.encounter_support import ids
from tests.factories import gc_fighter
from tests.rulesets.asgard.test_combat import extra, hero


@pytest.fixture
def claims(monkeypatch) -> list[str]:
    """The campaigns whose epoch was claimed at a first die (`epoch_store.claim`), in order."""
    seen: list[str] = []
    claim = epoch_store.claim

    def counted(conn, campaign_id):
        seen.append(campaign_id)
        return claim(conn, campaign_id)

    monkeypatch.setattr(epoch_store, "claim", counted)
    return seen


@pytest.fixture
def early(monkeypatch) -> list[str]:
    """The encounters whose attempt found the epoch claimed too early (then run again)."""
    seen: list[str] = []
    original = store.load_characters

    def watched(fight, character_ids, *, lock):
        try:
            return original(fight, character_ids, lock=lock)
        except store.EpochClaimedEarly:
            seen.append(fight.id)
            raise

    monkeypatch.setattr(store, "load_characters", watched)
    return seen


def _on_postgres(t) -> bool:
    return t.client.app.state.sessions.database()[0].startswith("postgres")


def _ks(t, action: dict) -> list[int]:
    rolls = [r for r in action["rolls"] if "epoch" in r]
    assert rolls and all(r["epoch"] == _current(t)["id"] for r in rolls), action["rolls"]
    return [r["k"] for r in rolls]


def _current(t) -> dict:
    return t.client.get(f"/v1/campaigns/{t.c.id}/dice-epochs/current", headers=t.gm).json()


def test_an_attack_claims_the_epoch_with_the_encounters_load(table, claims):
    t = table("great-cosmos")
    s = t.encounter([{"character_id": t.character(name, gc_fighter())} for name in "ABC"])
    state = t.start(s["id"], dice=[5, 6, 4])
    current = set(state["current"]["combatant_ids"])  # the GM's attacks between the others use no turn
    actor, target = [c["id"] for c in state["combatants"] if c["id"] not in current][:2]
    body = {"type": "attack", "actor_id": actor, "target_id": target, "kind": "ranged", "damage": "1d6"}
    first = t.act(s["id"], body)
    second = t.act(s["id"], body)
    ks = _ks(t, first) + _ks(t, second)
    assert ks == list(range(len(ks))) and _current(t)["dice"] == len(ks)  # gapless, in log order
    # PostgreSQL: claimed with the load, never at a first die; SQLite (no round trips): at the first die
    assert claims == ([] if _on_postgres(t) else [t.c.id, t.c.id])
    # table dice: no server die, no claim anywhere
    t.act(s["id"], {**body, "dice": [90]})  # a miss: one die
    assert _current(t)["dice"] == len(ks)


def test_as_c11_a_group_attack_locks_its_members_before_the_epoch(table, claims, early):
    """The group's members are not named by `actor_id`/`target_id`: they are locked after the load.
    On PostgreSQL the attempt that claimed the epoch with the load is rolled back and run again,
    claiming it at the first die; its dice are numbered once, with no gap."""
    t = table("asgard")
    s = t.encounter(
        [
            {"character_id": t.character("Hero", hero(), kind="pc", player=t.alice)},
            {"character_id": t.character("E1", extra())},
            {"character_id": t.character("E2", extra())},
        ]
    )
    eid, n = s["id"], ids(s)
    t.start(eid, dice=[1, 1, 2, 4, 4, 4, 3, 3, 3])  # E1 12, E2 9, Hero 9: E1 first
    a = t.act(eid, {"type": "attack", "actor_id": n["E1"], "target_id": n["Hero"], "group": [n["E2"]]})
    ks = _ks(t, a)
    assert ks == list(range(len(ks))) and _current(t)["dice"] == len(ks)
    if _on_postgres(t):
        assert early == [eid] and claims == [t.c.id]  # run again, then claimed at its first die
    else:
        assert early == [] and claims == [t.c.id]
