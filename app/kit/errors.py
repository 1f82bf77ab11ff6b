"""One error hierarchy for the whole app, without HTTP, and the one registry of problem codes.

The rules, the models and the services raise these; `app.api.problems` maps each
class to its status code in one place and renders problem+json. An error carries
what a client needs to act (a stable `code`, a detail, the field at fault, extra
figures, how long to wait before retrying) and nothing of the transport.

Every problem has a `code`, a stable snake_case word a client
translates (never the `detail`). Each code is declared once, in `CODES`, with the
class whose status it answers with, what it means and the JSON Schema of each
member it adds to the problem; the OpenAPI document, README's table
(docs/problem-codes.md) and the tests read this registry, so they cannot drift
from what the app sends. A raise site names its situation's code
(`Conflict("…", code="not_your_turn")`); without one, the class's default code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Code:
    """A problem code: its name, the error class whose status it has, what it means, the
    JSON Schema of each extra member its problems may carry (beside the common ones), and
    those of its members every one of its problems carries (`always`: required in the spec)."""

    name: str
    family: type[AppError]
    meaning: str
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    always: tuple[str, ...] = ()


CODES: dict[str, Code] = {}


def define(
    name: str, family: type[AppError], meaning: str, *, always: tuple[str, ...] = (), **members: dict[str, Any]
) -> str:
    """Register a code (once); returns its name."""
    if name in CODES:
        raise ValueError(f"problem code {name!r} is defined twice")
    if set(always) - set(members):
        raise ValueError(f"problem code {name!r}: `always` names members it does not declare")
    CODES[name] = Code(name, family, meaning, dict(members), tuple(always))
    return name


# An error's `field` so prefixed names a query parameter (its problem's `loc` is ["query", name]),
# for a parameter whose name a body also uses (`combatant_id`); any other field is the body's.
QUERY = "query."


class AppError(Exception):
    """A request the service refuses."""

    title = "Refused"
    code = "refused"

    def __init__(
        self,
        detail: str,
        *,
        field: str | None = None,
        extra: dict[str, Any] | None = None,
        retry_after: int | None = None,
        code: str | None = None,
    ):
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.extra = dict(extra or {})
        self.retry_after = retry_after
        if code is not None:
            self.code = code  # the situation's own code (CODES), else the class's


class RuleError(AppError):
    """The request is invalid: its body, or what the rules allow with it."""

    title = "Rule violation"
    code = "rule_violation"


class BadRequest(AppError):
    """A request malformed outside its body (a header, a cursor)."""

    title = "Bad request"
    code = "bad_request"


class Unauthorized(AppError):
    """No credentials, or credentials that name nobody."""

    title = "Unauthorized"
    code = "token_invalid"


class Forbidden(AppError):
    """Known caller, not allowed to do this."""

    title = "Forbidden"
    code = "forbidden"


class NotFound(AppError):
    """Nothing with this id for this caller (another campaign's things included)."""

    title = "Not found"
    code = "not_found"


class MethodNotAllowed(AppError):
    """A route that exists, with another method."""

    title = "Method not allowed"
    code = "method_not_allowed"


class Conflict(AppError):
    """The current state forbids it (already done, a race lost, a cap reached)."""

    title = "Conflict"
    code = "conflict"


class PreconditionFailed(AppError):
    """A stale If-Match."""

    title = "Precondition failed"
    code = "stale_version"


class PayloadTooLarge(AppError):
    title = "Payload too large"
    code = "payload_too_large"


class TooManyRequests(AppError):
    """A rate limit or a cap of concurrent use; `retry_after` says when to come back."""

    title = "Too many requests"
    code = "rate_limited"


class Unavailable(AppError):
    """The service cannot answer now (database down, saturated); `retry_after` says when to retry."""

    title = "Service unavailable"
    code = "unavailable"


class Internal(AppError):
    """A bug: logged, never explained."""

    title = "Internal error"
    code = "internal_error"


# --- the members some codes add (JSON Schema) -----------------------------------------------------
STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
STRS: dict[str, Any] = {"type": "array", "items": STR}
RULE: dict[str, Any] = {"type": "string", "description": "The rule's id (GC-P7, AS-H2…) or name."}
NULL: dict[str, Any] = {"type": "null"}
# any JSON value, spelled out: a generated client gets a union to narrow, not `unknown`
JSON_VALUE: dict[str, Any] = {
    "anyOf": [
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array", "items": {}},
        {"type": "object", "additionalProperties": True},
        NULL,
    ]
}


def component(name: str) -> dict[str, Any]:
    """A reference to a schema of the OpenAPI document (a test checks that each one resolves)."""
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"anyOf": [schema, NULL], "description": description}


