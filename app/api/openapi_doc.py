"""The OpenAPI document: FastAPI's, plus what depends on the rulesets.

- The ruleset-dependent request bodies (the routes take a JSON object and the
  service validates it with the campaign's ruleset): each lists every ruleset's
  schema under `oneOf`, tagged `x-ruleset`, read from the adapters
  (`RulesetAdapter.request_models`); character actions are, per ruleset, a union
  discriminated by `type`. Every ruleset's model is named after its ruleset
  (`AsgardTestRequest`, `RulebookD100Side`…), title included, so no two schemas
  share a title and client generators keep every operation.
- Examples on every request body.
- The results are the routes' `response_model`s (app.rulesets.wire).
- Every `sheet` and `options` typed by its ruleset's schema (`_typed_by_ruleset`): a union by
  `ruleset` where the object carries it, the rulesets' schemas where it does not; the export
  bundles likewise (`_typed_bundles`).
- The data of each Server-Sent Event, as components listed by the events route's `x-events`.
- Exact integer bounds: FastAPI's document model turns a `maximum` into a float
  (2**63 - 1 becomes 9.223372036854776e18), so the request models are rendered by
  pydantic, and any other integral bound is an integer again.
- Readable names for generic pages (`ActionPage`), and every `*_at` a `date-time`.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import CoreModeRef, DefsRef, GenerateJsonSchema, JsonSchemaMode

from app import models
from app.api.problems import code_status
from app.kit.errors import CODES
from app.kit.models import Strict, union
from app.rulesets import encounter_bodies
from app.rulesets.contract.adapter import Capability, RulesetAdapter
from app.rulesets.events import EVENTS
from app.rulesets.registry import REGISTRY, RULESET_PACKAGES, all_adapters
from app.rulesets.registry import RULES as ENCOUNTER_RULES

REF = "#/components/schemas/{model}"
# The contract's version: it moves with every change a client can see (CHANGELOG.md, newest first).
CONTRACT_VERSION = "1.6.0"
LICENSE = {"name": "MIT", "identifier": "MIT"}
CONTACT = {"name": "jdr-rules-api", "url": "https://jdr-rules-api.dev/"}
SERVERS = [{"url": "http://127.0.0.1:8000", "description": "`make run` on this machine (set yours)"}]
TAGS = [
    {"name": "campaigns", "description": "Campaigns, their players and tokens; `/v1/me`."},
    {"name": "characters", "description": "Character sheets, each in its campaign's ruleset."},
    {"name": "play", "description": "Tests and their exact odds, rerolls, level-ups, character actions."},
    {"name": "rolls", "description": "Free dice rolls and the campaign's roll log."},
    {
        "name": "dice epochs",
        "description": "Verifiable server dice: each campaign's epochs (a commitment before the first die, "
        "salts, the GM's reveal) and hidden rolls published after it (docs/verify.md).",
    },
    {"name": "encounters", "description": "Fights: combatants, initiative, turns, actions, revert."},
    {"name": "events", "description": "The campaign's Server-Sent Events stream and its tickets."},
    {"name": "rulesets", "description": "The catalogue of rulesets (public)."},
    {"name": "system", "description": "Liveness and readiness probes (public)."},
]
# open unless ADMIN_TOKEN is set: anonymous or with a token (the admin's)
OPTIONAL_AUTH = {("post", "/v1/campaigns")}
# the operations whose success carries the resource's version as ETag (If-Match takes it back)
ETAGGED = {
    "create_campaign",
    "read_campaign",
    "update_campaign",
    "create_character",
    "read_character",
    "update_character",
    "create_encounter",
    "read_encounter",
    "update_encounter",
    "add_combatants",
    "update_combatant",
    "start_encounter",
    "next_encounter_turn",
    "act_in_encounter",
    "revert_encounter_action",
    "end_encounter",
}
# the 201s that name what they created (`Location`): the resource, or the roll-log entry of what rolled
UNLOCATED = {"create_event_ticket"}
HEADERS = {
    "X-Request-Id": {
        "description": "This request's id (the caller's own if it sent a valid one); quote it in a report.",
        "schema": {"type": "string"},
    },
    "ETag": {"description": "The resource's version, for If-Match and If-None-Match.", "schema": {"type": "string"}},
    "Location": {
        "description": "What was created: the resource, or the roll-log entry of what rolled.",
        "schema": {"type": "string", "format": "uri-reference"},
    },
    "Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}},
    "RateLimit-Policy": {
        "description": "The rate limits this request is subject to (IETF draft-ietf-httpapi-ratelimit-headers, "
        'a structured-field list): `"per-token";q=120;w=60`, the quota and the window in seconds. Sent when '
        "RATE_LIMIT_PER_MINUTE (or the campaign-creation throttle) is on.",
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": 'What is left of each limit: `"per-token";r=57;t=30`, the requests left and the seconds '
        "until the oldest request of the window leaves it.",
        "schema": {"type": "string"},
    },
}
IF_NONE_MATCH = {
    "name": "If-None-Match",
    "in": "header",
    "required": False,
    "description": "An ETag from an earlier read: 304 without a body if it is still current.",
    "schema": {"type": "string"},
}
ENCOUNTER_ACTIONS = "/v1/encounters/{encounter_id}/actions"
ENCOUNTER_PLAN = "/v1/encounters/{encounter_id}/actions/plan"  # takes exactly the action's body

# (method, path) -> which models of each adapter its body may be
BODIES: dict[tuple[str, str], Capability] = {
    ("post", "/v1/characters/{character_id}/tests"): Capability.TEST,
    ("post", "/v1/characters/{character_id}/tests/odds"): Capability.ODDS,
    ("post", "/v1/characters/{character_id}/tests/{test_id}/reroll"): Capability.REROLL,
    ("post", "/v1/characters/{character_id}/level-ups"): Capability.LEVEL_UP,
    ("post", "/v1/campaigns/{campaign_id}/tests/opposed"): Capability.OPPOSED,
    ("post", "/v1/campaigns/{campaign_id}/tests/group"): Capability.GROUP,
    ("post", "/v1/characters/{character_id}/actions"): Capability.ACTION,
}

# Examples of each ruleset's bodies: ruleset -> capability -> examples (character
# actions: by `type`), from each ruleset's `examples.py`. tests/api/test_openapi.py checks each against its model.
EXAMPLES: dict[str, Mapping[str, Any]] = {r.id: r.examples for r in REGISTRY.values()}

PROBLEM_DESCRIPTION = (
    "RFC 9457 problem details. Translate by `code` (a stable word, docs/problem-codes.md), never by "
    "`detail`; `type` is built from the code. `errors` lists each invalid field of a 422; `retry_after` "
    "repeats `Retry-After`; each code's own members are typed in its schema (`…Problem`)."
)
COMMON_MEMBERS: dict[str, Any] = {
    "type": {"type": "string", "format": "uri", "description": "The problem's URI, built from `code`."},
    "title": {"type": "string"},
    "status": {"type": "integer"},
    "detail": {"type": "string", "description": "For people: never parse it."},
    "request_id": {"type": "string", "description": "This request's id (X-Request-Id)."},
    "retry_after": {"type": "integer", "description": "Seconds to wait before trying again."},
    "errors": {
        "type": "array",
        "description": "Each invalid field (a 422).",
        "items": {
            "type": "object",
            "required": ["loc", "msg"],
            "properties": {
                "loc": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                "msg": {"type": "string", "description": "For people, in English: a client words it from `type`."},
                "type": {
                    "type": "string",
                    "description": "What does not fit the schema (pydantic's error type: `missing`, `int_parsing`, "
                    "`less_than_equal`, `string_too_long`, `literal_error`, `extra_forbidden`…); absent when a rule "
                    "refused the value (the problem's `code` says why).",
                },
                "ctx": {
                    "type": "object",
                    "description": "The figures of `type` (`le`, `ge`, `max_length`, `min_length`, `expected`…).",
                    "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "number"}]},
                },
            },
        },
    },
}
UNDECLARED = (405, 500)  # statuses no operation declares: its `default` response
REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    412: "PreconditionFailed",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
    422: "Unprocessable",
    429: "TooManyRequests",
    500: "Internal",
    503: "Unavailable",
}
STATUS_TEXT = {
    400: "Malformed request (a body that is not JSON, a bad header or cursor).",
    401: "No token, or a token that names nobody.",
    403: "Known caller, not allowed to do this.",
    404: "Nothing with this id for this caller (another campaign's things included).",
    409: "The current state forbids it (a turn, an ended fight, a race lost: retry).",
    412: "If-Match names a version that is not the current one.",
    413: "The body is too large.",
    415: "The body is not JSON.",
    422: "The body or a parameter is invalid, or the rules refuse it.",
    429: "A rate limit is reached: retry after Retry-After seconds.",
    503: "The service cannot answer now (database, saturation): retry after Retry-After seconds.",
}


def prefix(ruleset: str) -> str:
    """`rulebook-d100` -> `RulebookD100`: what a ruleset's schema names start with."""
    return "".join(part.capitalize() for part in re.split(r"[-_]", ruleset))


