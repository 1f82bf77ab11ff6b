"""The records every use case hands around: the caller (`Principal`) and a character as
stored (`StoredCharacter`). Plain data, no behaviour: this module imports nothing of
`app.services`, so the modules that act on these records never import each other for them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

# Who may call a route, declared once on it (`app.api.deps.access`): a member of the campaign
# its path names, its GM, the owner of the character it names or the GM, or the server's admin.
Role = Literal["admin", "member", "gm", "owner_or_gm"]


class Unread:
    """A remembered caller's credential, not read by this request yet: one per request
    (`auth.known_principal`), shared by the request's copies of its principal (`replace`), so that its
    first read (`auth.checked`) serves the whole request — a refusal's access check reads it no more."""

    __slots__ = ("due",)

    def __init__(self) -> None:
        self.due = True


@dataclass(frozen=True)
class Principal:
    """The caller, handed explicitly to every use case. `remembered`: it came from this process's
    memory (`auth.known_principal`), so its credential has not been read by this request yet: the
    request's first database round trip checks it (`auth.verify`, or joined with the unit of work's
    first statement: `RollingWork`, `EncounterWork`), and a rotated or deleted token is refused
    at once, whichever worker remembers it; once read (`auth.checked`), it is not read again.

    `access`: the route's rule still to apply to the character or encounter its path names
    (`auth.granted`), which the use case applies with `auth.authorize` once it has read that row;
    `action` names the route in the refusal."""

    campaign_id: str
    role: str  # "gm" | "player"
    player_id: str | None
    token_hash: str
    unread: Unread | None = field(default=None, compare=False)  # a remembered credential's read, due or done
    access: Role = field(default="member", compare=False)
    action: str = field(default="", compare=False)

    @property
    def remembered(self) -> bool:
        """From this process's memory, its credential not read by this request yet."""
        return self.unread is not None and self.unread.due

    @property
    def is_gm(self) -> bool:
        return self.role == "gm"


@dataclass(frozen=True)
class StoredCharacter:
    """A character row as stored (its sheet is the stored JSON); `uow.CharacterRepository` reads
    and writes it."""

    id: str
    campaign_id: str
    name: str
    kind: str  # "pc" | "npc"
    player_id: str | None
    sheet: dict[str, Any]
    version: int
    created_at: datetime
    updated_at: datetime
    player_access: str = "observer"  # what other players see of it: observer | limited | none
    client_metadata: dict[str, str] = field(default_factory=dict)  # `metadata`: a client's own ids
