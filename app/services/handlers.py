"""The one handler of what a unit of work changed in characters (`app.services.changed`), run by
the unit of work before its commit (cosmicpython's message bus, with a single handler): each
change is told to each viewer as that viewer may read it (`character.created`, `character.updated`,
`character.hidden`, `character.deleted`), and every fight showing a changed character moves (its
version, hence its ETag, and its `encounter.updated`: `shown.move`). No use case does either itself
(tests/test_one_handler.py).

Everything it reads (who sees what, the fights, locked in the order `FightLocks` decides) is read
when the unit of work asks (`UnitOfWork.telling`); what it writes is handed back, to run in the
unit of work's `writes()` batch if there is one."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from app.services import characters
from app.services.changed import (
    Change,
    CharacterChanged,
    CharacterCreated,
    CharacterDeleted,
    Seen,
    Telling,
)
from app.services.encounters import shown
from app.services.encounters.view import quiet_change
from app.services.uow import UnitOfWork, handle_changes_with
from app.services.visibility import lost_sight


def tell(uow: UnitOfWork, changes: list[Change]) -> Telling:
    """Read and lock what these changes need; return their writes: the deleted rows, the fights
    moved (each once, after the rows), then each change's events in the order said."""
    conn, ruleset = uow.conn, uow.ruleset()
    edits = [c for c in changes if isinstance(c, CharacterChanged)]
    deleted = [c for c in changes if isinstance(c, CharacterDeleted)]
    out = Telling()

    # the fights: those showing a character whose view there changed, or that is deleted
    shows = [c for c in edits if shown.shows_a_change(c.before, c.after)]
    moving = [c.after.id for c in shows] + [c.character.id for c in deleted]
    fights = [f for f in uow.locks.showing(moving) if f.id != uow.own_fight] if moving else []
    out.moves += [partial(uow.characters.remove, c.character) for c in deleted]
    if fights:
        if not deleted and all(c.hidden for c in shows):  # a hidden roll's or action's: the GM's alone
            fights = [f._replace(hidden=True) for f in fights]
        pairs = [(c.before, c.after) for c in shows if c.after.id not in uow.locks.alone]  # those fights show
        quiet = None if deleted else quiet_change(ruleset, pairs)
        out.moves.append(partial(shown.move, uow, fights, quiet=quiet))
        uow.locks.moving(moving)

    # the events, each as its viewers may read it
    told: dict[int, list[Callable[[], object]]] = {}
    known = uow.known_standings() if uow.known_standings is not None else None
    for hidden in (False, True):  # the changes saved by a roll or an action: their fights read at once
        plain = [c for c in edits if not c.edited and c.hidden == hidden]
        made = characters.updated_events(
            conn, [c.after for c in plain], ruleset, hidden=hidden, not_fighting=uow.not_fighting, known=known
        )
        for edit, (data, args) in zip(plain, made, strict=True):
            told[id(edit)] = [partial(uow.record, "character.updated", data, **args)]
            theirs = args["player_data"]
            version = edit.after.version if theirs is None else theirs["version"]
            out.seen[edit.after.id] = Seen(edit.after, bool(args["hidden"]), version)
    for c in changes:
        if isinstance(c, CharacterCreated):
            who = characters.audience(conn, c.character, ruleset, hidden=c.hidden)
            public = characters.public(c.character, ruleset)
            told[id(c)] = [partial(uow.record, "character.created", public, **who.record_args())]
        elif isinstance(c, CharacterDeleted):
            who = characters.audience(conn, c.character, ruleset, hidden=c.hidden)
            args = {"hidden": who.hidden, "owner_id": who.owner_id}
            told[id(c)] = [partial(uow.record, "character.deleted", {"id": c.character.id}, **args)]
        elif c.edited:
            who = characters.audience(conn, c.after, ruleset, hidden=c.hidden, before=c.before)
            public = characters.public(c.after, ruleset)
            told[id(c)] = [partial(uow.record, "character.updated", public, **who.record_args())]
            # the players' pages drop its card at once
            if c.before.player_access != c.after.player_access and lost_sight(conn, c.before, c.after):
                told[id(c)].append(partial(uow.record, "character.hidden", {"id": c.after.id}))
        out.events += told[id(c)]
    return out


handle_changes_with(tell)
