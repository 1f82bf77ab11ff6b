"""What a player may see of a character (API.md), one answer for the reads and the events.

The GM and the character's owner see everything. Any other player sees what the
character's `player_access` grants — `observer` (all of it), `limited` (name, kind,
ruleset, each pool as a status word) or `none` (nothing: not listed, 404 as an
unknown id) — made stricter by the fights it is in: a hidden combatant's character
is `none` until revealed, and one in a fight whose `hp_visibility` is
`status` or `hidden` is read at most `limited` (`masked`: `limited` without its
pools, for `hidden`). The encounter view itself follows the encounter's rules."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import CompoundSelect, Connection, Select, and_, bindparam, exists, or_, select

from app.core.prepared import Prepared
from app.kit.errors import NotFound
from app.models.tables import Character, Combatant, Encounter, core_table
from app.services.records import Principal, StoredCharacter

_chr, _cbt, _enc = core_table(Character), core_table(Combatant), core_table(Encounter)

# from the least to the most a player sees: `masked` is `limited` without the pools
LEVELS = ("none", "masked", "limited", "observer")
_RANK = {level: rank for rank, level in enumerate(LEVELS)}
_FIGHT_LEVEL = {"exact": "observer", "status": "limited", "hidden": "masked"}  # hp_visibility → the most it allows


def view_version(seen: dict[str, Any]) -> int:
    """The `version` of a partial view (a `limited` character): a number computed from what the
    viewer sees (`seen`, a JSON object), so a change it cannot see leaves it, and its ETag, as they
    were (a 304 to `If-None-Match`): hidden edits cannot be counted. 48 bits of SHA-256, so the
    number stays exact in every JSON client."""
    digest = hashlib.sha256(orjson.dumps(seen, option=orjson.OPT_SORT_KEYS)).digest()
    return int.from_bytes(digest[:6], "big") or 1


def stricter(a: str, b: str) -> str:
    return a if _RANK[a] <= _RANK[b] else b


@dataclass(frozen=True)
class Standing:
    """A character's place in the campaign's fights, as far as visibility goes."""

    in_hiding: bool = False  # a hidden combatant of some fight
    at_most: str = "observer"  # the most the strictest `hp_visibility` of its fights (not ended) allows


NOT_FIGHTING = Standing()


def sees_all(principal: Principal, character: StoredCharacter) -> bool:
    """The GM and the character's owner see everything of it."""
    return principal.is_gm or (character.player_id is not None and character.player_id == principal.player_id)


def others_level(character: StoredCharacter, standing: Standing = NOT_FIGHTING) -> str:
    """What a player who is neither the GM nor the owner sees of the character."""
    if standing.in_hiding:
        return "none"
    return stricter(character.player_access, standing.at_most)


def level_for(principal: Principal, character: StoredCharacter, standing: Standing = NOT_FIGHTING) -> str:
    """What `principal` sees of the character: `observer`, `limited`, `masked` or `none`."""
    return "observer" if sees_all(principal, character) else others_level(character, standing)


# --- the fights a character is in ------------------------------------------------------

_STANDINGS = (
    select(_cbt.c.character_id, _cbt.c.hidden, _enc.c.status, _enc.c.options)
    .join(_enc, _enc.c.id == _cbt.c.encounter_id)
    .where(_enc.c.campaign_id == bindparam("campaign_id"), _cbt.c.character_id.in_(bindparam("ids", expanding=True)))
)


def standings(conn: Connection, campaign_id: str, character_ids: Iterable[str]) -> dict[str, Standing]:
    """Each character's standing (characters in no fight are left out), in one query."""
    ids = sorted(set(character_ids))
    if not ids:
        return {}
    found: dict[str, Standing] = {}
    for cid, hidden, status, options in conn.execute(_STANDINGS, {"campaign_id": campaign_id, "ids": ids}):
        found[cid] = standing_in(found.get(cid, NOT_FIGHTING), hidden=hidden, status=status, options=options)
    return found


def standing_in(now: Standing, *, hidden: bool, status: str, options: dict[str, Any] | None) -> Standing:
    """`now` made stricter by one more fight showing the character: a combatant `hidden` or not, of an
    encounter of this status and options."""
    shown = "exact" if status == "ended" else (options or {}).get("hp_visibility", "exact")
    at_most = stricter(now.at_most, _FIGHT_LEVEL.get(shown, "observer"))
    return Standing(in_hiding=now.in_hiding or bool(hidden), at_most=at_most)


def standing_of(conn: Connection, character: StoredCharacter) -> Standing:
    """One character's standing (`standings` for it alone)."""
    return standings(conn, character.campaign_id, [character.id]).get(character.id, NOT_FIGHTING)


# --- characters a player may not know of -----------------------------------------------

_NOT_OWNED = or_(_chr.c.player_id.is_(None), _chr.c.player_id != bindparam("player_id"))


def in_hiding_from_player() -> Select[str]:
    """The ids of the characters of hidden combatants that the player `:player_id` (null: any
    player but an owner) does not own, in the campaign `:campaign_id`."""
    return (
        select(_cbt.c.character_id)
        .join(_enc, _enc.c.id == _cbt.c.encounter_id)
        .join(_chr, _chr.c.id == _cbt.c.character_id)
        .where(_enc.c.campaign_id == bindparam("campaign_id"), _cbt.c.hidden == True, _NOT_OWNED)  # noqa: E712
    )


