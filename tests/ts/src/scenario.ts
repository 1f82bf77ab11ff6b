// A VTT plugin's session, strictly typed from openapi.json (openapi-typescript + openapi-fetch):
// a campaign, a player, a character, a test with table dice and its odds, the player's ticketed
// event stream (each message's data typed by the spec's `Event` union), a fight with NPC copies
// (start, a player out of turn, too few table dice, attack, revert, end), the roll log page by page,
// and the 422 / 409 / 412 a client must handle, by their `code` (narrowed by the spec's types, their
// members typed). No `any`, no cast: every value read is typed by the spec. Run by tests/api/test_typescript_client.py: `node dist/scenario.js <base url> <ruleset>`;
// it prints one JSON line of what it saw, and exits non-zero on the first surprise.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type Schemas = components["schemas"];
type Ruleset = "great-cosmos" | "asgard";
// a stream message's data, by its event name: read off the spec's union, no hand-written map
type Event = Schemas["Event"];
type EventData<N extends Event["event"]> = Extract<Event, { event: N }>["data"];

const [base, rulesetArg] = process.argv.slice(2);
if (base === undefined || (rulesetArg !== "great-cosmos" && rulesetArg !== "asgard")) {
  throw new Error("usage: node dist/scenario.js <base url> great-cosmos|asgard");
}
const ruleset: Ruleset = rulesetArg;

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`unexpected: ${what}`);
}

// every ruleset a `limited` view may name (an enum in the spec: the switch is exhaustive)
function scale(id: Schemas["RulesetId"]): string {
  switch (id) {
    case "great-cosmos":
    case "rulebook-d100":
      return "d100";
    case "asgard":
      return "3d6";
    case "worlds-awakening":
      return "d20";
  }
}

// each ruleset's sheet, campaign and encounter options (typed by the spec: the ruleset's schema),
// test body (with table dice) and the odds body (the same without dice)
type Sheets = { "great-cosmos": Schemas["GreatCosmosSheet"]; asgard: Schemas["AsgardSheet"] };
const SHEETS: Sheets = {
  "great-cosmos": {
    race: "humain",
    hp_max: 100,
    mp_max: 50,
    stats: { force: 68, esprit: 50, charisme: 40, agilite: 55, precision: 45, chance: 60 },
  },
  asgard: {
    skills: { combat: 6, defense: 4, survie: 3, perception: 3, resistance: 3, volonte: 1 },
    vitality_max: 20,
    heroism: 3,
    weapons: [{ name: "epee", damage_dice: 2, ranged: false }],
  },
};
type Options = { "great-cosmos": Schemas["GreatCosmosOptions"]; asgard: Schemas["AsgardOptions"] };
const OPTIONS: Options = { "great-cosmos": { extreme_scores: true }, asgard: { gm_difficulty: 12 } };

const anonymous = createClient<paths>({ baseUrl: base });
const seen: Record<string, number | string | boolean> = { ruleset };

// --- campaign, player, character --------------------------------------------------------
// a new campaign says its ruleset: its options are that ruleset's (a union by `ruleset`)
const newCampaign: Schemas["CampaignCreate"] =
  ruleset === "great-cosmos"
    ? { name: "Scénario TS", ruleset, options: OPTIONS["great-cosmos"] }
    : { name: "Scénario TS", ruleset, options: OPTIONS.asgard };
