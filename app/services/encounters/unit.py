"""The unit of work of every encounter write (`EncounterWork`, the app's `UnitOfWork`
with the encounter locked): do the use case, write everything (action, roll-log
entry, sheets through the one character repository, encounter version, event,
idempotency record) and commit once, or nothing at all.

Two writes on one encounter never interleave: the encounter row is locked
`FOR UPDATE` (PostgreSQL) before anything is read; SQLite writers are serialized
already (`BEGIN IMMEDIATE`). A sheet or the encounter changed under us (a lost
race: `StaleVersion`) or a transient database error runs the whole use case
again on fresh state (`retried`), after the idempotent replay."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from types import TracebackType
from typing import Any, Self

from sqlalchemy import insert
from sqlalchemy.engine import Connection
from sqlmodel import Session

from app.core.prepared import Prepared
from app.kit.errors import Conflict, Forbidden, NotFound
from app.models.tables import IdempotencyRecord, core_table, utcnow
from app.services.auth import alive_query, check_alive, checked, verify
from app.services.encounters import store, view
from app.services.encounters.store import Fight
from app.services.encounters.view import Scene, Viewer
from app.services.idempotency import Idempotency, replay
from app.services.pages import check_if_match
from app.services.provenance import check_caller_dice
from app.services.records import Principal
from app.services.uow import UnitOfWork, retried

_FAST_INSERT_IDEMPOTENCY = Prepared(insert(core_table(IdempotencyRecord)))


def viewer(principal: Principal) -> Viewer:
    return Viewer(is_gm=principal.is_gm, player_id=principal.player_id)


class EncounterWork(UnitOfWork):
    """One write on one encounter of the caller's campaign: on entry the encounter is
    loaded, locked (`fight`), with the combatants named `combatants` (same round trip);
    `later(write)` keeps a write (prepared statements only) for the commit; `commit_response(response)`
    runs them, stores the response under the Idempotency-Key and commits: on PostgreSQL all
    in ONE round trip (`UnitOfWork.writes`: a stale version there commits nothing)."""

    busy = "the encounter is being changed by too many requests at once; try again"

    def __init__(
        self,
        session: Session,
        principal: Principal,
        encounter_id: str,
        idem: Idempotency | None,
        status_code: int = 201,
        combatants: Sequence[str] = (),
        server_dice: bool = False,
    ):
        super().__init__(session, principal.campaign_id)
        self.principal, self.encounter_id, self.idem, self.status_code = principal, encounter_id, idem, status_code
        self.combatants = combatants
        # an action that will roll the server's dice: the epoch claimed with the load (`load_fight`),
        # unless an attempt found it needed a character locked after it (`EpochClaimedEarly`)
        self.claim_early = server_dice
        self.pending: list[Callable[[], object]] = []
        self.own_fight = encounter_id  # moved by its own save; the handler moves the others

    def __enter__(self) -> Self:
        super().__enter__()
        self.pending = []
        try:
            # a `remembered` caller: its credential in the same round trip, checked first
            unverified = self.principal if self.principal.remembered else None
            first = None if unverified is None else (*alive_query(unverified), partial(check_alive, unverified))
            self.locks.retried_first(encounter_id=self.encounter_id)
            self.fight = store.load_fight(
                self.conn,
                self.encounter_id,
                lock=True,
                characters=self.characters,
                combatants=self.combatants,
                first=first,
                epochs=self.epochs if self.claim_early else None,
            )
            self.principal = checked(self.principal)
            if self.fight.campaign_id != self.campaign_id:
                raise NotFound("no encounter with this id")
            self.ruleset_id = self.fight.ruleset
            # the other fights of the characters read with the encounter: locked with it, before them
            known = self.fight.elsewhere_known
            self.locks.known(held=known, alone=known - self.fight.elsewhere)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def replayed(self) -> dict | None:
        """API.md: the same key and body replay the first response; the key with another body → 422."""
        if self.idem is not None:
            self.principal = verify(self.session, self.principal)  # the caller's credential before anything is read
        return replay(self.session, self.principal, self.idem)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, store.EpochClaimedEarly):
            self.claim_early = False  # the next attempt claims it at its first die
        super().__exit__(exc_type, exc, tb)

    def later(self, write: Callable[[], object]) -> None:
        """A write to run at the commit, in the writes' batch, in the order given."""
        self.pending.append(write)

    def commit(self) -> None:
        """The base's commit, once `commit_response` ran the kept writes: a commit with writes still
        kept would drop them silently, so it is refused (a bug, never a request's error)."""
        if self.pending:
            raise RuntimeError(f"{len(self.pending)} kept write(s) not run: commit with commit_response")
        super().commit()

    def commit_response(self, response: dict[str, Any]) -> dict[str, Any]:
        left = self.telling()  # character changes not told yet: read before the writes' batch
        with self.writes(commit=True):  # one round trip on PostgreSQL, the COMMIT included
            for write in self.pending:
                write()
            left()
            if self.idem is not None:
                _FAST_INSERT_IDEMPOTENCY.run(
                    self.conn,
                    {
                        "token_hash": self.principal.token_hash,
                        "key": self.idem.key,
                        "request_hash": self.idem.fingerprint,
                        "status_code": self.status_code,
                        "body": response,
                        "created_at": utcnow(),
                    },
                )
        self.pending = []
        self.commit()
        return response


