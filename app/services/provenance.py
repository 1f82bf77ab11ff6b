"""How the caller's dice of a roll-log entry were made, and what each viewer reads of it
(API.md "Provenance and who may enter which die").

Every entry records `"provenance"`: `"server"` (the server's secure RNG), `"seed"`
(a reproducible RNG of the caller's seed, kept in `"seed"`) or `"table"` (dice the
caller entered); an entry of an imported bundle says `"imported"` whatever the bundle
claimed (kept in `"imported_provenance"`): only dice this service rolled are `server`.
The seed's value is the GM's: a player reads every entry without it."""

from __future__ import annotations

from typing import Any, Literal

from app.kit.errors import Forbidden
from app.services.records import Principal

Provenance = Literal["server", "seed", "table", "imported"]
SERVER: Provenance = "server"
IMPORTED: Provenance = "imported"
NO_DICE = {"provenance": SERVER}  # an entry the caller gave no dice for (a GM's heal, a revert)


def provenance(*, seed: int | None, table: bool) -> dict[str, Any]:
    """The provenance fields of an entry whose caller sent `seed` and/or table dice (`table`):
    table dice win (the caller chose those dice); a seed is stored whenever one was used."""
    fields: dict[str, Any] = {"provenance": "table" if table else "seed" if seed is not None else SERVER}
    if seed is not None:
        fields["seed"] = seed
    return fields


def as_imported(body: dict[str, Any]) -> dict[str, Any]:
    """An imported entry's body: its dice and outcome kept, its provenance `imported`, and what the
    bundle claimed in `imported_provenance` (an entry logged before provenance was recorded was the
    server's). An entry imported before keeps the claim it came with: a round trip vouches for no more."""
    claimed = body.get("provenance", SERVER)
    if claimed == IMPORTED:
        return body
    return {**body, "provenance": IMPORTED, "imported_provenance": claimed}


def check_caller_dice(
    principal: Principal, campaign_options: dict[str, Any], *, seed: int | None, dice: object | None
) -> None:
    """The GM may always choose its dice; a player, with table `dice` or a
    `seed` (which chooses them as surely), only when the campaign's `players_may_enter_dice`
    is true (else 403)."""
    if principal.is_gm or campaign_options.get("players_may_enter_dice", False):
        return
    if dice is not None or seed is not None:
        raise Forbidden(
            "players may not choose their dice (`dice` or `seed`) in this campaign: the server rolls "
            "them (option players_may_enter_dice)",
            field="dice" if dice is not None else "seed",
            code="dice_not_allowed",
        )


def entry_for_viewer(body: dict, *, is_gm: bool) -> dict:
    """The entry as this viewer reads it: the GM, all of it; a player, without `seed`
    (the same dict when there is nothing to leave out)."""
    if is_gm or "seed" not in body:
        return body
    return {key: value for key, value in body.items() if key != "seed"}