def _without_access(seen_whole: bool) -> Select[str]:
    """Characters the player does not own with `player_access` `none` (or, `seen_whole`, anything but `observer`)."""
    access = _chr.c.player_access != "observer" if seen_whole else _chr.c.player_access == "none"
    return select(_chr.c.id).where(_chr.c.campaign_id == bindparam("campaign_id"), access, _NOT_OWNED)


def hidden_from_player() -> CompoundSelect[str]:
    """The ids of the characters unknown to the player `:player_id` (null: any player but an
    owner) in the campaign `:campaign_id`: those it does not own whose `player_access` is
    `none`, or that are a hidden combatant's."""
    return in_hiding_from_player().union(_without_access(seen_whole=False))


def not_seen_whole() -> Select[str]:
    """The ids of the characters the player `:player_id` does not own and does not see whole
    (`player_access` `limited` or `none`) in the campaign `:campaign_id`: the roll log leaves out
    their entries (their figures are the sheet's), but for combat ones."""
    return _without_access(seen_whole=True)


_HIDDEN_ONE = Prepared(
    select(
        exists(
            select(_cbt.c.id)
            .join(_enc, _enc.c.id == _cbt.c.encounter_id)
            .where(
                and_(
                    _enc.c.campaign_id == bindparam("campaign_id"),
                    _cbt.c.character_id == bindparam("character_id"),
                    _cbt.c.hidden == True,  # noqa: E712 (SQL expression)
                )
            )
        )
    )
)


def hidden_character(
    conn: Connection, principal: Principal, character: StoredCharacter, in_hiding_rows: list[tuple] | None = None
) -> bool:
    """Whether the character is unknown to the caller: a player, not its owner, when its
    `player_access` is `none` or one of its combatants is hidden. `in_hiding_rows`: the rows
    of `in_hiding_query` for it, when the caller read them already (else they are read here)."""
    if sees_all(principal, character):
        return False
    if character.player_access == "none":
        return True
    if in_hiding_rows is None:
        in_hiding_rows = _HIDDEN_ONE.all(conn, {"campaign_id": character.campaign_id, "character_id": character.id})
    return in_hiding(in_hiding_rows)


def check_visible(
    conn: Connection, principal: Principal, character: StoredCharacter, in_hiding_rows: list[tuple] | None = None
) -> None:
    """404 for a character the caller may not know of (as for one that does not exist)."""
    if hidden_character(conn, principal, character, in_hiding_rows):
        raise NotFound("no character with this id")


def in_hiding_query(campaign_id: str, character_id: str) -> tuple[Prepared, dict[str, str]]:
    """Whether a character is a hidden combatant of one of the campaign's fights (to run with
    other statements: `fetch_together`; `in_hiding` reads its rows)."""
    return _HIDDEN_ONE, {"campaign_id": campaign_id, "character_id": character_id}


def in_hiding(rows: list[tuple] | None) -> bool:
    return bool(rows and rows[0][0])


# --- events: who receives what -----------------------------------------------------------


def lost_sight(conn: Connection, before: StoredCharacter, after: StoredCharacter) -> bool:
    """Whether the players other than its owner saw the character before a change and may not now
    (`player_access` made `none`): they then get `character.hidden` (its id, which they knew), their
    `character.updated` being withheld. A player that never saw it hears nothing of it."""
    standing = standing_of(conn, after)
    return others_level(before, standing) != "none" and others_level(after, standing) == "none"


@dataclass(frozen=True)
class Audience:
    """Who receives an event about characters (`events.record`'s arguments): the GM always;
    `owner_id` (a player) the full payload even when `hidden`; the other players nothing
    when `hidden`, else the payload made for them (`player_data`) or the full one."""

    hidden: bool = False
    owner_id: str | None = None
    player_data: dict[str, Any] | None = None

    def record_args(self) -> dict[str, Any]:
        return {"hidden": self.hidden, "owner_id": self.owner_id, "player_data": self.player_data}


def about(
    conn: Connection,
    characters: Iterable[StoredCharacter],
    *,
    hidden: bool = False,
    in_hiding_rows: dict[str, list[tuple]] | None = None,
) -> Audience:
    """The audience of an event (a log entry's) about these characters: hidden from the other
    players as soon as one of them is unknown to them; the owner of those characters, when
    there is one and it may see all of them, still receives it. `hidden`: the entry is the
    GM's alone (a hidden roll)."""
    characters = list(characters)
    if hidden:
        return Audience(hidden=True)
    rows = in_hiding_rows or {}
    campaign_id = characters[0].campaign_id if characters else ""

    def unknown_to(player_id: str | None) -> bool:  # or not seen whole, as the roll log has it
        viewer = Principal(campaign_id, "player", player_id, "")
        return any(
            hidden_character(conn, viewer, c, rows.get(c.id))
            or (c.player_access == "limited" and not sees_all(viewer, c))
            for c in characters
        )

    if not unknown_to(None):
        return Audience()
    owners = {c.player_id for c in characters if c.player_id is not None}
    owner = next(iter(owners)) if len(owners) == 1 else None
    return Audience(hidden=True, owner_id=owner if owner is not None and not unknown_to(owner) else None)
