"""The dice core: where every die comes from, and dice expressions.

Written here rather than taken from a dice library (decision recorded in the
README): Avrae's `d20` has had no release since 2021, rolls from a global RNG
and reads `d%` as 0–90; the other notation libraries are 10–10,000× slower.

A `DiceSource` is one of three (API.md, "Dice provenance"):
- `EpochDice(claim)` — the server rolls: each die is number `k` of the campaign's dice epoch,
  derived from the epoch's secret seed by HMAC-SHA256 (API.md "Verifiable server dice"), so
  that once the seed is revealed anyone can check it was not chosen;
- `RandomDice(random.Random(seed))` — reproducible across processes;
- `TableDice([...])` — dice rolled at the table, consumed in rule order.
Every die a source gives is recorded, with its purpose, in `rolls`.
"""

from __future__ import annotations

import hmac
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from app.rules.errors import DiceLeftOver, DiceNeeded, DieOutOfRange, ExpressionError, TooManyDice

MAX_DICE_PER_TERM = 100
MAX_FACES = 1000
MAX_EXPRESSION_LENGTH = 200
MAX_DICE_PER_REQUEST = 1000  # every die one request rolls: its expressions and its rule dice


class Roll(NamedTuple):
    """One die as rolled: `die` is its label (`d100`), `purpose` why it was rolled.
    (A named tuple: recording a die must cost less than rolling it; the sources share equal
    records, see `_RECORDS`.)"""

    die: str
    value: int
    purpose: str
    dropped: bool = False
    epoch: str | None = None  # a server die's dice epoch, and its number `k` in it
    k: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"die": self.die, "value": self.value, "purpose": self.purpose}
        if self.dropped:
            out["dropped"] = True
        if self.epoch is not None:
            out["epoch"], out["k"] = self.epoch, self.k
        return out


_LABELS = {f: f"d{f}" for f in (2, 3, 4, 6, 8, 10, 12, 20, 100)}
_new_roll = tuple.__new__  # builds a Roll from a 6-tuple without the Python-level __new__
# RNG classes whose `_randbelow` is `Random._randbelow_with_getrandbits`, which the sources inline
# (the draws of `randint`); any other RNG's own `_randbelow` is called as it is
_STANDARD_RNGS: tuple[type, ...] = (random.Random, random.SystemRandom)

# The record of a kept die, by (die, value, purpose). A Roll is an immutable tuple, so equal records
# are one shared object and recording a die is a dict look-up instead of an allocation (which cost as
# much as the draw itself). Every die still gets its entry, in order, in its source's `rolls`.
# Bounded: emptied when full (purposes are the clients' words).
_RECORDS: dict[tuple[str, int, str], Roll] = {}
MAX_RECORDS = 16384


def _recorded(key: tuple[str, int, str]) -> Roll:
    """The record of `key` = (die, value, purpose), made on its first roll; used as
    `_RECORDS.get(key) or _recorded(key)` (a Roll is never empty, so never false)."""
    if len(_RECORDS) >= MAX_RECORDS:
        _RECORDS.clear()
    record = _RECORDS[key] = _new_roll(Roll, (*key, False, None, None))
    return record


def die_label(faces: int) -> str:
    return _LABELS.get(faces) or f"d{faces}"