const created = await anonymous.POST("/v1/campaigns", { body: newCampaign });
check(created.response.status === 201 && created.data !== undefined, `campaign: ${created.response.status}`);
const campaign: Schemas["CampaignCreated"] = created.data;
// narrowed by `ruleset`, the options are typed: every option filled, the one set as sent
if (campaign.ruleset === "great-cosmos") {
  check(campaign.options.extreme_scores === true && campaign.options.movement_rules === true, "GC options");
  seen.campaign_option = "extreme_scores";
} else if (campaign.ruleset === "asgard") {
  check(campaign.options.gm_difficulty === 12 && campaign.options.take_11_allowed === true, "Asgard options");
  seen.campaign_option = "gm_difficulty";
} else {
  throw new Error(`campaign ruleset: ${campaign.ruleset}`);
}
seen.campaign_id = campaign.id;
check(created.response.headers.get("Location") === `/v1/campaigns/${campaign.id}`, "campaign Location");
const gm = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${campaign.gm_token}` } });
const cid = { params: { path: { campaign_id: campaign.id } } };

const player = await gm.POST("/v1/campaigns/{campaign_id}/players", { ...cid, body: { name: "Alice" } });
check(player.response.status === 201 && player.data !== undefined, "player");
const alice = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${player.data.token}` } });

const made = await gm.POST("/v1/campaigns/{campaign_id}/characters", {
  ...cid,
  body: { name: "Aiko", kind: "pc", player_id: player.data.id, sheet: SHEETS[ruleset] },
});
check(made.response.status === 201 && made.data !== undefined, `character: ${made.response.status}`);
const hero: Schemas["CharacterPublic"] = made.data;
// narrowed by `ruleset`, the sheet is typed: its pools filled from their maximum
if (hero.ruleset === "great-cosmos") seen.hero_pool = `${hero.sheet.hp ?? "?"}/${hero.sheet.hp_max}`;
else if (hero.ruleset === "asgard") seen.hero_pool = `${hero.sheet.vitality ?? "?"}/${hero.sheet.vitality_max ?? "?"}`;
else throw new Error(`character ruleset: ${hero.ruleset}`);
const heroPath = { params: { path: { character_id: hero.id } } };

// --- a test with table dice, and its exact odds ---------------------------------------------
type Body<P extends keyof paths> = paths[P] extends { post: { requestBody?: { content: { "application/json": infer B } } } }
  ? B
  : never;
const testBody: Body<"/v1/characters/{character_id}/tests"> =
  ruleset === "great-cosmos" ? { stat: "force", dice: [12] } : { skill: "combat", difficulty: "moyen", dice: [4, 4, 3] };
const oddsBody: Body<"/v1/characters/{character_id}/tests/odds"> =
  ruleset === "great-cosmos" ? { stat: "force" } : { skill: "combat", difficulty: "moyen" };
// players enter no dice unless the campaign allows it (403): the GM rolls with the table's dice
const refused = await alice.POST("/v1/characters/{character_id}/tests", { ...heroPath, body: testBody });
check(refused.response.status === 403 && refused.error !== undefined, `a player's dice: ${refused.response.status}`);
check(refused.error.code === "dice_not_allowed", `a player's dice: ${refused.error.code}`); // by code, not detail
seen.player_dice = refused.response.status;
seen.player_dice_code = refused.error.code;
const rolled = await gm.POST("/v1/characters/{character_id}/tests", { ...heroPath, body: testBody });
check(rolled.response.status === 201 && rolled.data !== undefined, `test: ${rolled.response.status}`);
const result = rolled.data;
check(result.ruleset === ruleset, "the result names its ruleset");
seen.test_outcome = result.outcome;
seen.test_dice = result.rolls.map((die) => die.value).join(",");
const located = rolled.response.headers.get("Location");
check(located === `/v1/campaigns/${campaign.id}/rolls/${result.id}`, "test Location");

const odds = await gm.POST("/v1/characters/{character_id}/tests/odds", { ...heroPath, body: oddsBody });
check(odds.response.status === 200 && odds.data !== undefined, "odds");
check(odds.data.success.probability.includes("/"), "exact odds are a fraction");
seen.p_success = odds.data.success.p;