# each registered ruleset's `schemas` module -> the prefix of its models' names
_SCHEMA_MODULES = {f"{package}.schemas": prefix(ruleset) for ruleset, package in RULESET_PACKAGES.items()}


class _Names(GenerateJsonSchema):
    """Pydantic's schema generator, naming each model of a ruleset's `schemas` `<Ruleset><Class>`
    (a class whose name would collide with a shared model's, as FastAPI renders it, is named
    `<Ruleset><Class>` already: GreatCosmosEncounterOptions beside EncounterOptions)."""

    def get_defs_ref(self, core_mode_ref: CoreModeRef) -> DefsRef:
        ref = super().get_defs_ref(core_mode_ref)
        module, _, name = core_mode_ref[0].rsplit(":", 1)[0].rpartition(".")
        if module in _SCHEMA_MODULES:  # a class named after its ruleset already keeps its name
            named = name if name.startswith(_SCHEMA_MODULES[module]) else _SCHEMA_MODULES[module] + name
            self._prioritized_defsref_choices[ref].insert(0, DefsRef(named))
        return ref


def _render(types: list[tuple[Any, JsonSchemaMode]]) -> tuple[list[dict[str, Any]], dict[DefsRef, Any]]:
    """JSON Schemas of `types` ((type, mode) pairs): a reference for each, and the components."""
    generator = _Names(ref_template=REF)
    inputs = [(i, mode, TypeAdapter(t).core_schema) for i, (t, mode) in enumerate(types)]
    refs, defs = generator.generate_definitions(inputs)
    for name, schema in defs.items():
        if "title" in schema or "properties" in schema:
            schema["title"] = name  # the readable, unique name is the title too
    return [refs[(i, mode)] for i, (_, mode) in enumerate(types)], defs


