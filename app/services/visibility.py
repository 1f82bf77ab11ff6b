"""Characters hidden from players (issue 13's encounters, visibility): a character in a fight as a
hidden combatant is the GM's, and its owner's, until the combatant is revealed."""
from __future__ import annotations

from sqlalchemy import bindparam, exists, or_, select

from app.kit.errors import NotFound
from app.models.tables import Character, Combatant, Encounter
from app.services.auth import Principal
from app.services.prepared import Prepared
from app.services.uow import StoredCharacter

# A character in a fight as a hidden combatant (an NPC copy made for it, or any character
# the GM put in hidden) is the GM's, and its owner's, until the combatant is revealed: the
# character routes, the roll log and the character events never show it to other players
# (API.md, encounters' visibility: a player never sees a hidden combatant).

_chr, _cbt, _enc = Character.__table__, Combatant.__table__, Encounter.__table__


def hidden_from_player():
    """The ids of the characters hidden from the player `:player_id` (null: any player) in the
    campaign `:campaign_id`: characters of its hidden combatants that the player does not own."""
    return (select(_cbt.c.character_id)
            .join(_enc, _enc.c.id == _cbt.c.encounter_id)
            .join(_chr, _chr.c.id == _cbt.c.character_id)
            .where(_enc.c.campaign_id == bindparam("campaign_id"), _cbt.c.hidden == True,  # noqa: E712
                   or_(_chr.c.player_id.is_(None), _chr.c.player_id != bindparam("player_id"))))


_HIDDEN_FROM_PLAYER = Prepared(hidden_from_player())


def hidden_character_ids(conn, principal: Principal, campaign_id: str) -> list[str]:
    """The ids of the campaign's characters hidden from the caller (none for the GM), in one query."""
    if principal.is_gm:
        return []
    rows = _HIDDEN_FROM_PLAYER.all(conn, {"campaign_id": campaign_id, "player_id": principal.player_id})
    return sorted({row[0] for row in rows})


_HIDDEN_ONE = Prepared(select(exists(
    select(_cbt.c.id).join(_enc, _enc.c.id == _cbt.c.encounter_id)
    .where(_enc.c.campaign_id == bindparam("campaign_id"), _cbt.c.character_id == bindparam("character_id"),
           _cbt.c.hidden == True))))  # noqa: E712


def hidden_character(conn, principal: Principal, character: StoredCharacter, in_hiding_rows=None) -> bool:
    """Whether the caller may not see this character: a player, not its owner, while one of
    its combatants is hidden. `in_hiding_rows`: the rows of `in_hiding_query` for it, when
    the caller read them already (else they are read here)."""
    if principal.is_gm or (character.player_id is not None and character.player_id == principal.player_id):
        return False
    if in_hiding_rows is None:
        in_hiding_rows = _HIDDEN_ONE.all(conn, {"campaign_id": character.campaign_id, "character_id": character.id})
    return in_hiding(in_hiding_rows)


def check_visible(conn, principal: Principal, character: StoredCharacter, in_hiding_rows=None) -> None:
    """404 for a character the caller may not see (as for one that does not exist)."""
    if hidden_character(conn, principal, character, in_hiding_rows):
        raise NotFound("no character with this id")


def in_hiding_query(campaign_id: str, character_id: str) -> tuple[Prepared, dict[str, str]]:
    """Whether a character is a hidden combatant of one of the campaign's fights (to run with
    other statements: `fetch_together`; `in_hiding` reads its rows)."""
    return _HIDDEN_ONE, {"campaign_id": campaign_id, "character_id": character_id}


def in_hiding(rows) -> bool:
    return bool(rows and rows[0][0])


def gms_only(conn, character: StoredCharacter, in_hiding_rows=None) -> bool:
    """Whether what happens to this character is for the GM alone: an unowned character in hiding
    (an owned one's events still reach its owner, so every player: events are the GM's or everyone's)."""
    nobody = Principal(character.campaign_id, "player", None, "")  # any player but an owner
    return character.player_id is None and hidden_character(conn, nobody, character, in_hiding_rows)
