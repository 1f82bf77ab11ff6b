"""The unit of work of every operation that rolls dice (`RollingWork`).

A use case reads top to bottom (see `app.services.play`):

    @retried
    def _test(uow: RollingWork, character_id, body):
        with uow:
            [hero] = uow.lock([character_id])                 # loaded, locked, sheet parsed
            req = validate(uow.adapter.TestRequest, body)
            authorize(uow.principal, hero.player_id)           # the route's rule (`@access`) on this row
            return uow.commit_outcome(uow.adapter.test(hero, req, uow.context(req)))

`commit_outcome(outcome)` writes the roll-log entry, every changed sheet (versioned), the
event and the idempotency record, and commits once: nothing is half-applied. A
concurrent writer that slipped in between is detected by the version check and
`retried` runs the whole use case again on fresh state, so no update is lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from fractions import Fraction
from typing import Any

from pydantic import BaseModel, TypeAdapter
from sqlalchemy import Connection, Select, bindparam, or_, select
from sqlmodel import Session

from app.core.prepared import fetch_together
from app.kit.errors import Conflict, Forbidden
from app.kit.models import RollingRequest
from app.models.results.common import Dice, Die, Head, OddsValue
from app.models.tables import IdempotencyRecord, LogEntry, LogEntryCharacter, core_table, new_id, utcnow
from app.rules.dice import dice_source
from app.rulesets.contract.adapter import (
    OUTCOMES,
    SUCCESS_OUTCOMES,
    CharacterState,
    OperationContext,
    Outcome,
    RulesetAdapter,
)
from app.rulesets.registry import get_adapter
from app.services.auth import alive_query, check_alive, checked, verify
from app.services.changed import CharacterChanged
from app.services.idempotency import Idempotency, replay
from app.services.provenance import check_caller_dice, provenance
from app.services.records import Principal, StoredCharacter
from app.services.uow import (
    CampaignRow,
    UnitOfWork,
    campaign_of,
    campaign_query,
    json_text,
    json_text_insert,
    open_on,
    retried,
    saved,
)
from app.services.visibility import about, check_visible

__all__ = ["RollingWork", "EncodedBody", "retried", "log_entry_body", "check_provenance"]


def check_provenance(principal: Principal, options: dict[str, Any], req: RollingRequest) -> None:
    """API.md: the GM may always enter dice (`dice`, `seed`); players only when the campaign
    allows it; hidden rolls are the GM's."""
    check_caller_dice(principal, options, seed=req.seed, dice=req.dice)
    if req.hidden and not principal.is_gm:
        raise Forbidden("only the GM may make hidden rolls", code="gm_only")