# --- every code (the HTTP-level ones of app.api.problems, the dice ones of app.rules.errors too) ---
define("refused", AppError, "The service refuses the request (no more specific code applies).")
# 400
define("bad_request", BadRequest, "A request malformed outside its body (a header, a parameter).")
# 401
define("token_missing", Unauthorized, "No `Authorization: Bearer` token was sent.")
define("token_invalid", Unauthorized, "The token names nobody (unknown, rotated or deleted).")
define("admin_token_needed", Unauthorized, "This server creates campaigns only with the admin token (ADMIN_TOKEN).")
define("ticket_invalid", Unauthorized, "The stream ticket is unknown, already used or expired: ask for another.")
define("token_revoked", Unauthorized, "The stream's token was rotated or deleted, its player or campaign removed.")
# 403
define("forbidden", Forbidden, "The caller is known but may not do this.")
define("gm_only", Forbidden, "Only the campaign's GM may do this.")
define("owner_or_gm_only", Forbidden, "Only the GM or the owner (of the character, of the combatant) may do this.")
define(
    "rule_governed_field",
    Forbidden,
    "A field the rules govern (or the GM alone sets) was changed by someone else.",
    fields=STRS,
)
define("reaction_only", Forbidden, "A combatant's owner may change only its standing reaction.", fields=STRS)
define("dice_not_allowed", Forbidden, "Players may not choose their dice (`dice`, `seed`) in this campaign.")
# 404
define("not_found", NotFound, "Nothing with this id for this caller (another campaign's things included).")
define("no_route", NotFound, "No route has this path (every route is in /openapi.json).")
define("unknown_ruleset", NotFound, "No ruleset has this id.")
# 405
define("method_not_allowed", MethodNotAllowed, "The path exists, not with this method (see `Allow`).")
# 409
define("conflict", Conflict, "The current state forbids it.")
define(
    "not_your_turn",
    Conflict,
    "It is another combatant's turn.",
    always=("current",),
    current=nullable(component("CurrentTurn"), "The turn being played, as the caller may see it (null: none)."),
)
define("encounter_ended", Conflict, "The encounter has ended: nothing more can be done in it.")
define(
    "encounter_status",
    Conflict,
    "The encounter is not in the status this needs (setup, active).",
    encounter_status=STR,
)
define("no_combatants", Conflict, "An encounter starts with at least one combatant.")
define(
    "not_latest_action",
    Conflict,
    "Only the fight's latest action (not reverted) may be reverted or rerolled.",
    always=("latest",),
    latest=nullable(STR, "The id of the fight's latest action (null: it has none)."),
)
define("already_reverted", Conflict, "The action was reverted already.", reverted_by=STR)
define("revert_of_revert", Conflict, "A revert is not reverted: revert the action before it instead.")
define(
    "changed_since",
    Conflict,
    "A value the revert would restore changed since that action, or an NPC copy it would delete (a `join` "
    "made with `count`) was changed or put in another fight since; `force` reverts anyway.",
    combatant_id=STR,
    field=STR,
    expected={**JSON_VALUE, "description": "The value that action left."},
    current={**JSON_VALUE, "description": "The value now."},
)
define("combatant_down", Conflict, "The combatant is down: it does not act.")
define("cannot_act", Conflict, "A rule stops the combatant this round, or cancels this action.", rule=RULE)
define(
    "actions_per_turn",
    Conflict,
    "The combatant has used its actions this turn (one a turn unless a rule grants more).",
    rule=RULE,
    actions_taken=INT,
    actions_per_turn=INT,
    granted_by=STRS,
)
define("not_allowed_now", Conflict, "A rule forbids it at this point of the fight or of the game.", rule=RULE)
define("character_deleted", Conflict, "A character the request needs was deleted.", combatant_id=STR)
define("too_many_players", Conflict, "The campaign has as many players as it may.", max_players=INT)
define("too_many_webhooks", Conflict, "The campaign has as many webhooks as it may.", max_webhooks=INT)
define(
    "already_rerolled",
    Conflict,
    "The test was rolled again already (a test is rolled again once).",
    rerolled_by=STR,
    rerolls=STR,
    rule=RULE,
)
define("not_latest_entry", Conflict, "Only the character's latest entry can be rolled again.", newer_entry=STR)
define("epoch_started", Conflict, "The current dice epoch has rolled dice already: salts go in before its first die.")
define("too_many_salts", Conflict, "The current dice epoch has as many salts as it takes (16).")
define(
    "epoch_not_revealed",
    Conflict,
    "The roll's dice belong to a dice epoch not revealed yet: the GM reveals it first.",
    epochs=STRS,
)
define("not_hidden", Conflict, "The roll is not hidden: the players read it already.")
define("race_lost", Conflict, "The request lost a race with a concurrent write; nothing was written: retry.")
# 412
define(
    "stale_version",
    PreconditionFailed,
    "If-Match names a version that is not the current one: read it again.",
    current_version=INT,
)
define("concurrent_change", PreconditionFailed, "The resource changed while this request was applied: read it again.")
# 413
define("payload_too_large", PayloadTooLarge, "The body is larger than the server accepts.")
# 422
define("rule_violation", RuleError, "The rules do not allow this value or this combination.", rule=RULE)
define(
    "validation_failed",
    RuleError,
    "The body (or a parameter) does not fit its schema; `errors` locates each fault.",
)
define("body_too_deep", RuleError, "The body's objects and arrays nest too deep.")
define("level_up_choice", RuleError, "A level-up's choices (mode, stats, pools, points) are missing or not allowed.")
define("unknown_name", RuleError, "A name the sheet or the ruleset does not know (a stat, a skill, a weapon…).")
define(
    "unknown_id",
    RuleError,
    "An id in the body names nothing the request may use (not in this campaign or this encounter, or hidden).",
)
define("named_twice", RuleError, "The same thing is named twice where it may appear once.")
define("self_target", RuleError, "A combatant or character aims at itself where it may not.")
define("too_many", RuleError, "More items than the service allows (combatants, conditions…).")
define("unsupported_operation", RuleError, "The ruleset has no rule for this operation or action type.")
define(
    "stored_sheet_invalid", RuleError, "The stored sheet no longer fits its ruleset's schema: the GM should edit it."
)
define("invalid_cursor", RuleError, "The cursor is not one this service returned.")
define("invalid_bundle", RuleError, "An export bundle to import is invalid: `errors` names its first bad place.")
define(
    "unsafe_webhook_url",
    RuleError,
    "A webhook URL that is not http(s), or whose host is a private, loopback or link-local address (SSRF).",
)
define("idempotency_key_invalid", RuleError, "Idempotency-Key must be 1 to 200 characters.")
define("idempotency_key_reused", RuleError, "This Idempotency-Key was already used with a different request.")
define("not_used_by_odds", RuleError, "Odds roll nothing: leave out what only a roll uses (`dice`, `seed`…).")
define(
    "out_of_reach",
    RuleError,
    "The target is beyond the attack's reach.",
    always=("rule", "distance", "reach"),
    rule=RULE,
    distance={**INT, "description": "The target's distance from the attacker (GC-D1: |dx| + |dy|)."},
    reach={**INT, "description": "The farthest distance the rule lets this attack reach."},
)
define("move_too_far", RuleError, "The move is longer than the turn allows.", rule=RULE, max_move=INT, moved=INT)
define("turn_phases", RuleError, "A turn is move then act or act then move.", rule=RULE, phases=STRS)
define(
    "provoked",
    RuleError,
    "A provoked combatant's attack aims at its provoker.",
    rule=RULE,
    provoked_by=nullable(STR, "The provoker's combatant id (null: one the caller may not see)."),
)
define("reaction_not_allowed", RuleError, "This defender may not take this reaction against this attack.")
define("target_down", RuleError, "The target is down already.")
define("member_down", RuleError, "A member of a group (extras, cooperating characters) is down: it does not act.")
define("cell_taken", RuleError, "The cell is taken by another combatant.")
define("not_on_grid", RuleError, "The combatant is not on the grid: the GM places it first.")
define("overloaded", RuleError, "The inventory carries more than the character can.")
define("take_11_refused", RuleError, "Taking 11 is not possible here (only NPCs, when the campaign allows it).")
# 429
define(
    "rate_limited",
    TooManyRequests,
    "A rate limit is reached (`policy` says which); retry after `retry_after` seconds.",
    policy=STR,
)
define("too_many_streams", TooManyRequests, "As many event streams with this token as it may hold.")
# 503
define("unavailable", Unavailable, "The database cannot answer now; retry after `retry_after` seconds.")
define("server_busy", Unavailable, "The server holds as much work (requests, streams) as it may; retry shortly.")
define("timeout", Unavailable, "The database did not answer in time; nothing was written; retry shortly.")
# 500
define("internal_error", Internal, "A bug: it has been logged (quote `request_id`).")