// --- the player's event stream, by ticket (a browser's EventSource sends no header) ---------
// an NPC the players see `limited`: no sheet, its pools as words, its ruleset one of the enum's
const scout = await gm.POST("/v1/campaigns/{campaign_id}/characters", {
  ...cid,
  body: { name: "Éclaireur", kind: "npc", sheet: SHEETS[ruleset], player_access: "limited" },
});
check(scout.response.status === 201 && scout.data !== undefined, `limited npc: ${scout.response.status}`);
const glimpse = await alice.GET("/v1/characters/{character_id}", { params: { path: { character_id: scout.data.id } } });
check(glimpse.response.status === 200 && glimpse.data !== undefined, `limited read: ${glimpse.response.status}`);
check(!("sheet" in glimpse.data) && scale(glimpse.data.ruleset) !== "", "a limited view has no sheet");
seen.limited_ruleset = glimpse.data.ruleset;

const ticket = await alice.POST("/v1/campaigns/{campaign_id}/events/tickets", cid);
check(ticket.response.status === 201 && ticket.data !== undefined, "ticket");
const stream = await fetch(
  `${base}/v1/campaigns/${campaign.id}/events?ticket=${encodeURIComponent(ticket.data.ticket)}&follow=false&after=0`,
);
check(stream.status === 200, `stream: ${stream.status}`);
// each message's `event:` and `data:` lines, as an EventSource gives them (`e.type`, `e.data`)
const messages = (await stream.text()).split("\n\n").flatMap((block) => {
  const line = (field: string) =>
    block
      .split("\n")
      .find((l) => l.startsWith(`${field}: `))
      ?.slice(field.length + 2);
  const event = line("event");
  const data = line("data");
  return event === undefined || data === undefined ? [] : [{ event, data }];
});
// the handler of one event name gets that event's data, typed by the spec (`EventData`)
function each<N extends Event["event"]>(name: N, read: (data: EventData<N>) => void): number {
  const named = messages.filter((message) => message.event === name);
  for (const message of named) read(JSON.parse(message.data));
  return named.length;
}
const events = messages.map((message) => message.event);
check(events.includes("character.created") && events.includes("log.created"), `events: ${events.join(",")}`);
seen.events = events.length;
let limitedSeen = 0;
const charactersCreated = each("character.created", (data) => {
  // narrowed by `player_access`: a limited view has pools as words; a whole one its ruleset's sheet
  if (data.player_access === "limited" && "pools" in data) {
    check(data.id === scout.data.id && scale(data.ruleset) !== "", "the limited NPC's event");
    limitedSeen += Object.values(data.pools).filter((pool) => pool.status === "unhurt").length;
  } else if ("sheet" in data) {
    check(data.ruleset === ruleset, `a character event's ruleset: ${data.ruleset}`);
  }
});
check(charactersCreated >= 2 && limitedSeen >= 1, `character.created: ${charactersCreated}, limited ${limitedSeen}`);
let logged = 0;
each("log.created", (data) => {
  logged += data.characters_changed.length + (data.entry === null ? 0 : 1);
});
check(logged >= 1, "log.created carries its entry");
seen.typed_events = charactersCreated + logged;