def _action_union(adapter: RulesetAdapter) -> Any:
    return union(f"{prefix(adapter.id)}ActionRequest", adapter.request_models(Capability.ACTION), "type")


def _body_choices(adapters: list[RulesetAdapter]) -> dict[Capability, list[tuple[str, Any]]]:
    """capability -> [(ruleset, body type)]."""
    choices: dict[Capability, list[tuple[str, Any]]] = {}
    for capability in BODIES.values():
        for a in adapters:
            if capability is Capability.ACTION:
                if a.supports(capability):
                    choices.setdefault(capability, []).append((a.id, _action_union(a)))
            else:
                choices.setdefault(capability, []).extend((a.id, m) for m in a.request_models(capability))
    return choices


def _examples(ruleset: str, capability: Capability) -> dict[str, Any]:
    """Named examples of one ruleset's body: {name: example}."""
    if capability is Capability.ODDS:  # the test's body, nothing rolled
        tests = EXAMPLES.get(ruleset, {}).get(Capability.TEST.value) or []
        given: Any = [{k: v for k, v in body.items() if k not in ("seed", "dice", "hidden")} for body in tests]
    else:
        given = EXAMPLES.get(ruleset, {}).get(capability.value)  # (a list, or actions by type)
    if isinstance(given, dict):  # actions, by type
        return {f"{ruleset} {kind}": body for kind, body in given.items()}
    return {f"{ruleset} {i + 1}" if len(given or []) > 1 else ruleset: body for i, body in enumerate(given or [])}


def _fastapi_bodies(components: dict[str, Any]) -> list[type[BaseModel]]:
    """The body models FastAPI rendered itself (those of app.models' modules and the encounter bodies
    every ruleset's fields make, under their class name)."""
    found: list[type[BaseModel]] = []
    names = [f"{models.__name__}.{info.name}" for info in pkgutil.iter_modules(models.__path__)]
    for module in map(importlib.import_module, [*names, encounter_bodies.__name__]):
        found += [
            m
            for m in vars(module).values()
            if isinstance(m, type)
            and issubclass(m, Strict)
            and m.__module__ == module.__name__
            and m.__name__ in components
        ]
    return found


def _camel(code: str) -> str:
    return "".join(part.capitalize() for part in code.split("_"))


