"""An action's `character.updated` events are worded for each player by the character's standing in
the campaign's fights (a hidden combatant's character is none of their business, a `status` fight
shows its pools as words). The fight's load says which of its characters no other fight shows: their
standing comes from the fight's own rows, with no query; the others' is read, as before."""

from __future__ import annotations

from typing import Any

import pytest

from app.services import characters
from app.services.encounters.store import Fight
from tests.api.support import read_events
from tests.factories import gc_fighter

DICE = [10, 90, 4]  # GC-P3 attack 10 (a hit), GC-P2 dodge 90 (missed), 1d6 damage 4
_VARYING = {"id", "campaign_id", "player_id", "created_at", "updated_at", "version"}


@pytest.fixture
def asked(monkeypatch) -> list[list[str]]:
    """The characters whose standings were read by a query, one list per query."""
    seen: list[list[str]] = []
    original = characters.standings

    def counted(conn, campaign_id, ids):
        seen.append(sorted(ids))
        return original(conn, campaign_id, ids)

    monkeypatch.setattr(characters, "standings", counted)
    return seen


def _told(t, after: int, headers) -> list[tuple[str, Any]]:
    """The `character.updated` events after `after` as these headers read them, without what differs
    between two campaigns (ids, times, versions)."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in sorted(value.items()) if k not in _VARYING}
        return [plain(v) for v in value] if isinstance(value, list) else value

    events = read_events(t.client, t.c.id, headers, after=after)
    told = [(e["data"]["name"], plain(e["data"])) for e in events if e["type"] == "character.updated"]
    return sorted(told, key=lambda pair: pair[0])  # in the order of their ids, random


def _attack_told(t, *, hp_visibility: str, hidden_target: bool, elsewhere: bool) -> dict[str, Any]:
    """A GM's attack in a fight of three of Alice's characters (the target hidden, or also in another
    fight, when asked): what Bob, Alice and the GM are told of the characters it changed."""
    made = {n: t.character(n, gc_fighter(), kind="pc", player=t.alice) for n in "ABC"}
    s = t.encounter(
        [{"character_id": c, **({"hidden": True} if hidden_target and n == "B" else {})} for n, c in made.items()],
        options={"hp_visibility": hp_visibility},
    )
    if elsewhere:
        t.encounter([{"character_id": made["B"]}], options={"hp_visibility": "hidden"})
    state = t.start(s["id"], dice=[9, 5, 4])  # A first: B and C are not acting
    by_name = {c["name"]: c["id"] for c in state["combatants"]}
    after = max((e["id"] for e in read_events(t.client, t.c.id, t.gm)), default=0)
    body = {"type": "attack", "actor_id": by_name["C"], "target_id": by_name["B"], "kind": "ranged", "damage": "1d6"}
    t.act(s["id"], {**body, "dice": DICE})
    return {
        who: _told(t, after, headers)
        for who, headers in (("bob", t.bob.headers), ("alice", t.alice.headers), ("gm", t.gm))
    }


CASES = [
    pytest.param("exact", False, False, id="exact"),
    pytest.param("status", False, False, id="status"),
    pytest.param("hidden", False, False, id="hidden-hp"),
    pytest.param("exact", True, False, id="hidden-target"),
    pytest.param("exact", False, True, id="target-in-another-fight"),
]


@pytest.mark.parametrize(("hp_visibility", "hidden_target", "elsewhere"), CASES)
def test_an_actions_events_are_told_as_the_standings_query_would_word_them(
    table, asked, monkeypatch, hp_visibility, hidden_target, elsewhere
):
    known = _attack_told(
        table("great-cosmos"), hp_visibility=hp_visibility, hidden_target=hidden_target, elsewhere=elsewhere
    )
    # no query for the characters only this fight shows; the target another fight shows is read
    queries_known = [len(a) for a in asked]
    asked.clear()
    monkeypatch.setattr(Fight, "stored_standings", lambda self: {})  # every standing read by the query
    read = _attack_told(
        table("great-cosmos"), hp_visibility=hp_visibility, hidden_target=hidden_target, elsewhere=elsewhere
    )
    # the two characters the attack changed, in one query (none for a hidden combatant's: the GM's)
    assert [len(a) for a in asked] == ([] if hidden_target else [2])
    assert known == read
    assert queries_known == ([1] if elsewhere else [])
    assert read["gm"], "the attack changed both characters: the GM is told"