def write(
    session: Session,
    principal: Principal,
    encounter_id: str,
    work: Callable[[EncounterWork, Fight], dict[str, Any]],
    *,
    idem: Idempotency | None = None,
    status_code: int = 201,
    combatants: Sequence[str] = (),
    server_dice: bool = False,
) -> dict[str, Any]:
    """Run `work(uow, fight)` on the locked encounter and commit; the response it returns
    is stored under the Idempotency-Key in the same transaction. `combatants`: ids (as the
    request gave them) of the combatants it will read, read with the encounter; `server_dice`:
    it will roll the server's dice (their epoch is then claimed in that round trip)."""
    return _run(EncounterWork(session, principal, encounter_id, idem, status_code, combatants, server_dice), work)


@retried
def _run(uow: EncounterWork, work: Callable[[EncounterWork, Fight], dict[str, Any]]) -> dict[str, Any]:
    with uow:
        return uow.commit_response(work(uow, uow.fight))


def scene(conn: Connection, fight: Fight, only: set[str] | None = None) -> Scene:
    """Visibility inputs: hidden combatants and their owners (loaded characters, else one query);
    `only`: the combatants the caller will ask about (an action's), not the whole fight."""
    combatants = fight.combatants if only is None else fight.some(only)
    missing = [c["character_id"] for c in combatants if c["character_id"] not in fight.characters]
    owners = {cid: ch.player_id for cid, ch in fight.characters.items()}
    owners.update(store.owners(conn, missing))
    return Scene.of(fight, owners, combatants)


# --- checks shared by the use cases ----------------------------------------------------------


def check_version(fight: Fight, if_match: str | None, principal: Principal) -> None:
    """`If-Match` against the version the caller reads (a player's: `view.version_for`)."""
    check_if_match(view.version_for(fight.encounter, viewer(principal)), if_match, "encounter")


def check_not_ended(fight: Fight) -> None:
    if fight.encounter["status"] == "ended":
        raise Conflict("the encounter has ended: nothing more can be done in it", code="encounter_ended")


def check_status(fight: Fight, wanted: str, what: str) -> None:
    check_not_ended(fight)
    status = fight.encounter["status"]
    if status != wanted:
        hint = "it has not started yet" if status == "setup" else "it has started (revert the start to go back)"
        raise Conflict(
            f"{what} needs an encounter in {wanted}; {hint}",
            extra={"encounter_status": status},
            code="encounter_status",
        )


def check_provenance(principal: Principal, campaign_options: dict[str, Any], *, dice: Any, hidden: bool) -> None:
    """API.md: the GM may always enter dice; players only when the campaign allows it (a `seed`
    too: checked where the action's dice are made, `CombatDice.for_caller`); hidden is the GM's."""
    check_caller_dice(principal, campaign_options, seed=None, dice=dice)
    if hidden and not principal.is_gm:
        raise Forbidden("only the GM may make hidden actions", code="gm_only")