class RollingWork(UnitOfWork):
    """One rolling operation of `principal` in a campaign: on entry, the campaign is
    read and its ruleset's adapter known (`adapter`); `lock` loads characters with
    their sheets parsed, `context(req)` checks the dice provenance and builds the
    dice, `commit_outcome(outcome)` persists everything and returns the logged body."""

    def __init__(
        self,
        session: Session,
        principal: Principal,
        campaign_id: str,
        idem: Idempotency | None,
        *,
        lock: str | None = None,
        server_dice: bool = False,
    ):
        """`lock`: the character the use case locks first (`lock([it])`), read and locked on entry
        with the campaign — and the caller's credential when `principal` is `remembered` (this
        process knew its token) — in one statement; `server_dice`: the request names no dice of its
        own, so the campaign's dice epoch is claimed in that round trip too."""
        super().__init__(session, campaign_id)
        self.principal, self.idem, self.first_locked = principal, idem, lock
        self.server_dice = server_dice

    def __enter__(self) -> RollingWork:
        super().__enter__()
        try:
            campaign = self._open()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.adapter: RulesetAdapter = get_adapter(campaign.ruleset)
        self.ruleset_id = campaign.ruleset
        self.options: dict[str, Any] = campaign.options
        self.loaded: dict[str, StoredCharacter] = {}
        self.req: RollingRequest | None = None
        self.ctx: OperationContext | None = None
        return self

    def _open(self) -> CampaignRow:
        """The first statement: the caller's credential (401 first), the campaign (404), the character
        to lock, whether it is in hiding or in a fight (`uow.open_on`: one statement)."""
        unverified = self.principal if self.principal.remembered else None
        self.prefetched: dict[str, StoredCharacter] = {}
        self.in_hiding: dict[str, list[tuple]] = {}
        self.locks.retried_first()  # an attempt found one of their fights taken: they are locked first now
        if self.first_locked is not None:
            token_hash = (unverified or self.principal).token_hash
            opening = open_on(
                self.conn,
                self.campaign_id,
                self.first_locked,
                token_hash,
                epochs=self.epochs if self.server_dice else None,
            )
            if opening is not None:
                if unverified is not None and not opening.alive:
                    check_alive(unverified, [])  # 401
                self.principal = checked(self.principal)
                self.prefetched[self.first_locked] = opening.character
                self.in_hiding[self.first_locked] = [(opening.in_hiding,)]
                if not opening.fighting:
                    self.not_fighting.add(self.first_locked)
                    self.locks.known(alone=[self.first_locked])
                return opening.campaign
        # no such character in the campaign (its 404 comes after the credential's and the campaign's)
        queries = [alive_query(unverified)] if unverified is not None else []
        queries.append(campaign_query(self.campaign_id))
        results = fetch_together(self.conn, queries)
        if unverified is not None:
            check_alive(unverified, results.pop(0))
            self.principal = checked(self.principal)
        return campaign_of(results[0])

    def lock(self, character_ids: Sequence[str]) -> list[CharacterState]:
        """The characters (in the order asked) locked until the commit, sheets parsed once."""
        if len(character_ids) == 1 and character_ids[0] in self.prefetched:
            stored = [self.prefetched.pop(character_ids[0])]
        else:
            stored = self.characters.load(character_ids)
        for c in stored:  # a player learns nothing of a character in hiding it does not own: 404
            check_visible(self.conn, self.principal, c, self.in_hiding.get(c.id))
        self.loaded.update((c.id, c) for c in stored)
        return [self.adapter.state(c) for c in stored]

    def context(self, req: RollingRequest) -> OperationContext:
        """The adapter's context for `req` (after authorization): who may enter dice
        or roll hidden is checked here; the campaign's options parsed once."""
        check_provenance(self.principal, self.options, req)
        self.req = req
        self.ctx = OperationContext(
            dice=dice_source(seed=req.seed, dice=req.dice, server=self.epochs),
            options=self.adapter.parse_options(self.options),
            is_gm=self.principal.is_gm,
            get_log_entry=self.log_entry,
            latest_entries=self.latest_entries,
        )
        return self.ctx

    def log_entry(self, entry_id: str) -> dict | None:
        return log_entry_body(self.session, self.campaign_id, entry_id, include_hidden=self.principal.is_gm)

    def latest_entries(self, character_id: str) -> list[dict]:
        """The character's latest log entries, newest first: hidden ones too (a rule reads them for
        the character's own figures, which the caller sees on its sheet; they are not returned)."""
        rows = self.conn.execute(_LATEST_ABOUT, {"campaign_id": self.campaign_id, "character_id": character_id})
        return [row.body for row in rows]

    def replayed(self) -> dict | None:
        """The first response to this Idempotency-Key, or None; the key with another request → 422."""
        if self.idem is not None:
            self.principal = verify(self.session, self.principal)  # the caller's credential before anything is read
        return replay(self.session, self.principal, self.idem)

    def commit_outcome(self, outcome: Outcome, *, odds: Mapping[str, Fraction] | None = None) -> EncodedBody:
        """Log the outcome, save its sheets (versioned), record the event and the
        idempotency record, commit; returns the logged body. `odds`: a test's exact odds of
        each outcome, logged with its outcome and dice as its figures (the statistics)."""
        req, ctx = self.req, self.ctx
        assert req is not None and ctx is not None, "context(req) comes before commit_outcome"
        ctx.dice.finish()
        now = utcnow()
        body = _logged(outcome, ctx, req, now, None if odds is None else _odds_figures(odds)[0]).wire()
        encoded = json_text(body)  # once: the log entry, the idempotency record and the response
        if outcome.cancels is not None:
            _check_not_rerolled(self.conn, outcome.cancels, include_hidden=self.principal.is_gm)
        others = [cid for cid in self.loaded if cid != outcome.character_id]
        entry: dict[str, Any] = {
            "character_id": outcome.character_id,
            "hidden": req.hidden,
            "created_at": now,
            "rerolls": outcome.cancels,
            "others": others,
            "body_json": encoded,
        }
        if odds is not None:
            entry["figures"] = figures(body, odds)
        audience = about(self.conn, self.loaded.values(), hidden=req.hidden, in_hiding_rows=self.in_hiding)
        sheets = self._dumped_sheets(outcome.sheets)
        for cid, sheet in sheets.items():
            if sheet != self.loaded[cid].sheet:  # really changed: told, its fights moved
                self.changed(
                    CharacterChanged(self.loaded[cid], saved(self.loaded[cid], now=now, sheet=sheet), req.hidden)
                )
        told = self.telling()  # read before the writes' batch
        with self.writes(commit=True):  # one round trip on PostgreSQL, the COMMIT included
            self.log.append(body, **entry)  # its other characters' rows find the entry by its id
            changed = self._save_sheets(sheets, now)
            told()
            self.record(
                "log.created", {"entry_id": body["id"], "characters_changed": changed}, **audience.record_args()
            )
            if self.idem is not None:
                _FAST_INSERT_IDEMPOTENCY.run(
                    self.conn,
                    {
                        "token_hash": self.principal.token_hash,
                        "key": self.idem.key,
                        "request_hash": self.idem.fingerprint,
                        "status_code": 201,
                        "body": encoded,
                        "created_at": now,
                    },
                )
        self.commit()
        return EncodedBody(body, encoded)

    def _dumped_sheets(self, sheets: Mapping[str, BaseModel]) -> dict[str, dict[str, Any]]:
        """The outcome's sheets as stored, in the order the characters were named."""
        if unknown := sheets.keys() - self.loaded.keys():
            raise RuntimeError(f"the ruleset changed character(s) {sorted(unknown)} it was not given")
        return {cid: self.adapter.dump_sheet(sheets[cid]) for cid in self.loaded if cid in sheets}

    def _save_sheets(self, sheets: dict[str, dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
        """Each sheet is written only if its version is still the one read (else
        StaleVersion: `retried` runs the use case again on fresh state)."""
        changed = []
        for character_id, sheet in sheets.items():
            after = self.characters.save(self.loaded[character_id], sheet=sheet, now=now)
            changed.append({"id": character_id, "version": after.version})
        return changed


def fraction_out(p: Fraction) -> dict[str, Any]:
    return {"probability": f"{p.numerator}/{p.denominator}", "p": float(p)}


def success_of(outcomes: Mapping[str, Fraction]) -> Fraction:
    return sum((p for name, p in outcomes.items() if name in SUCCESS_OUTCOMES), Fraction(0))


def _odds_figures(odds: Mapping[str, Fraction]) -> tuple[OddsValue, dict[str, float]]:
    """A test's `p_success` and the odds columns of its figures, from its exact odds. Remembered by
    the odds' object: a ruleset's odds come from its cached computation, the same object for the
    same test (shared, never changed), so what is made of them is made once (the object is held
    with them: its id is not reused while it is remembered)."""
    known = _ODDS_MADE.get(id(odds))
    if known is not None and known[0] is odds:
        return known[1], known[2]
    columns = {f"p_{name}": float(odds.get(name, 0)) for name in OUTCOMES}
    success = success_of(odds)
    columns["p_any_success"] = float(success)
    made = OddsValue.model_validate(fraction_out(success))
    if len(_ODDS_MADE) >= _ODDS_MADE_MAX:
        _ODDS_MADE.clear()
    _ODDS_MADE[id(odds)] = (odds, made, columns)
    return made, columns


_ODDS_MADE: dict[int, tuple[Mapping[str, Fraction], OddsValue, dict[str, float]]] = {}
_ODDS_MADE_MAX = 4096


def figures(body: Mapping[str, Any], odds: Mapping[str, Fraction]) -> dict[str, Any]:
    """A test's figures as the roll log stores them (`LOG_FIGURES`): its outcome, each outcome's
    exact probability and that of success (floats: the statistics sum them), its dice by type
    in the order first rolled (the first two types: a test has one, or two with GC's karma d10)."""
    out: dict[str, Any] = {"outcome": body.get("outcome")}
    out.update(_odds_figures(odds)[1])
    by_die: dict[str, list[int]] = {}
    for die in body.get("rolls") or ():
        if isinstance(die, Mapping) and not die.get("dropped"):
            by_die.setdefault(str(die["die"]), []).append(int(die["value"]))
    for slot, (die, values) in zip(("die_a", "die_b"), by_die.items()):
        out.update({slot: die, f"{slot}_count": len(values), f"{slot}_total": sum(values)})
    return out


class EncodedBody(dict):
    """A logged body with its JSON text (`json`, encoded as the API sends it): the
    response is those bytes, not a second encoding. Not to be changed after the commit."""

    __slots__ = ("json",)

    def __init__(self, body: dict[str, Any], encoded: str):
        super().__init__(body)
        self.json = encoded


_log = core_table(LogEntry)
_involved = core_table(LogEntryCharacter)
_FAST_INSERT_IDEMPOTENCY = json_text_insert(core_table(IdempotencyRecord), "body")
_LOG_BODY = select(_log.c.body, _log.c.hidden).where(
    _log.c.id == bindparam("id"), _log.c.campaign_id == bindparam("campaign_id")
)
LATEST_ENTRIES = 20  # how far back a rule looks for the blow just taken (AS-H4)


def about_the_character(*columns: Any) -> Select[Any]:
    """The campaign's roll-log entries about `:character_id` (its own, or naming it among those involved),
    newest first."""
    return (
        select(*columns)
        .where(
            _log.c.campaign_id == bindparam("campaign_id"),
            or_(
                _log.c.character_id == bindparam("character_id"),
                _log.c.seq.in_(select(_involved.c.seq).where(_involved.c.character_id == bindparam("character_id"))),
            ),
        )
        .order_by(_log.c.seq.desc())
    )


_LATEST_ABOUT = about_the_character(_log.c.body).limit(LATEST_ENTRIES)
_REROLLED_BY = select(_log.c.id, _log.c.hidden).where(_log.c.rerolls == bindparam("rerolls"))


def _logged(
    outcome: Outcome, ctx: OperationContext, req: RollingRequest, now: datetime, p_success: OddsValue | None
) -> Head:
    """The outcome's result model with the roll-log fields stamped: its id, and `rolls` (every
    die of the operation) unless it lists its dice its own way, hidden, created_at, provenance;
    `p_success` for a test (the odds route's exact success for the same body)."""
    entry: dict[str, Any] = {"id": new_id()}
    if p_success is not None:
        entry["p_success"] = p_success
    if isinstance(outcome.body, Dice):
        entry["rolls"] = _DICE.validate_python([r.to_dict() for r in ctx.dice.rolls])
    entry.update(hidden=req.hidden, created_at=now, **provenance(seed=req.seed, table=_has_table_dice(req)))
    return outcome.body.stamped(**entry)


_DICE: TypeAdapter[list[Die]] = TypeAdapter(list[Die])


def _has_table_dice(req: RollingRequest) -> bool:
    """Whether the caller entered dice: the request's, or a participant's own (RB-C3 rankings)."""
    if req.dice is not None:
        return True
    # a request model without participants answers from its fields (pydantic's look-up of a missing
    # attribute raises and catches an AttributeError inside: a measurable share of a plain test)
    participants = req.participants if "participants" in type(req).model_fields else ()  # type: ignore[attr-defined]
    return any(getattr(p, "dice", None) is not None for p in participants)


def _check_not_rerolled(conn: Connection, test_id: str, *, include_hidden: bool) -> None:
    """AS-H2 cancels a test once: a second reroll of the same test is refused.
    A hidden GM reroll is not named to a player (`rerolled_by` is null)."""
    by = conn.execute(_REROLLED_BY, {"rerolls": test_id}).first()
    if by is not None:
        shown = by.id if include_hidden or not by.hidden else None
        raise Conflict(
            f"test {test_id} was already cancelled and rolled again" + (f" (by {shown})" if shown else ""),
            extra={"rerolled_by": shown},
            code="already_rerolled",
        )


def log_entry_body(session: Session, campaign_id: str, entry_id: str, *, include_hidden: bool) -> dict | None:
    """An earlier roll-log entry of the campaign, as it was returned, or None
    (a hidden GM entry is None to players: its existence never leaks)."""
    row = session.connection().execute(_LOG_BODY, {"id": entry_id, "campaign_id": campaign_id}).first()
    if row is None or (row.hidden and not include_hidden):
        return None
    return row.body