def problem_schemas() -> tuple[dict[str, Any], dict[int, list[str]]]:
    """`Problem` (any code), and the codes grouped by status and members, one
    object schema per group (`NotYourTurnProblem`, `ConflictProblem`…) whose `code` is the enum of
    its codes and whose members are typed: a union of a status's groups discriminated by `code`
    narrows in every generator. Returns the schemas and, per status, its groups' names."""
    schemas: dict[str, Any] = {
        "Problem": {
            "title": "Problem",
            "description": PROBLEM_DESCRIPTION,
            "type": "object",
            "required": ["type", "title", "status", "detail", "code"],
            "properties": {**COMMON_MEMBERS, "code": {"type": "string", "enum": sorted(CODES)}},
            "additionalProperties": True,
        }
    }
    groups: dict[tuple[int, tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for code in sorted(CODES):
        members, always = tuple(sorted(CODES[code].members)), tuple(sorted(CODES[code].always))
        groups.setdefault((code_status(code), members, always), []).append(code)
    by_status: dict[int, list[str]] = {}
    for (status, members, always), codes in sorted(groups.items()):
        if len(codes) == 1:
            name = f"{_camel(codes[0])}Problem"
        else:
            name = "".join(_camel(m) for m in members) + f"{REASONS[status]}Problem"
        properties = {
            "status": {"type": "integer", "enum": [status]},
            "code": {"type": "string", "enum": codes},
            **{m: dict(CODES[codes[0]].members[m]) for m in members},
        }
        meanings = "; ".join(f"`{c}`: {CODES[c].meaning}" for c in codes)
        schemas[name] = {  # a Problem, narrowed to its codes, with their members typed
            "title": name,
            "description": f"A {status} problem. {meanings}",
            "allOf": [
                {"$ref": REF.format(model="Problem")},
                {"type": "object", "properties": properties, **({"required": list(always)} if always else {})},
            ],
        }
        by_status.setdefault(status, []).append(name)
    return schemas, by_status


def own_properties(problem: dict[str, Any]) -> dict[str, Any]:
    """What a `…Problem` schema adds to `Problem`: its status, its codes, their members."""
    return dict(problem["allOf"][1]["properties"])


def problem_content(status: int | tuple[int, ...], by_status: dict[int, list[str]]) -> dict[str, Any]:
    """The body of a status (or of several, `default`'s): its problems, a union by `code`."""
    names = [n for s in (status if isinstance(status, tuple) else (status,)) for n in by_status[s]]
    if len(names) == 1:
        schema: dict[str, Any] = {"$ref": REF.format(model=names[0])}
    else:
        mapping = {}
        components, _ = problem_schemas()
        for name in names:
            for code in own_properties(components[name])["code"]["enum"]:
                mapping[code] = REF.format(model=name)
        schema = {
            "oneOf": [{"$ref": REF.format(model=name)} for name in names],
            "discriminator": {"propertyName": "code", "mapping": mapping},
        }
    return {"application/problem+json": {"schema": schema}}


def statuses(method: str, operation: dict[str, Any]) -> list[int]:
    """The error statuses an operation returns (the fuzz run checks that every
    status it sees is declared): what its credentials, path, parameters, body and method expose it to."""
    public = operation.get("security") == []
    params = operation.get("parameters", [])
    body = "requestBody" in operation
    found = {503}  # the database, a saturated server: any operation
    if not public:
        found |= {401, 403, 429}
    if any(p["in"] == "path" for p in params):
        found.add(404)
    if params or body:
        found.add(422)
    if body:
        found |= {400, 413, 415}
    if any(p["in"] == "query" and p["name"] in ("after",) for p in params):
        found.add(400)  # an event id that is not one
    if any(p["in"] == "header" and p["name"] == "Last-Event-ID" for p in params):
        found.add(400)
    if method != "get":
        found.add(409)  # a race lost, at least
    if any(p["in"] == "header" and p["name"] == "If-Match" for p in params):
        found.add(412)
    return sorted(found)


def _problem_responses(schema: dict[str, Any]) -> dict[int, list[str]]:
    """Every error is application/problem+json (API.md): the problem schemas as components (FastAPI's
    own 422 schemas dropped); returns each status's problem schemas."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    problems, by_status = problem_schemas()
    components.update(problems)
    for path in schema["paths"].values():
        for operation in path.values():
            operation.setdefault("responses", {}).pop("422", None)
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    return by_status


def _declare_problems(method: str, operation: dict[str, Any], by_status: dict[int, list[str]]) -> None:
    """The statuses the operation returns, each with the problems of that status (its security said),
    and `default`: any other problem (a 405 on another method of the path, a 500: a bug, logged)."""
    responses = operation["responses"]
    for status in statuses(method, operation):
        responses[str(status)] = {"description": STATUS_TEXT[status], "content": problem_content(status, by_status)}
    responses["default"] = {
        "description": "Any other problem: a 405 (another method of this path, see `Allow`), a 500 (a bug, logged).",
        "content": problem_content(UNDECLARED, by_status),
    }


_BOUNDS = ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum")
_PAGE = re.compile(r"Page_(\w+?)(?:Public)?_")


def _tidy(node: Any) -> None:
    """What FastAPI's document model blurs, put back everywhere: an integral bound is an
    integer again (10000.0 -> 10000), and a `*_at` string is a `date-time`."""
    if isinstance(node, dict):
        for key in _BOUNDS:
            value = node.get(key)
            if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
                node[key] = int(value)
        for name, prop in (node.get("properties") or {}).items():
            if name.endswith("_at") and prop.get("type") == "string" and "format" not in prop:
                prop["format"] = "date-time"
        for value in node.values():
            _tidy(value)
    elif isinstance(node, list):
        for value in node:
            _tidy(value)


def _name_pages(schema: dict[str, Any]) -> None:
    """`Page_ActionPublic_` (a generic `Page[ActionPublic]`) becomes `ActionPage`, title included."""
    components = schema["components"]["schemas"]
    renames = {}
    for name in list(components):
        found = _PAGE.fullmatch(name)
        if found and f"{found[1]}Page" not in components:
            renames[name] = f"{found[1]}Page"
            components[renames[name]] = {**components.pop(name), "title": renames[name]}
    if renames:
        _rewrite_refs(schema, {REF.format(model=old): REF.format(model=new) for old, new in renames.items()})


def _rewrite_refs(node: Any, refs: dict[str, str]) -> None:
    if isinstance(node, dict):
        if node.get("$ref") in refs:
            node["$ref"] = refs[node["$ref"]]
        for value in node.values():
            _rewrite_refs(value, refs)
    elif isinstance(node, list):
        for value in node:
            _rewrite_refs(value, refs)


def events_extension() -> list[dict[str, Any]]:
    """`x-events` of the events route: each event's name and the schema of its data (`EVENTS`, the
    one registry that `Event`, the AsyncAPI document and the route's description read too)."""
    return [
        {
            "event": name,
            "data": {"$ref": REF.format(model=model.__name__)},
            "description": (model.__doc__ or "").strip(),
        }
        for name, model in EVENTS.items()
    ]


def message_name(event: str) -> str:
    """`character.updated` -> `CharacterUpdated` (a component key: letters, digits, `.`, `-`, `_`)."""
    return "".join(part.capitalize() for part in event.replace("_", ".").split("."))


UNNUMBERED = {"error"}  # the server's last word on a stream: no `id:` line, nothing to resume after
EVENT_DESCRIPTION = (
    "A message of the event stream (`GET /v1/campaigns/{campaign_id}/events`), as a client reads it: "
    "`event` is its `event:` line (an `EventSource` message's `type`), `data` its `data:` line parsed "
    "(`JSON.parse(e.data)`), `id` its `id:` line (`lastEventId`). A union discriminated by `event`: in "
    'TypeScript, `Extract<components["schemas"]["Event"], { event: "log.created" }>["data"]` is the data '
    "of a `log.created` message."
)


def _events_union(components: dict[str, Any]) -> None:
    """`Event`: one member per event of `events_extension` (`LogCreatedMessage`…), `{event, data, id}`
    as the stream sends them, discriminated by `event`, so a generated client types each message's
    data without a hand-written map from names to schemas."""
    mapping = {}
    for entry in events_extension():
        event = entry["event"]
        name = f"{message_name(event)}Message"
        properties: dict[str, Any] = {
            "event": {"type": "string", "const": event, "description": "The message's `event:` line."},
            "data": entry["data"],
        }
        if event not in UNNUMBERED:
            properties["id"] = {
                "type": "string",
                "pattern": "^[0-9]+$",
                "description": "The message's `id:` line: the event's number, to resume after (`Last-Event-ID`).",
            }
        first = entry["description"].split("\n\n", 1)[0].replace("\n", " ")
        components[name] = {
            "title": name,
            "description": first,
            "type": "object",
            "required": ["event", "data"],
            "properties": properties,
            "additionalProperties": False,
        }
        mapping[event] = REF.format(model=name)
    components["Event"] = {
        "title": "Event",
        "description": EVENT_DESCRIPTION,
        "oneOf": [{"$ref": ref} for ref in mapping.values()],
        "discriminator": {"propertyName": "event", "mapping": mapping},
    }


# the answers whose `ruleset` is not a variant's `const` (a character as a `limited` player reads it,
# an import's summary): the enum of the registered rulesets, so a client narrows on it
RULESET_ID = "RulesetId"


def _ruleset_ids(components: dict[str, Any]) -> None:
    components[RULESET_ID] = {
        "title": RULESET_ID,
        "description": "A ruleset's id (`GET /v1/rulesets`).",
        "type": "string",
        "enum": list(REGISTRY),
    }
    for schema in components.values():
        prop = schema.get("properties", {}).get("ruleset")
        if prop is not None and prop.get("type") == "string" and not {"const", "enum", "$ref"} & set(prop):
            kept = {k: v for k, v in prop.items() if k == "description"}
            schema["properties"]["ruleset"] = {"$ref": REF.format(model=RULESET_ID), **kept}


def build_openapi(app: FastAPI) -> dict[str, Any]:
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    by_status = _problem_responses(schema)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    choices = _body_choices(all_adapters())
    encounter_actions = [(rules.ruleset, rules.action_union()) for rules in ENCOUNTER_RULES.values()]
    bodies = list(
        dict.fromkeys([*(t for pairs in choices.values() for _, t in pairs), *(t for _, t in encounter_actions)])
    )
    exact = _fastapi_bodies(components)
    refs, defs = _render([(t, "validation") for t in bodies + exact] + [(m, "serialization") for m in EVENTS.values()])
    components.update(defs)
    ref_of = {id(t): ref for t, ref in zip(bodies, refs)}
    for (method, path), capability in BODIES.items():
        operation = schema["paths"].get(path, {}).get(method)
        if operation is not None:
            tagged = [(ruleset, ref_of[id(body)]) for ruleset, body in choices.get(capability, [])]
            operation["requestBody"] = _ruleset_body(components, capability, tagged)
    actions = [{**ref_of[id(body)], "x-ruleset": ruleset} for ruleset, body in encounter_actions]
    for path in (ENCOUNTER_ACTIONS, ENCOUNTER_PLAN):  # an encounter's action (or its plan): per ruleset, a union
        operation = schema["paths"].get(path, {}).get("post")  # discriminated by `type`
        if operation is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": {_union_keyword(components, actions): actions}}},
            }
    _typed_by_ruleset(components)
    _ruleset_ids(components)
    _events_union(components)
    _name_pages(schema)
    _tidy(schema)
    _declare(schema, by_status)
    _lint_clean(schema)
    return schema


def _lint_clean(schema: dict[str, Any]) -> None:
    """What Redocly, Spectral and openapi-typescript report, mended:
    - a discriminator whose mapping names a union (LogEntry's `test` is TestResult, itself a union
      by ruleset) is dropped: every leaf's `const` tells the members apart all the same;
    - each member of a discriminated union requires its discriminator (a member whose `type` has a
      default overlapped the others; the service requires the tag anyway);
    - the event stream names its messages (`Event`, each event's data in `x-events`) as the
      `contentSchema` of the stream's string, so they are not unused components;
    - every operation has a description (its summary, when it had none), and `info` a contact."""
    components = schema["components"]["schemas"]
    for holder in components.values():
        discriminator = holder.get("discriminator")
        if not discriminator or "oneOf" not in holder:
            continue
        targets = [_target(components, {"$ref": ref}) for ref in discriminator.get("mapping", {}).values()]
        if any("oneOf" in t or "anyOf" in t for t in targets):
            holder.pop("discriminator")
            continue
        tag = discriminator["propertyName"]
        for target in targets:
            if tag in target.get("properties", {}) and tag not in target.get("required", []):
                target["required"] = [*target.get("required", []), tag]
    events = schema["paths"].get("/v1/campaigns/{campaign_id}/events", {}).get("get")
    if events is not None:
        stream = events["responses"]["200"]["content"]["text/event-stream"]["schema"]
        stream["contentSchema"] = {"type": "array", "items": {"$ref": REF.format(model="Event")}}
    for methods in schema["paths"].values():
        for operation in methods.values():
            if not operation.get("description"):
                operation["description"] = operation.get("summary", operation["operationId"]).rstrip(".") + "."
    schema["info"]["contact"] = CONTACT


def _declare(schema: dict[str, Any], by_status: dict[int, list[str]]) -> None:
    """Who may call what, said for every operation (`security: []` on the public
    ones, anonymous or bearer where ADMIN_TOKEN decides), the tags, a server, the licence."""
    schema["info"]["license"] = LICENSE
    schema["servers"] = SERVERS
    schema["tags"] = TAGS
    schema["components"]["headers"] = HEADERS
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            if (method, path) in OPTIONAL_AUTH:
                operation["security"] = [{}, {"HTTPBearer": []}]
            else:
                operation.setdefault("security", [])
            _declare_problems(method, operation, by_status)
            _declare_headers(method, operation)


def _header(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/headers/{name}"}


def _declare_headers(method: str, operation: dict[str, Any]) -> None:
    """The response headers each operation sends, If-None-Match and its 304."""
    name = operation["operationId"]
    limited = "429" in operation["responses"]  # a token's requests (and open campaign creation) are counted
    if method == "get" and name in ETAGGED:
        operation.setdefault("parameters", []).append(IF_NONE_MATCH)
        operation["responses"]["304"] = {
            "description": "Not modified: the ETag in If-None-Match is current.",
            "headers": {"ETag": _header("ETag"), "X-Request-Id": _header("X-Request-Id")},
        }
    for status, response in operation["responses"].items():
        headers = response.setdefault("headers", {})
        headers["X-Request-Id"] = _header("X-Request-Id")
        if status.startswith("2") and name in ETAGGED:
            headers["ETag"] = _header("ETag")
        if status == "201" and name not in UNLOCATED:
            headers["Location"] = _header("Location")
        if status in ("409", "429", "503"):  # a race lost, a limit, a busy or unreachable database
            headers["Retry-After"] = _header("Retry-After")
        if limited and status != "304":
            headers["RateLimit-Policy"] = _header("RateLimit-Policy")
            headers["RateLimit"] = _header("RateLimit")


def _ruleset_body(components: dict[str, Any], capability: Capability, tagged: list[tuple[str, dict]]) -> dict[str, Any]:
    """A ruleset-dependent body: `oneOf` each ruleset's schema (tagged `x-ruleset`), with examples
    on the operation (named by ruleset) and on each schema (an action union: on each action)."""
    oneof, examples = [], {}
    for ruleset, ref in tagged:
        oneof.append({**ref, "x-ruleset": ruleset})
        named = _examples(ruleset, capability)
        examples.update({name: {"summary": name, "value": value} for name, value in named.items()})
        target = _target(components, ref)
        if "oneOf" not in target:
            target.setdefault("examples", list(named.values()))
    for action_ref in (r for c in oneof for r in _target(components, c).get("oneOf", [])):
        action = components[action_ref["$ref"].rsplit("/", 1)[1]]
        kind = action["properties"]["type"]["const"]
        action.setdefault("examples", [e["value"] for e in examples.values() if e["value"].get("type") == kind])
    content: dict[str, Any] = {"schema": {_union_keyword(components, oneof): oneof} if oneof else {"type": "object"}}
    if examples:
        content["examples"] = examples
    return {"required": True, "content": {"application/json": content}}


def _target(components: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    return components[ref["$ref"].rsplit("/", 1)[1]]


def _leaves(components: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas a schema may be: a reference followed, a `oneOf` flattened."""
    if "$ref" in schema:
        return _leaves(components, _target(components, schema))
    if "oneOf" in schema:
        return [leaf for member in schema["oneOf"] for leaf in _leaves(components, member)]
    return [schema]


def _values(prop: dict[str, Any]) -> set[Any] | None:
    """The only values a property schema admits (`const`, `enum`), or None: not a closed set."""
    if "const" in prop:
        return {prop["const"]}
    if "enum" in prop:
        return set(prop["enum"])
    return None


def _leaves_exclusive(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """No value is valid for both (a sufficient test): one requires a property the other forbids
    (`additionalProperties: false`), or a property both require takes disjoint closed sets."""
    for one, other in ((a, b), (b, a)):
        if other.get("additionalProperties") is False and set(one.get("required", [])) - set(
            other.get("properties", {})
        ):
            return True
    for name in set(a.get("required", [])) & set(b.get("required", [])):
        left, right = _values(a["properties"][name]), _values(b["properties"][name])
        if left is not None and right is not None and not left & right:
            return True
    return False


def _union_keyword(components: dict[str, Any], choices: list[dict[str, Any]]) -> str:
    """`oneOf` when no body can be valid for two rulesets (a strict validator
    then picks exactly one), `anyOf` when the body alone cannot tell them apart (the ruleset is
    the campaign's: a Rulebook D100 stat is any name its GM chose, RB-S1, so `{"stat": "force"}`
    is a Great Cosmos and a Rulebook D100 test both); each choice keeps its `x-ruleset`."""
    leaves = [_leaves(components, c) for c in choices]
    exclusive = all(
        _leaves_exclusive(x, y)
        for i, left in enumerate(leaves)
        for right in leaves[i + 1 :]
        for x in left
        for y in right
    )
    return "oneOf" if exclusive else "anyOf"


# the objects that carry their `ruleset`: each a union of one variant per ruleset, discriminated by
# it, whose properties (`sheet`, `options`) are that ruleset's component
BY_RULESET = {
    "CampaignCreate": {"options": "Options"},
    "CampaignPublic": {"options": "Options"},
    "CampaignCreated": {"options": "Options"},
    "CampaignUpdatedEvent": {"options": "Options"},
    "CharacterPublic": {"sheet": "Sheet"},
    "CharacterEvent": {"sheet": "Sheet"},
}
# the objects that do not (the ruleset is the campaign's): (object, property) -> whose schemas
ANY_RULESET = {
    ("CharacterCreate", "sheet"): "Sheet",
    ("CampaignUpdate", "options"): "Options",
    ("EncounterCreate", "options"): "EncounterOptions",
    ("EncounterUpdate", "options"): "EncounterOptions",
    ("EncounterPublic", "options"): "EncounterOptionsPublic",
    ("StartedPublic", "options"): "EncounterOptionsPublic",
}


def _public_options(components: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    """An encounter's options as its state shows them, every one filled (stored validated, defaults
    included): `<Options>Public`, the options' schema with each property required. What tells the
    rulesets' options apart in an encounter, which does not carry its ruleset: a generated client
    parsing `options` keeps the first member that fits, and a Great Cosmos state's `tie_method` fits
    no other; an Asgard one's lacks it, which Great Cosmos' requires."""
    name = ref["$ref"].rsplit("/", 1)[1]
    public = f"{name}Public"
    if public not in components:
        schema = components[name]
        description = schema.get("description", "").strip()
        components[public] = {
            **schema,
            "title": public,
            "description": f"{description} As an encounter's state shows them: every option, filled.".strip(),
            "required": list(schema.get("properties", {})),
        }
    return {"$ref": REF.format(model=public)}


def _union_of(components: dict[str, Any], tagged: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The members of a union of the rulesets' schemas ((ruleset, reference) pairs): one per
    schema (rulesets sharing one: `x-ruleset` lists them), those with more required properties
    first (a generated client keeps the first member that parses)."""
    rulesets: dict[str, list[str]] = {}
    for ruleset, ref in tagged:
        rulesets.setdefault(ref["$ref"], []).append(ruleset)
    members = [{"$ref": ref, "x-ruleset": ids[0] if len(ids) == 1 else ids} for ref, ids in rulesets.items()]
    return sorted(members, key=lambda m: -len(_target(components, m).get("required", [])))


def _typed_by_ruleset(components: dict[str, Any]) -> None:
    """Each ruleset's sheet, campaign options and encounter options as named
    components (`GreatCosmosSheet`…), and every `sheet` and `options` typed by them:
    - an object that carries its `ruleset` (a character, a campaign, their events, a new campaign)
      is a union of one variant per ruleset discriminated by it (`AsgardCampaignPublic`), its
      `sheet` or `options` that ruleset's: a client narrows on `ruleset`, a generated one parses
      the right variant (each variant's `ruleset` is a `const` it checks);
    - one that does not (a new character's sheet, a campaign's or an encounter's options, an
      encounter's state) has the rulesets' schemas as an `anyOf` (a `oneOf` where no value fits
      two): the server validates the body with the campaign's ruleset, as before."""
    adapters = all_adapters()
    kinds = {"Sheet": [a.Sheet for a in adapters], "Options": [a.Options for a in adapters]}
    kinds["EncounterOptions"] = [ENCOUNTER_RULES[a.id].Options for a in adapters]
    types = [t for models in kinds.values() for t in models]
    refs, defs = _render([(t, "validation") for t in dict.fromkeys(types)])
    components.update({k: v for k, v in defs.items() if k not in components})
    ref_of = dict(zip(dict.fromkeys(types), refs))
    tagged = {kind: [(a.id, ref_of[t]) for a, t in zip(adapters, models)] for kind, models in kinds.items()}
    tagged["EncounterOptionsPublic"] = [(r, _public_options(components, ref)) for r, ref in tagged["EncounterOptions"]]

    for (name, prop), kind in ANY_RULESET.items():
        target = components[name]["properties"][prop]
        members = _union_of(components, tagged[kind])
        nullable = {"type": "null"} in target.get("anyOf", [])
        choices = [*members, {"type": "null"}] if nullable else members
        kept = {k: v for k, v in target.items() if k in ("title", "description", "default")}
        components[name]["properties"][prop] = {**kept, _union_keyword(components, choices): choices}
    for name, typed in BY_RULESET.items():
        base, mapping = components[name], {}
        for i, a in enumerate(adapters):
            variant = f"{prefix(a.id)}{name}"
            properties = {**base["properties"], "ruleset": {"const": a.id, "title": "Ruleset", "type": "string"}}
            for prop, kind in typed.items():
                ref = {"$ref": tagged[kind][i][1]["$ref"]}
                nullable = {"type": "null"} in properties[prop].get("anyOf", [])
                kept = {k: v for k, v in properties[prop].items() if k in ("description", "default")}
                properties[prop] = {**kept, "anyOf": [ref, {"type": "null"}]} if nullable else ref
            components[variant] = {
                **{k: v for k, v in base.items() if k != "examples"},
                "title": variant,
                "properties": properties,
            }
            mapping[a.id] = REF.format(model=variant)
        described = base.get("description") or ("A character" if name.startswith("Character") else "A campaign")
        field = " and ".join(f"`{prop}`" for prop in typed)
        components[name] = {
            "title": name,
            "description": f"{described.rstrip('.')}: its {field} is its `ruleset`'s.",
            **({"examples": base["examples"]} if "examples" in base else {}),
            "oneOf": [{"$ref": ref} for ref in mapping.values()],
            "discriminator": {"propertyName": "ruleset", "mapping": mapping},
        }
    _typed_bundles(components, [a.id for a in adapters], tagged)


def _typed_bundles(components: dict[str, Any], rulesets: list[str], tagged: dict[str, Any]) -> None:
    """The export bundles (answers of the exports, bodies of the imports) typed the same way: per
    ruleset, a bundle whose campaign's `options`, characters' `sheet` and encounters' `options` are
    that ruleset's (`AsgardCampaignBundle`, `AsgardBundleCharacter`…; the import checks them
    against the bundle's ruleset). A character bundle is discriminated by its `ruleset`; a campaign
    bundle, whose ruleset is its campaign's, is an `anyOf` of the variants, each `campaign.ruleset`
    a `const`: exactly one fits, and a generated client parses the one whose campaign fits."""

    def variant(name: str, ruleset: str, changed: dict[str, Any]) -> dict[str, str]:
        base = components[name]
        named = f"{prefix(ruleset)}{name}"
        props = {**base["properties"], **changed}
        components[named] = {**{k: v for k, v in base.items() if k != "examples"}, "title": named, "properties": props}
        return {"$ref": REF.format(model=named)}

    def ref(kind: str, i: int) -> dict[str, str]:
        return {"$ref": tagged[kind][i][1]["$ref"]}

    campaigns, characters = {}, {}
    for i, ruleset in enumerate(rulesets):
        const = {"const": ruleset, "title": "Ruleset", "type": "string"}
        character = variant("BundleCharacter", ruleset, {"sheet": ref("Sheet", i)})
        encounter = variant("BundleEncounter", ruleset, {"options": ref("EncounterOptions", i)})
        campaign = variant("BundleCampaign", ruleset, {"ruleset": const, "options": ref("Options", i)})
        listed = components["CampaignBundle"]["properties"]
        campaigns[ruleset] = variant(
            "CampaignBundle",
            ruleset,
            {
                "campaign": campaign,
                "characters": {**listed["characters"], "items": character},
                "encounters": {**listed["encounters"], "items": encounter},
            },
        )
        characters[ruleset] = variant("CharacterBundle", ruleset, {"ruleset": const, "character": character})
    for name, members, description in (
        ("CampaignBundle", campaigns, "its campaign's `ruleset` says which"),
        ("CharacterBundle", characters, "its `ruleset` says which"),
    ):
        base = components[name]
        described = (base.get("description") or "An export bundle").rstrip(".")
        union: dict[str, Any] = {
            "title": name,
            "description": f"{described}, per ruleset: {description}.",
            **({"examples": base["examples"]} if "examples" in base else {}),
        }
        if name == "CharacterBundle":
            union["oneOf"] = list(members.values())
            union["discriminator"] = {
                "propertyName": "ruleset",
                "mapping": {r: m["$ref"] for r, m in members.items()},
            }
        else:  # exactly one fits (by `campaign.ruleset`), which linters cannot see below the top
            union["anyOf"] = list(members.values())
        components[name] = union
    for name in ("BundleCharacter", "BundleEncounter", "BundleCampaign"):  # each ruleset's now
        del components[name]


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to own the document
