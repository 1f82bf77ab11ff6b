"""The unit of work of every use case that writes (cosmicpython's `unit_of_work.py`):
one transaction, ONE character repository (one loader, one versioned writer), the
roll log and the event outbox, committed once — a failure leaves nothing behind.

    with UnitOfWork(session, campaign_id) as uow:
        [hero] = uow.characters.load([hero_id])        # locked until the commit
        uow.characters.save(hero, sheet=new_sheet)     # only if nobody wrote since: else StaleVersion
        uow.commit()

`retried` runs a use case again on fresh state when it lost a race. Everything on
the hot path is a prepared SQLAlchemy Core statement (the ORM costs more than the rules).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields, replace
from datetime import datetime
from functools import partial, wraps
from types import TracebackType
from typing import Any, NamedTuple, Protocol, Self, TypeVar

from sqlalchemy import (
    JSON,
    Connection,
    Integer,
    Table,
    Text,
    bindparam,
    cast,
    delete,
    exists,
    func,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlmodel import Session

from app.core.json_codec import dumps_text
from app.core.prepared import Batch, Prepared, batch, fetch_together
from app.kit.errors import Conflict, NotFound
from app.models.tables import (
    NO_FIGURES,
    Campaign,
    Character,
    Combatant,
    Credential,
    Encounter,
    LogEntry,
    LogEntryCharacter,
    core_table,
)
from app.models.validation import InvalidBody
from app.rules.dice import EpochClaim
from app.rulesets.events import EventName
from app.services import epoch_store, events
from app.services.changed import Change, Telling
from app.services.locks import NO_KEY_UPDATE, FightLocks, StaleVersion
from app.services.records import Principal, StoredCharacter
from app.services.visibility import Standing

MAX_ATTEMPTS = 8
BUSY = "the character is being changed by too many requests at once; try again"  # `retried` gave up
T = TypeVar("T")


def default_access(kind: str) -> str:
    """API.md: a PC is `observer` to the other players by default, an NPC `none`."""
    return "none" if kind == "npc" else "observer"


def stale(error: DBAPIError) -> bool:
    """A PostgreSQL save that found another version (see `_PG_SAVE`)."""
    return getattr(error.orig, "sqlstate", None) == _STALE_SQLSTATE


_character = core_table(Character)
_campaign = core_table(Campaign)
_log = core_table(LogEntry)
_COLUMNS = [_character.c[f.name] for f in fields(StoredCharacter)]
# every read by id names the campaign too: a lock never reaches another campaign's row
_OF_CAMPAIGN = _character.c.campaign_id == bindparam("campaign_id")
_SELECT = (
    select(*_COLUMNS)
    .where(_character.c.id.in_(bindparam("ids", expanding=True)), _OF_CAMPAIGN)
    .order_by(_character.c.id)
)
_SELECT_LOCKED = _SELECT.with_for_update()
_INSERT = insert(_character)
_SAVE = (
    update(_character)
    .where(_character.c.id == bindparam("character_id"), _character.c.version == bindparam("expected_version"))
    .values(
        name=bindparam("name"),
        kind=bindparam("kind"),
        player_id=bindparam("player_id"),
        sheet=bindparam("sheet"),
        version=bindparam("new_version"),
        updated_at=bindparam("now"),
        player_access=bindparam("player_access"),
        client_metadata=bindparam("client_metadata"),
    )
)
_DELETE = Prepared(delete(_character).where(_character.c.id == bindparam("character_id")))  # (in a batch too)
_CAMPAIGN = select(_campaign.c.id, _campaign.c.ruleset, _campaign.c.options).where(_campaign.c.id == bindparam("id"))

# the hot path's statements on the DBAPI cursor (app.core.prepared): one character, the campaign, the save
_SELECT_ONE = select(*_COLUMNS).where(_character.c.id == bindparam("id"), _OF_CAMPAIGN)
_FAST_SELECT_ONE = Prepared(_SELECT_ONE)
_FAST_SELECT_ONE_LOCKED = Prepared(_SELECT_ONE.with_for_update())
_FAST_SAVE = Prepared(_SAVE)
# in a batch on PostgreSQL: a save that finds another version fails the statement itself
# (division by zero, SQLSTATE 22012: read as StaleVersion), which aborts the transaction,
# so a batch can carry the COMMIT after it (it then does not run)
_PG_SAVE_CTE = _SAVE.returning(_character.c.version).cte("saved")
_PG_SAVE_OR_FAIL = select(
    literal(1, Integer).op("/", return_type=Integer)(select(func.count()).select_from(_PG_SAVE_CTE).scalar_subquery())
)
_STALE_SQLSTATE = "22012"
_FAST_SAVE_IN_BATCH = Prepared(_SAVE, postgresql=_PG_SAVE_OR_FAIL)
_FAST_CAMPAIGN = Prepared(_CAMPAIGN)


_credential, _combatant, _encounter = core_table(Credential), core_table(Combatant), core_table(Encounter)
# ONE statement opens a rolling operation on one character: the character
# (locked until the commit: `FOR UPDATE OF character` on PostgreSQL), its campaign's ruleset and
# options, whether the caller's credential still exists, whether the character is a hidden
# combatant of one of the campaign's fights (a player who does not own it learns nothing of it),
# and whether it is in any fight at all (when not, its `character.updated` needs no standings read)
_in_fights = (
    select(_combatant.c.id)
    .join(_encounter, _encounter.c.id == _combatant.c.encounter_id)
    .where(_encounter.c.campaign_id == _character.c.campaign_id, _combatant.c.character_id == _character.c.id)
)
_OPENING = Prepared(
    select(
        *_COLUMNS,
        _campaign.c.ruleset,
        _campaign.c.options,
        exists().where(_credential.c.token_hash == bindparam("token_hash")).label("alive"),
        exists(_in_fights.where(_combatant.c.hidden == True)).label("in_hiding"),  # noqa: E712 (SQL)
        exists(_in_fights).label("fighting"),
    )
    .join(_campaign, _campaign.c.id == _character.c.campaign_id)
    .where(_character.c.id == bindparam("id"), _character.c.campaign_id == bindparam("campaign_id"))
    .with_for_update(of=_character)
)


class Opening(NamedTuple):
    """What `open_on` read: the character (locked), its campaign, the caller's credential alive,
    the character in hiding, in a fight."""

    character: StoredCharacter
    campaign: CampaignRow
    alive: bool
    in_hiding: bool
    fighting: bool


def open_on(
    conn: Connection, campaign_id: str, character_id: str, token_hash: str, *, epochs: EpochClaim | None = None
) -> Opening | None:
    """The opening of a rolling operation on one character of `campaign_id` in one statement (see
    `_OPENING`); None when the character is not in that campaign (the caller then reads what it
    needs one by one, to answer in the refusal order: 401, the campaign's 404, the character's).
    `epochs`: an operation that will roll server dice claims the campaign's current dice epoch in
    the same round trip (after the character: the writers' order), instead of at its first die."""
    params = {"id": character_id, "campaign_id": campaign_id, "token_hash": token_hash}
    if epochs is None:
        row = _OPENING.first(conn, params)
    else:
        opened, claimed = fetch_together(conn, [(_OPENING, params), epoch_store.claim_query(campaign_id)])
        row = opened[0] if opened else None
        if claimed:
            epochs.given(epoch_store.epoch_of(claimed[0]))
    if row is None:
        return None
    n = len(_COLUMNS)
    ruleset, options, alive, in_hiding, fighting = row[n:]
    return Opening(
        StoredCharacter(*row[:n]),
        CampaignRow(campaign_id, ruleset, options),
        bool(alive),
        bool(in_hiding),
        bool(fighting),
    )


def json_text_insert(table: Table, column: str) -> Prepared:
    """INSERT of `table` whose JSON `column` is given as its JSON text (encoded once by the caller)."""
    names = [c.name for c in table.columns if c.name not in (column, "seq")]  # `seq`: the database numbers it
    values = {n: bindparam(n, type_=table.c[n].type) for n in names}
    return Prepared(
        insert(table).values(**values, **{column: bindparam(column, type_=Text)}),
        postgresql=insert(table).values(**values, **{column: cast(bindparam(column, type_=Text), JSON)}),
    )


_FAST_INSERT_LOG = json_text_insert(_log, "body")
# RollLog: an entry with its body as a dict, and an other character of an entry found by the entry's id
_FAST_INSERT_LOG_ROW = Prepared(
    insert(_log).values(**{c.name: bindparam(c.name, type_=c.type) for c in _log.columns if c.name != "seq"})
)
_log_character = core_table(LogEntryCharacter)
_FAST_INSERT_LOG_CHARACTER = Prepared(
    insert(_log_character).from_select(
        ["character_id", "seq"],
        select(
            cast(
                bindparam("character_id", type_=_log_character.c.character_id.type), _log_character.c.character_id.type
            ),
            _log.c.seq,
        ).where(_log.c.id == bindparam("entry_id")),
    )
)


def json_text(value: Any) -> str:
    """The JSON text of `value` as the API sends it (compact, UTF-8: `json_codec`), so that one
    encoding serves the database and the response."""
    return dumps_text(value)


def saved(before: StoredCharacter, *, now: datetime, **changes: Any) -> StoredCharacter:
    """The character as `CharacterRepository.save` writes it: `changes`, the next version, `now`."""
    return replace(before, **changes, version=before.version + 1, updated_at=now)


class CharacterRepository:
    """The characters of one campaign: the one loader and the one versioned writer
    of every use case (rolling operations and character writes alike)."""

    def __init__(self, conn: Connection, campaign_id: str) -> None:
        self.conn, self.campaign_id = conn, campaign_id
        self.batch: Batch | None = None  # while the unit of work's writes are batched (`UnitOfWork.writes`)

    def load(self, character_ids: Sequence[str], *, lock: bool = True) -> list[StoredCharacter]:
        """The characters in the order asked; locked until the commit (taken in id
        order, against deadlocks: `FOR UPDATE` on PostgreSQL; SQLite's writer holds
        the whole database already). 404 for one not in this campaign."""
        if len(set(character_ids)) != len(character_ids):
            raise InvalidBody("the same character is named twice", field="character_id", code="named_twice")
        if not character_ids:
            return []
        found = self._select(character_ids, lock)
        missing = [cid for cid in character_ids if cid not in found]
        if missing:
            # the words of a character a player may not know of (`visibility.check_visible`): a
            # made-up id and a secret NPC's answer the same bytes
            raise NotFound("no character with this id")
        return [found[cid] for cid in character_ids]

    def find(self, character_ids: Sequence[str], *, lock: bool = False) -> dict[str, StoredCharacter]:
        """Those of `character_ids` that are in this campaign, by id (no 404: a deleted one is
        simply absent); locked until the commit when `lock` (in id order)."""
        return self._select(sorted(set(character_ids)), lock) if character_ids else {}

    def get(self, character_id: str, *, lock: bool = False) -> StoredCharacter:
        """One character (404 'no character with this id' unless it is in this campaign)."""
        found = self._select([character_id], lock).get(character_id)
        if found is None:
            raise NotFound("no character with this id")
        return found

    def _select(self, character_ids: Sequence[str], lock: bool) -> dict[str, StoredCharacter]:
        campaign_id = self.campaign_id
        if len(character_ids) == 1:
            params = {"id": character_ids[0], "campaign_id": campaign_id}
            return self._found((_FAST_SELECT_ONE_LOCKED if lock else _FAST_SELECT_ONE).all(self.conn, params))
        many = {"ids": list(character_ids), "campaign_id": campaign_id}
        return self._found(self.conn.execute(_SELECT_LOCKED if lock else _SELECT, many).all())

    def _found(self, rows: Sequence[tuple]) -> dict[str, StoredCharacter]:
        characters = (StoredCharacter(*r) for r in rows)
        return {c.id: c for c in characters if c.campaign_id == self.campaign_id}

    def add(
        self,
        *,
        id: str,
        player_id: str | None,
        name: str,
        kind: str,
        sheet: dict[str, Any],
        now: datetime,
        player_access: str | None = None,
        client_metadata: dict[str, str] | None = None,
    ) -> StoredCharacter:
        character = StoredCharacter(
            id,
            self.campaign_id,
            name,
            kind,
            player_id,
            sheet,
            1,
            now,
            now,
            player_access or default_access(kind),
            client_metadata or {},
        )
        self.conn.execute(_INSERT, {f.name: getattr(character, f.name) for f in fields(StoredCharacter)})
        return character

    def save(self, before: StoredCharacter, *, now: datetime, **changes: Any) -> StoredCharacter:
        """Write `changes` (name, kind, player_id, sheet, player_access, client_metadata) only if the stored version is
        still `before.version` (else StaleVersion); returns the new state (version + 1)."""
        after = saved(before, now=now, **changes)
        cursor = (_FAST_SAVE if self.batch is None else _FAST_SAVE_IN_BATCH).run(
            self.conn,
            {
                "character_id": before.id,
                "expected_version": before.version,
                "name": after.name,
                "kind": after.kind,
                "player_id": after.player_id,
                "sheet": after.sheet,
                "new_version": after.version,
                "now": now,
                "player_access": after.player_access,
                "client_metadata": after.client_metadata,
            },
        )

        def stale() -> None:
            raise StaleVersion(before.id)

        if self.batch is not None:
            self.batch.expect_one(cursor, stale)  # checked when the batch is sent
        elif cursor.rowcount != 1:
            stale()
        return after

    def remove(self, character: StoredCharacter) -> None:
        """Delete its row: the handler of a `CharacterDeleted` does (`UnitOfWork.changed`)."""
        _DELETE.run(self.conn, {"character_id": character.id})


def load_campaign(session: Session, principal: Principal, campaign_id: str, *, for_update: bool = False) -> Campaign:
    """The caller's campaign (404 else: the route's access checked it is the caller's, `auth.granted`);
    `for_update`: locked FOR NO KEY UPDATE until the commit (`app.services.locks`: the lock order)."""
    campaign = session.get(Campaign, campaign_id, with_for_update=NO_KEY_UPDATE if for_update else None)
    if campaign is None:
        raise NotFound("no campaign with this id")
    return campaign


def read_campaign(conn: Connection, campaign_id: str) -> CampaignRow:
    """A campaign's row (id, ruleset, options), or 404."""
    return campaign_of(_FAST_CAMPAIGN.all(conn, {"id": campaign_id}))


def campaign_query(campaign_id: str) -> tuple[Prepared, dict[str, Any]]:
    """The statement of `read_campaign`, to run with others (`fetch_together`); `campaign_of` reads its rows."""
    return _FAST_CAMPAIGN, {"id": campaign_id}


def campaign_of(rows: Sequence[tuple]) -> CampaignRow:
    if not rows:
        raise NotFound("no campaign with this id")
    return CampaignRow(*rows[0])


class CampaignRow(NamedTuple):
    id: str
    ruleset: str
    options: dict[str, Any]


class RollLog:
    """The append-only roll log of one campaign (no use case edits or deletes an entry)."""

    def __init__(self, conn: Connection, campaign_id: str) -> None:
        self.conn, self.campaign_id = conn, campaign_id

    def append(
        self,
        body: dict[str, Any],
        *,
        character_id: str | None,
        hidden: bool,
        created_at: datetime,
        rerolls: str | None = None,
        others: Sequence[str] = (),
        body_json: str | None = None,
        figures: Mapping[str, Any] | None = None,
    ) -> None:
        """Log `body` (it carries its `id` and `kind`); `others`: the other characters
        involved (a confrontation, a group test), so filtering the log by character finds it.
        `body_json`: the body's JSON text when the caller has it already (`json_text(body)`).
        Prepared statements only, nothing read back: they may go in a unit of work's `writes()`
        batch (the other characters' rows find the entry's number by its id)."""
        entry = {
            "id": body["id"],
            "campaign_id": self.campaign_id,
            "character_id": character_id,
            "kind": body["kind"],
            "hidden": hidden,
            "created_at": created_at,
            "body": body,
            "rerolls": rerolls,
            **NO_FIGURES,
            **(figures or {}),  # a test's outcome, odds and dice (the statistics)
        }
        if body_json is not None:
            _FAST_INSERT_LOG.run(self.conn, {**entry, "body": body_json})
        else:
            _FAST_INSERT_LOG_ROW.run(self.conn, entry)  # the body encoded by the column's JSON type, as Core does
        for cid in others:
            _FAST_INSERT_LOG_CHARACTER.run(self.conn, {"character_id": cid, "entry_id": body["id"]})


class UnitOfWork:
    """One transaction on `session` for one campaign: `characters`, `log`, `record`
    (events, the last writes: see `events.record`), then `commit()` once. Leaving
    the block without committing (an error) rolls everything back.

    What the use case changed in characters it says (`changed(CharacterChanged(…))`, as
    cosmicpython's aggregates raise events): before the commit, the one handler of those
    changes tells each viewer and moves the fights showing them (`app.services.handlers`);
    the fights are locked in the order `locks` decides."""

    def __init__(self, session: Session, campaign_id: str) -> None:
        self.session, self.campaign_id = session, campaign_id
        self.committed = False
        self.locks = FightLocks()  # kept across attempts (`retried`): see `FightLocks.first`
        self.changes: list[Change] = []
        self.ruleset_id: str | None = None  # the campaign's ruleset, once read
        self.own_fight: str | None = None  # a fight's write: that fight moves by its own save
        self.not_fighting: set[str] = set()  # characters known to be in no fight (no standings to read)
        # the standings of characters the use case knows without reading them (a fight's action: its own)
        self.known_standings: Callable[[], Mapping[str, Standing]] | None = None

    def __enter__(self) -> Self:
        self.committed = False
        self.changes = []
        self.not_fighting = set()
        try:
            self.conn = self.session.connection()  # BEGIN (IMMEDIATE on SQLite: the write lock)
        except BaseException:
            self.rollback()
            raise
        self.characters = CharacterRepository(self.conn, self.campaign_id)
        self.log = RollLog(self.conn, self.campaign_id)
        self.locks.start(self.conn, self.campaign_id)
        # the server's dice of this attempt: numbers of the campaign's current epoch, claimed (its row
        # locked) at the first die, their count written with the writes (a rollback gives them back)
        self.epochs = EpochClaim(partial(epoch_store.claim, self.conn, self.campaign_id))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.committed:
            self.rollback()

    def campaign(self) -> CampaignRow:
        """The campaign's row (id, ruleset, options), or 404."""
        row = read_campaign(self.conn, self.campaign_id)
        self.ruleset_id = row.ruleset
        return row

    def ruleset(self) -> str:
        """The campaign's ruleset (read once)."""
        return self.ruleset_id if self.ruleset_id is not None else self.campaign().ruleset

    def changed(self, *changes: Change) -> None:
        """What the use case changed in characters (a deletion is carried out by the handler): told
        and its fights moved before the commit, or where the use case asks for it (`publish`)."""
        self.changes.extend(changes)

    def telling(self) -> Telling:
        """The handler's reads and locks now, for the changes said so far (taken: said once); its
        writes are run by calling the answer (in a `writes()` batch too)."""
        changes, self.changes = self.changes, []
        if not changes:
            return Telling()
        if _handler is None:
            raise RuntimeError("no handler of character changes (app.services.handlers registers it)")
        return _handler(self, changes)

    def publish(self) -> None:
        """The changes said so far, told now (their events before those recorded after)."""
        self.telling()()

    def record(
        self,
        type_: EventName,
        data: dict[str, Any],
        *,
        hidden: bool = False,
        owner_id: str | None = None,
        player_data: dict[str, Any] | None = None,
        player_versions: dict[str, Any] | None = None,
    ) -> None:
        """An event of this change (call it after the change's other writes); who receives
        what: `events.record`."""
        events.record(
            self.session,
            self.campaign_id,
            type_,
            data,
            hidden=hidden,
            owner_id=owner_id,
            player_data=player_data,
            player_versions=player_versions,
            conn=self.conn,
        )

    @contextmanager
    def writes(self, *, commit: bool = False) -> Iterator[None]:
        """The writes of the block sent together: ONE round trip on PostgreSQL (each still
        its own statement, in order: the campaign lock of `record` keeps its meaning), run as
        they come on SQLite; a versioned save that finds its character changed raises
        StaleVersion when the block ends (nothing is committed). `commit`: on PostgreSQL the
        COMMIT goes in that round trip too (the campaign lock and the rows locked are then
        held one round trip, not two); call `commit()` right after the block all the same."""
        # the COMMIT in the batch only for a transaction this unit of work's session began
        # (not one joined from outside, not a savepoint: the tests' sessions, for example)
        commit = commit and isinstance(self.session.bind, Engine) and not self.conn.in_nested_transaction()
        try:
            with batch(self.conn, commit=commit) as b:
                self._count_epoch()
                self.characters.batch = b
                try:
                    yield
                finally:
                    self.characters.batch = None
        except DBAPIError as e:
            if stale(e):
                raise StaleVersion("a character of this operation") from None
            raise

    def commit(self) -> None:
        self.publish()
        self._count_epoch()  # nothing when the last `writes(commit=True)` batch committed it
        self.session.commit()
        self.committed = True

    def _count_epoch(self) -> None:
        """The epoch's count of logged server dice, if this attempt drew any since it was last written."""
        claim = self.epochs
        if claim.epoch is not None and claim.count != claim.written:
            epoch_store.count(self.conn, self.campaign_id, claim.epoch.id, claim.count)
            claim.written = claim.count

    def rollback(self) -> None:
        self.session.rollback()


class ChangeHandler(Protocol):
    def __call__(self, uow: UnitOfWork, changes: list[Change], /) -> Telling: ...


_handler: ChangeHandler | None = None


def handle_changes_with(handler: ChangeHandler) -> None:
    """The one handler of every unit of work's character changes (registered by
    `app.services.handlers` when `app.services` is imported: this module may not import it)."""
    global _handler
    _handler = handler


class Retryable(Protocol):
    def rollback(self) -> None: ...

    def replayed(self) -> Any | None:
        """The result to give instead of running (an idempotent replay), or None."""


def transient(exc: OperationalError) -> bool:
    """SQLite busy, a PostgreSQL deadlock or serialization failure: worth another try."""
    text = str(exc.orig).lower()
    return any(s in text for s in ("database is locked", "deadlock", "could not serialize", "busy"))


def retried(use_case: Callable[..., T]) -> Callable[..., T]:
    """Run `use_case(uow, …)` (which opens `with uow:`) on fresh state until it is not
    beaten by a concurrent writer:

    - `uow.replayed()` first: the same request already answered (Idempotency-Key);
    - StaleVersion (a character changed since it was read): again, at most MAX_ATTEMPTS
      times, then 409 with Retry-After;
    - OperationalError: again if transient or the connection was found dead, else raised;
    - IntegrityError: the concurrent twin's answer if it won the race (same key), else
      again once (e.g. a concurrent AS-H2 reroll of the same test won: the next attempt says so).
    Each failed attempt is rolled back before the next."""

    @wraps(use_case)
    def run(uow: Retryable, *args: Any, **kwargs: Any) -> T:
        if (replay := uow.replayed()) is not None:
            return replay
        integrity_retried = False
        for _attempt in range(MAX_ATTEMPTS):
            try:
                return use_case(uow, *args, **kwargs)
            except StaleVersion:
                uow.rollback()
            except OperationalError as exc:
                uow.rollback()
                if not (exc.connection_invalidated or transient(exc)):
                    raise
            except IntegrityError:
                uow.rollback()
                if (replay := uow.replayed()) is not None:
                    return replay
                if integrity_retried:
                    raise
                integrity_retried = True
        raise Conflict(getattr(uow, "busy", BUSY), retry_after=1, code="race_lost")

    return run