// --- a fight with NPC copies: start, attack, revert, end -------------------------------------
const npc = await gm.POST("/v1/campaigns/{campaign_id}/characters", {
  ...cid,
  body: { name: "Gobelin", kind: "npc", sheet: SHEETS[ruleset] },
});
check(npc.response.status === 201 && npc.data !== undefined, "npc");
const encounter = await gm.POST("/v1/campaigns/{campaign_id}/encounters", {
  ...cid,
  body: {
    name: "Embuscade",
    // the ruleset's encounter options (Great Cosmos' tie rule, GC-O2; the others' shared ones)
    options: ruleset === "great-cosmos" ? { tie_method: "d20" } : { reveal_on_turn: true },
    combatants: [{ character_id: hero.id }, { character_id: npc.data.id, count: 2 }],
  },
});
check(encounter.response.status === 201 && encounter.data !== undefined, `encounter: ${encounter.response.status}`);
// an encounter does not carry its ruleset: Great Cosmos' options are those with `tie_method`
const fightOptions = encounter.data.options;
seen.tie_method = "tie_method" in fightOptions ? fightOptions.tie_method : "none";
check(fightOptions.hp_visibility === "exact" && fightOptions.reveal_on_turn, "encounter options filled");
const eid = { params: { path: { encounter_id: encounter.data.id } } };
check(encounter.data.combatants.length === 3, "the NPC copied twice");
const started = await gm.POST("/v1/encounters/{encounter_id}/start", { ...eid, body: {} });
check(started.response.status === 201 && started.data !== undefined, `start: ${started.response.status}`);
let current = started.data.current;
check(current !== null && current !== undefined, "a current turn");
const heroCombatant = started.data.combatants.find((c) => c.character_id === hero.id);
const foe = started.data.combatants.find((c) => c.character_id !== hero.id);
check(heroCombatant !== undefined && foe !== undefined, "both sides");
// the player acts for its hero out of turn: 409 `not_your_turn`, its `current` typed (the turn played)
for (let turns = 0; current?.combatant_ids.includes(heroCombatant.id) && turns < 3; turns++) {
  const passed = await gm.POST("/v1/encounters/{encounter_id}/next-turn", { ...eid, body: {} });
  check(passed.response.status === 201 && passed.data !== undefined, `next turn: ${passed.response.status}`);
  const state = await gm.GET("/v1/encounters/{encounter_id}", eid);
  check(state.data !== undefined, "the state after a turn");
  current = state.data.current;
}
const early = await alice.POST("/v1/encounters/{encounter_id}/actions", {
  ...eid,
  body: { type: "attack", actor_id: heroCombatant.id, target_id: foe.id, damage: "1d6" },
});
check(early.response.status === 409 && early.error !== undefined, `out of turn: ${early.response.status}`);
const outOfTurn = early.error;
check(outOfTurn.code === "not_your_turn", `out of turn: ${outOfTurn.code}`);
const playing: string[] = outOfTurn.current?.combatant_ids ?? [];
check(playing.length > 0 && !playing.includes(heroCombatant.id), `current: ${playing.join(",")}`);
seen.not_your_turn = early.response.status;
// a Great Cosmos attack without a weapon names its damage dice; an Asgard one uses the sheet's weapon
const blow: Body<"/v1/encounters/{encounter_id}/actions"> =
  ruleset === "great-cosmos"
    ? { type: "attack", actor_id: heroCombatant.id, target_id: foe.id, damage: "1d6" }
    : { type: "attack", actor_id: heroCombatant.id, target_id: foe.id };