class DiceSource:
    """Base of the three sources; subclasses implement `_next` (and may speed up `roll_many`).
    A source serves one request: it refuses to give more than `max_dice` dice in all."""

    __slots__ = ()  # RandomDice has only slots (one is made per request); the other sources have a __dict__
    max_dice = MAX_DICE_PER_REQUEST

    def __init__(self) -> None:
        self.rolls: list[Roll] = []  # type: ignore[misc]  # a slot of RandomDice; the other sources' __dict__

    def roll(self, faces: int, purpose: str) -> int:
        """Roll one die of `faces` faces (1..faces) for `purpose`, and record it."""
        if len(self.rolls) >= self.max_dice:
            self._too_many(1)
        record = self._draw_one(faces, purpose)
        self.rolls.append(record)
        return record.value

    def _draw_one(self, faces: int, purpose: str) -> Roll:
        """One die's record (not yet appended): `_next`'s value, or a server die's own record."""
        key = (die_label(faces), self._next(faces, purpose), purpose)
        return _RECORDS.get(key) or _recorded(key)

    def roll_many(self, count: int, faces: int, purpose: str) -> list[int]:
        return [self.roll(faces, purpose) for _ in range(count)]

    def roll_sum(self, count: int, faces: int, purpose: str) -> int:
        """The sum of `count` dice (each recorded)."""
        total = 0
        for _ in range(count):
            total += self.roll(faces, purpose)
        return total

    def mark(self) -> int:
        """A position in `rolls`, to slice out the dice of one part of an operation."""
        return len(self.rolls)

    def since(self, mark: int) -> list[Roll]:
        return self.rolls[mark:]

    def finish(self) -> None:
        """Called once the operation is resolved (table dice check for leftovers)."""

    def _too_many(self, more: int) -> None:
        raise TooManyDice(len(self.rolls) + more, self.max_dice)

    def _next(self, faces: int, purpose: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError


class _Draws(Protocol):
    """What the sources read of an RNG: `random.Random`'s `getrandbits`, and its `_randbelow`
    (randint's own draw, read on purpose on the hot path), which typeshed does not declare."""

    def getrandbits(self, k: int, /) -> int: ...

    def _randbelow(self, n: int, /) -> int: ...


class RandomDice(DiceSource):
    """Dice from an RNG: `random.SystemRandom()` (secure) or `random.Random(seed)`.
    One is made per request, so making one is two stores: whether the RNG's draw may be
    inlined is read from its class when dice are rolled."""

    __slots__ = ("rolls", "_rng")

    def __init__(self, rng: random.Random):
        self.rolls = []
        self._rng: _Draws = rng  # type: ignore[assignment]  # a Random has _randbelow (see _Draws)

    def _next(self, faces: int, purpose: str) -> int:
        return self._rng._randbelow(faces) + 1

    def roll(self, faces: int, purpose: str) -> int:
        """One die, as `_randbelow(faces) + 1` (the same draws as `randint(1, faces)`), with no call
        but the RNG's: the commonest expressions roll one die, and this is most of their cost."""
        rolls = self.rolls
        if len(rolls) >= self.max_dice:
            self._too_many(1)
        rng = self._rng
        if type(rng) in _STANDARD_RNGS:  # its _randbelow, inlined
            k = faces.bit_length()
            value = rng.getrandbits(k)
            while value >= faces:
                value = rng.getrandbits(k)
            value += 1
        else:
            value = rng._randbelow(faces) + 1
        key = (_LABELS.get(faces) or f"d{faces}", value, purpose)
        rolls.append(_RECORDS.get(key) or _recorded(key))
        return value

    def roll_many(self, count: int, faces: int, purpose: str) -> list[int]:
        if len(self.rolls) + count > self.max_dice:
            self._too_many(count)
        values = self._draw(count, faces)
        label = _LABELS.get(faces) or f"d{faces}"
        get = _RECORDS.get
        self.rolls += [get(key) or _recorded(key) for key in [(label, v, purpose) for v in values]]
        return values

    def roll_sum(self, count: int, faces: int, purpose: str) -> int:
        if len(self.rolls) + count > self.max_dice:
            self._too_many(count)
        append, bits, label = self.rolls.append, self._getrandbits(), _LABELS.get(faces) or f"d{faces}"
        get = _RECORDS.get
        total = 0
        if bits is None:
            randbelow = self._rng._randbelow
            for _ in range(count):
                value = randbelow(faces) + 1
                key = (label, value, purpose)
                append(get(key) or _recorded(key))
                total += value
            return total
        k = faces.bit_length()
        for _ in range(count):
            value = bits(k)
            while value >= faces:
                value = bits(k)
            value += 1
            key = (label, value, purpose)
            append(get(key) or _recorded(key))
            total += value
        return total

    def _draw(self, count: int, faces: int) -> list[int]:
        """`count` values of `_randbelow(faces) + 1`, in order."""
        bits = self._getrandbits()
        if bits is None:
            randbelow = self._rng._randbelow
            return [randbelow(faces) + 1 for _ in range(count)]
        k = faces.bit_length()
        values = []
        for _ in range(count):
            value = bits(k)
            while value >= faces:
                value = bits(k)
            values.append(value + 1)
        return values

    def _getrandbits(self) -> Callable[[int], int] | None:
        """The RNG's `getrandbits` when its `_randbelow` may be inlined (`_STANDARD_RNGS`), else None."""
        rng = self._rng
        return rng.getrandbits if type(rng) in _STANDARD_RNGS else None


class TableDice(DiceSource):
    """Dice already rolled at the table, consumed in the order the rule asks for them."""

    def __init__(self, values: Sequence[int]):
        super().__init__()
        self.values = list(values)
        self.used = 0

    def _next(self, faces: int, purpose: str) -> int:
        index = self.used
        if index >= len(self.values):
            raise DiceNeeded(index, die_label(faces), purpose)
        value = self.values[index]
        if not 1 <= value <= faces:
            raise DieOutOfRange(index, die_label(faces), value, purpose)
        self.used += 1
        return value

    def finish(self) -> None:
        if self.used != len(self.values):
            raise DiceLeftOver(self.used, len(self.values))


_TWO_32 = 1 << 32


def epoch_die(seed: bytes, message: bytes, faces: int) -> int:
    """Die `message` of an epoch (API.md "Verifiable server dice"): `message` is the UTF-8 of
    `"{epoch_id}:{k}"` and, for each salt in order, `"\n"` and the salt. For j = 0, 1, …:
    HMAC-SHA256(seed, message + ":" + j) read as eight big-endian 32-bit words; the first word
    below the largest multiple of `faces` (rejection sampling: every face equally likely) gives
    `word % faces + 1`."""
    limit = _TWO_32 - _TWO_32 % faces
    j = 0
    while True:
        digest = hmac.digest(seed, b"%s:%d" % (message, j), "sha256")
        for i in range(0, 32, 4):
            word = int.from_bytes(digest[i : i + 4], "big")
            if word < limit:
                return word % faces + 1
        j += 1


class Epoch(NamedTuple):
    """The current dice epoch of a campaign, as a unit of work claimed it: its id, secret seed,
    salts, and how many dice it had logged (the next die's `k`)."""

    id: str
    seed: bytes
    salts: tuple[str, ...]
    dice: int


class EpochClaim:
    """The server's dice of one transaction: numbers `k` of the campaign's current epoch, given
    out in order from the count the epoch had when claimed (`claim` is called on the first die
    only: a request that rolls no server die takes no lock). Every source of the transaction
    draws from the same claim, so its dice are numbered without a gap; `count` is what the
    epoch's count becomes when the transaction commits (a rollback gives the numbers back)."""

    __slots__ = ("_claim", "epoch", "_prefix", "_suffix", "count", "written")

    def __init__(self, claim: Callable[[], Epoch]):
        self._claim = claim
        self.epoch: Epoch | None = None
        self.count = 0
        self.written = 0  # the count as the epoch's row has it (the transaction's writes included)

    def given(self, epoch: Epoch) -> None:
        """The epoch claimed already (read and locked with the operation's first statement)."""
        self.epoch, self.count, self.written = epoch, epoch.dice, epoch.dice
        self._prefix = f"{epoch.id}:".encode()
        self._suffix = b"".join(b"\n" + salt.encode() for salt in epoch.salts)

    def draw(self, faces: int, purpose: str) -> Roll:
        epoch = self.epoch
        if epoch is None:
            self.given(self._claim())
            epoch = self.epoch
            assert epoch is not None
        k = self.count
        self.count = k + 1
        value = epoch_die(epoch.seed, b"%s%d%s" % (self._prefix, k, self._suffix), faces)
        return _new_roll(Roll, (die_label(faces), value, purpose, False, epoch.id, k))

    @property
    def drawn(self) -> bool:
        """Whether this transaction rolled a server die (the epoch's count then moves)."""
        return self.epoch is not None


class EpochDice(DiceSource):
    """The server's dice: each one the next number of the transaction's `EpochClaim`."""

    def __init__(self, claim: EpochClaim):
        super().__init__()
        self.claim = claim

    def _draw_one(self, faces: int, purpose: str) -> Roll:
        return self.claim.draw(faces, purpose)

    def _next(self, faces: int, purpose: str) -> int:
        return self.claim.draw(faces, purpose).value  # pragma: no cover - every draw goes by `_draw_one`


class NoServerDice(DiceSource):
    """Where no server die may be rolled (a prediction, the odds): asking for one is a bug, never
    a die that was not logged (it would tell a future die of the epoch)."""

    def _next(self, faces: int, purpose: str) -> int:
        raise RuntimeError("no server die may be rolled here")


def dice_source(
    *, seed: int | None = None, dice: Sequence[int] | None = None, server: EpochClaim | None = None
) -> DiceSource:
    """The source a request asks for: table dice, a seed (its own RNG), or the server's dice of
    the transaction's epoch claim (none given: a server die is refused, see `NoServerDice`)."""
    if dice is not None:
        return TableDice(dice)
    if seed is not None:
        return RandomDice(random.Random(seed))
    return EpochDice(server) if server is not None else NoServerDice()


# --- dice expressions -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DiceTerm:
    """`NdM` with an optional keep/drop: `keep` is ('h'|'l', n) of dice kept."""

    sign: int
    count: int
    faces: int
    keep: tuple[str, int] | None = None

    def roll(self, source: DiceSource, purpose: str) -> int:
        if self.keep is None:
            return self.sign * source.roll_sum(self.count, self.faces, purpose)
        values = source.roll_many(self.count, self.faces, purpose)
        which, n = self.keep
        # the dropped dice: the first of equal values are kept (a stable sort)
        dropped = sorted(range(self.count), key=values.__getitem__, reverse=(which == "h"))[n:]
        rolls, start, total = source.rolls, len(source.rolls) - self.count, sum(values)
        for offset in dropped:
            rolls[start + offset] = rolls[start + offset]._replace(dropped=True)
            total -= values[offset]
        return self.sign * total


@dataclass(frozen=True, slots=True)
class Expression:
    """A parsed dice expression: dice terms plus a constant."""

    text: str
    terms: tuple[DiceTerm, ...]
    constant: int
    # `1d100`, `1d20+5`, `-d6` (the commonest expressions, rolled with no loop): what rolling the one
    # die needs, worked out once: (constant, sign, faces, bits drawn per try, die label)
    one_die: tuple[int, int, int, int, str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.terms) == 1 and self.terms[0].count == 1 and self.terms[0].keep is None:
            sign, faces = self.terms[0].sign, self.terms[0].faces
            object.__setattr__(self, "one_die", (self.constant, sign, faces, faces.bit_length(), die_label(faces)))

    @property
    def dice_count(self) -> int:
        return sum(t.count for t in self.terms)

    def roll(self, source: DiceSource, purpose: str = "roll") -> int:
        if (one := self.one_die) is not None:
            constant, sign, faces, k, label = one
            if type(source) is not RandomDice:
                return constant + sign * source.roll(faces, purpose)
            # RandomDice.roll inlined: a one-die expression costs one draw, one record, no other call
            rolls, rng = source.rolls, source._rng
            if len(rolls) >= source.max_dice:
                source._too_many(1)
            if type(rng) in _STANDARD_RNGS:  # its _randbelow, inlined
                value = rng.getrandbits(k)
                while value >= faces:
                    value = rng.getrandbits(k)
                value += 1
            else:
                value = rng._randbelow(faces) + 1
            key = (label, value, purpose)
            rolls.append(_RECORDS.get(key) or _recorded(key))
            return constant + sign * value
        total = self.constant
        for term in self.terms:
            total += term.roll(source, purpose)
        return total

    def bounds(self) -> tuple[int, int]:
        lo = hi = self.constant
        for t in self.terms:
            n = t.keep[1] if t.keep else t.count
            a, b = n, n * t.faces
            lo, hi = (lo + a, hi + b) if t.sign > 0 else (lo - b, hi - a)
        return lo, hi


# ASCII only: `\d` and `\w` would match other scripts' digits (`３`, `٣`), which int() reads
_SPLIT_TOKEN = re.compile(r"[0-9A-Za-z_%]\s+[0-9A-Za-z_%]", re.ASCII)
_TERM = re.compile(r"([+-]?)(?:([0-9]*)[dD]([0-9]+|%)(?:([kKdD])([hHlL])([0-9]+))?|([0-9]+))", re.ASCII)


class _Parsed(dict[str, "Expression"]):
    """Parsed expressions by text: `parse` is this dict's `__getitem__`, so a cached expression costs one
    look-up in C (the commonest expressions are parsed once per process). At most 4096, emptied when full;
    an expression that does not parse raises and is not kept."""

    def __missing__(self, text: str) -> Expression:
        expression = _parse(text)
        if len(self) >= MAX_PARSED:
            self.clear()
        self[text] = expression
        return expression


MAX_PARSED = 4096
parse: Callable[[str], Expression] = _Parsed().__getitem__
"""Parse a dice expression (cached; see `_parse`)."""


def _parse(text: str) -> Expression:
    """Parse `NdM`, `dM`, `d%`/`d100`, `+`/`-` terms, constants, `khN klN dhN dlN`
    (ASCII only; at most MAX_DICE_PER_REQUEST dice in all)."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("the expression is empty", field="expression")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ExpressionError(
            f"the expression is {len(text)} characters long; at most {MAX_EXPRESSION_LENGTH} are allowed",
            field="expression",
        )
    if not text.isascii():
        raise ExpressionError(
            f"cannot read {text!r}: only ASCII digits, letters, spaces and + - % are allowed", field="expression"
        )
    if _SPLIT_TOKEN.search(text):
        raise ExpressionError(f"cannot read {text!r}: a space splits a number or a die", field="expression")
    compact = "".join(text.split())
    terms: list[DiceTerm] = []
    constant = 0
    pos = 0
    while pos < len(compact):
        m = _TERM.match(compact, pos)
        if not m or (pos > 0 and not m.group(1)):
            raise ExpressionError(
                f"cannot read {text!r} at {compact[pos : pos + 10]!r}: expected a term such as 3d6, d%, 4d6kh3 or 2",
                field="expression",
            )
        sign = -1 if m.group(1) == "-" else 1
        if m.group(7) is not None:
            constant += sign * _bounded_int(m.group(7), text)
        else:
            terms.append(_dice_term(sign, m, text))
        pos = m.end()
    expression = Expression(text=text, terms=tuple(terms), constant=constant)
    if expression.dice_count > MAX_DICE_PER_REQUEST:
        raise TooManyDice(expression.dice_count, MAX_DICE_PER_REQUEST, field="expression")
    return expression


def _bounded_int(digits: str, text: str) -> int:
    if len(digits) > 6:
        raise ExpressionError(f"a number in {text!r} is too large (at most 6 digits)", field="expression")
    return int(digits)


def _dice_term(sign: int, m: re.Match[str], text: str) -> DiceTerm:
    count = _bounded_int(m.group(2), text) if m.group(2) else 1
    faces = 100 if m.group(3) == "%" else _bounded_int(m.group(3), text)
    if count < 1 or count > MAX_DICE_PER_TERM:
        raise ExpressionError(
            f"{count} dice in one term of {text!r}: between 1 and {MAX_DICE_PER_TERM} allowed", field="expression"
        )
    if faces < 1 or faces > MAX_FACES:
        raise ExpressionError(f"a d{faces} in {text!r}: dice have between 1 and {MAX_FACES} faces", field="expression")
    keep = None
    if m.group(4):
        mode, which, n = m.group(4).lower(), m.group(5).lower(), _bounded_int(m.group(6), text)
        kept = n if mode == "k" else count - n
        if not 1 <= kept <= count:  # no more than were rolled, and at least one die kept
            why = "" if n > count else ": at least one die must be kept"
            raise ExpressionError(
                f"cannot {'keep' if mode == 'k' else 'drop'} {n} of {count} dice in {text!r}{why}", field="expression"
            )
        if mode == "k":
            keep = (which, n)
        else:  # dropping the n highest keeps the count-n lowest, and vice versa
            keep = ("l" if which == "h" else "h", count - n)
    return DiceTerm(sign=sign, count=count, faces=faces, keep=keep)