// too few table dice: 422 `dice_needed`, `needed` says which die and whose (`by`, typed)
const short = await gm.POST("/v1/encounters/{encounter_id}/actions", { ...eid, body: { ...blow, dice: [] } });
check(short.response.status === 422 && short.error !== undefined, `no dice: ${short.response.status}`);
const missing = short.error;
check(missing.code === "dice_needed", `no dice: ${missing.code}`);
const needed = missing.needed; // always sent (required), `by` declared
check(needed.index === 0 && needed.by === heroCombatant.id, `needed: ${needed.die} by ${needed.by ?? "nobody"}`);
seen.dice_needed = short.response.status;
seen.needed_die = needed.die;
// the plan takes the action's very body (one type for both: a typo in it does not compile), rolls
// nothing, and lists first the die the action asked for
const planned = await gm.POST("/v1/encounters/{encounter_id}/actions/plan", { ...eid, body: blow });
check(planned.response.status === 200 && planned.data !== undefined, `plan: ${planned.response.status}`);
const firstDie = planned.data.dice[0];
check(firstDie !== undefined && firstDie.die === needed.die, `plan's first die: ${firstDie?.die ?? "none"}`);
seen.plan_dice = planned.data.dice.length;
const attack = await gm.POST("/v1/encounters/{encounter_id}/actions", { ...eid, body: blow });
check(
  attack.response.status === 201 && attack.data !== undefined,
  `attack: ${attack.response.status} ${JSON.stringify(attack.error)}`,
);
seen.attack_steps = attack.data.steps.length;
const actionPath = { params: { path: { encounter_id: encounter.data.id, action_id: attack.data.id } } };
const reverted = await gm.POST("/v1/encounters/{encounter_id}/actions/{action_id}/revert", { ...actionPath, body: {} });
check(reverted.response.status === 201, `revert: ${reverted.response.status}`);
const again = await gm.POST("/v1/encounters/{encounter_id}/actions/{action_id}/revert", { ...actionPath, body: {} });
check(again.response.status === 409 && again.error !== undefined, `revert twice: ${again.response.status}`);
const twice = again.error;
// narrowed by `code`: an already reverted action names its revert (typed), the latest action its id
if (twice.code === "already_reverted") seen.reverted_by = twice.reverted_by ?? "";
else if (twice.code === "not_latest_action") seen.reverted_by = twice.latest ?? "";
else throw new Error(`revert twice: ${twice.code}`);
seen.revert_twice = again.response.status;
seen.revert_twice_code = twice.code;
const ended = await gm.POST("/v1/encounters/{encounter_id}/end", eid);
check(ended.response.ok && ended.data !== undefined && ended.data.status === "ended", "end");

// --- the roll log, page by page ----------------------------------------------------------------
let cursor: string | undefined;
let entries = 0;
do {
  const page = await gm.GET("/v1/campaigns/{campaign_id}/rolls", {
    params: { path: { campaign_id: campaign.id }, query: cursor === undefined ? { limit: 1 } : { limit: 1, cursor } },
  });
  check(page.response.status === 200 && page.data !== undefined, "log page");
  entries += page.data.items.length;
  cursor = page.data.next_cursor ?? undefined;
} while (cursor !== undefined && entries < 50);
check(entries >= 2, `log entries: ${entries}`);
seen.log_entries = entries;

// --- 422, 412 ----------------------------------------------------------------------------------
const invalid = await gm.POST("/v1/campaigns/{campaign_id}/characters", {
  ...cid,
  body: { name: "", kind: "pc", sheet: SHEETS[ruleset] },
});
check(invalid.response.status === 422 && invalid.error !== undefined, `422: ${invalid.response.status}`);
check(invalid.error.code === "validation_failed", `422: ${invalid.error.code}`);
const where = invalid.error.errors?.[0]?.loc.join(".") ?? "";
check(where === "body.name", `422 at ${where}`);
seen.invalid = invalid.response.status;
seen.invalid_code = invalid.error.code;
const read = await gm.GET("/v1/characters/{character_id}", heroPath);
const etag = read.response.headers.get("ETag");
check(read.response.status === 200 && etag !== null, "a read has its ETag");
const renamed = await gm.PATCH("/v1/characters/{character_id}", {
  ...heroPath,
  body: { name: "Aiko la brave" },
  headers: { "If-Match": etag },
});
check(renamed.response.status === 200, `rename: ${renamed.response.status}`);
const stale = await gm.PATCH("/v1/characters/{character_id}", {
  ...heroPath,
  body: { name: "Aiko la sage" },
  headers: { "If-Match": etag }, // the version before the rename
});
check(stale.response.status === 412 && stale.error !== undefined, `412: ${stale.response.status}`);
const precondition = stale.error;
check(precondition.code === "stale_version", `412: ${precondition.code}`);
const currentVersion: number | undefined = precondition.current_version; // typed by the code's schema
check(currentVersion !== undefined && currentVersion > 0, `412: current_version ${String(currentVersion)}`);
seen.stale = stale.response.status;
seen.stale_code = precondition.code;
seen.current_version = currentVersion;

console.log(JSON.stringify(seen));
