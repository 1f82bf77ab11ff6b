// The test panel: character, stat/skill, difficulty, modifier; the exact odds of every
// outcome before rolling; Roll (server dice) or Enter table dice; the result die by die.

import { api, describe } from "./api.js";
import { h, clear, field, select, humanize } from "./dom.js";
import { state, on, isGm, controls, mayEnterDice } from "./store.js";
import { SchemaForm, FormError, unwrap } from "./schema-form.js";
import { enterTableDice } from "./dice.js";
import { diceList, outcomeWords, outcomeClass, testLine } from "./format.js";
import { t, percent, sep, num } from "./i18n.js";

const HANDLED = ["seed", "dice", "hidden", "stat", "skill", "difficulty", "target", "modifier", "retry_of"];

export function renderTestPanel(section) {
  const schema = state.ruleset.test_request_schema;
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const character = h("select", { name: "test-character" });
  const stat = props.stat ? h("select", { name: "test-stat" }) : null;
  const skill = props.skill ? h("select", { name: "test-skill" }) : null;
  const difficultySchema = props.difficulty ? unwrap(props.difficulty, schema).schema : null;
  const difficulty = difficultySchema?.enum
    ? select(difficultySchema.enum.map(d => [d, humanize(d)]), { empty: t("form.none") }) : null;
  const target = props.target ? h("input", { type: "number", step: 1, name: "test-target" }) : null;
  const modifier = h("input", { type: "number", step: 1, value: "0", name: "test-modifier" });
  const hidden = isGm() ? h("input", { type: "checkbox", name: "test-hidden" }) : null;
  const extras = new SchemaForm({ schema: { ...schema, required: [] }, root: schema, mode: "create", omit: HANDLED });
  const odds = h("div", { class: "odds", id: "odds", role: "group", "aria-live": "polite", "aria-label": t("test.odds") });
  const dice = h("div", { class: "dice-area" });
  const result = h("div", { class: "result", id: "test-result", role: "status", "aria-live": "polite" });
  const rollButton = h("button", { type: "submit" }, t("test.roll"));
  // table dice only for whom the campaign lets enter them (a player's 403 is never offered)
  const tableButton = mayEnterDice() ? h("button", { type: "button", class: "secondary" }, t("test.table")) : null;

  const form = h("form", { class: "test-form", novalidate: true, "aria-labelledby": "test-title" },
    field(t("test.character"), character),
    stat ? field(required.has("stat") ? t("test.stat") : t("test.stat.optional"), stat) : null,
    skill ? field(required.has("skill") ? t("test.skill") : t("test.skill.optional"), skill) : null,
    difficulty ? field(t("test.difficulty"), difficulty) : null,
    target ? field(t("test.target"), target) : null,
    field(t("test.modifier"), modifier),
    extras.el.childElementCount ? h("details", {}, h("summary", {}, t("test.options")), extras.el) : null,
    hidden ? field(t("test.hidden"), hidden) : null,
    odds,
    h("div", { class: "actions" }, rollButton, tableButton),
    dice);
  clear(section, h("h2", { id: "test-title" }, t("test.title")), form, result);

  const fillCharacters = () => {
    const keep = character.value;
    const mine = [...state.characters.values()].filter(controls).sort((a, b) => a.name.localeCompare(b.name, "fr"));
    clear(character, mine.map(c => h("option", { value: c.id }, c.name)));
    if (mine.some(c => c.id === keep)) character.value = keep;
    fillNames();
  };
  const fillNames = () => {
    const sheet = state.characters.get(character.value)?.sheet || {};
    const names = (prop, fromRuleset, fromSheet) => {
      const declared = unwrap(prop, schema).schema.enum;
      if (declared) return declared;
      return [...new Set([...(fromSheet && typeof fromSheet === "object" && !Array.isArray(fromSheet) ? Object.keys(fromSheet) : []),
                          ...(fromRuleset || [])])];
    };
    if (stat) refill(stat, names(props.stat, state.ruleset.stats, sheet.stats), !required.has("stat"));
    if (skill) refill(skill, names(props.skill, state.ruleset.skills, sheet.skills), !required.has("skill"));
    scheduleOdds();
  };

  function body() {
    const out = { ...(extras.value() || {}) };
    if (stat && stat.value) out.stat = stat.value;
    if (skill && skill.value) out.skill = skill.value;
    if (difficulty && difficulty.value) out.difficulty = difficulty.value;
    if (target && target.value.trim() !== "") out.target = Number(target.value);
    if (modifier.value.trim() !== "" && Number(modifier.value) !== 0) out.modifier = Number(modifier.value);
    return out;
  }

  let timer = null;
  let asked = 0;
  function scheduleOdds() {
    clearTimeout(timer);
    timer = setTimeout(showOdds, 120);
  }
  async function showOdds() {
    const id = character.value;
    if (!id) return clear(odds, h("p", { class: "hint" }, t("test.nobody")));
    const ticket = ++asked;
    try {
      const answer = await api.post(`/v1/characters/${id}/tests/odds`, body());
      if (ticket === asked) clear(odds, oddsBar(answer, state.ruleset.outcomes));
    } catch (err) {
      if (ticket === asked) clear(odds, h("p", { class: "error" }, describe(err)));
    }
  }

  const send = extra => {
    const payload = { ...body(), ...extra };
    if (hidden?.checked) payload.hidden = true;
    return api.post(`/v1/characters/${character.value}/tests`, payload);
  };
  const show = entry => {
    if (!entry) return;
    const name = state.characters.get(entry.character_id)?.name ?? "";
    clear(result,
      h("p", { class: `outcome ${outcomeClass(entry.outcome)}` }, `${name}${sep()}${outcomeWords(entry.outcome)}`,
        entry.hidden ? h("span", { class: "badge hidden-roll" }, t("log.hidden")) : null),
      h("p", {}, testLine(entry)),
      diceList(entry.rolls),
      rerollButton(entry));
    scheduleOdds();  // karma and such may have moved
  };
  // AS-H2: a test rolled again for a heroism point, where the ruleset has it (its catalogue says so)
  const rerollButton = entry => {
    const spend = state.ruleset.heroism_spends?.reroll;
    const who = state.characters.get(entry.character_id);
    if (!spend || !entry.id || !controls(who) || typeof who?.sheet?.heroism !== "number" || who.sheet.heroism < (spend.cost ?? 1)) return null;
    const button = h("button", { type: "button", class: "secondary", id: "heroism-reroll" },
      t("test.reroll", { n: spend.cost ?? 1 }), h("span", { class: "rule-id" }, ` [${spend.rule}]`));
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const again = await api.post(`/v1/characters/${entry.character_id}/tests/${entry.id}/reroll`, {});
        show(again?.kind === "test" ? again : again?.entry ?? again?.test ?? again?.result ?? again);
      } catch (err) {
        clear(result, h("p", { class: "error" }, describe(err)));
      }
    });
    return button;
  };

  form.addEventListener("submit", async event => {
    event.preventDefault();
    if (!character.value) return;
    rollButton.disabled = true;
    try { show(await send({})); } catch (err) { clear(result, h("p", { class: "error" }, describe(err))); }
    finally { rollButton.disabled = false; }
  });
  tableButton?.addEventListener("click", async () => {
    if (!character.value) return;
    clear(result);
    show(await enterTableDice(dice, tableDice => send({ dice: tableDice }),
      { onError: err => clear(result, h("p", { class: "error" }, describe(err))) }));
  });
  character.addEventListener("change", fillNames);
  form.addEventListener("input", event => { if (!dice.contains(event.target)) scheduleOdds(); });
  form.addEventListener("change", event => { if (!dice.contains(event.target) && event.target !== character) scheduleOdds(); });
  fillCharacters();
  on("characters", () => { fillCharacters(); });
  const operations = OPERATIONS.filter(kind => isGm() && state.ruleset.operations?.schemas?.[kind]);
  if (operations.length) {
    section.append(h("div", { class: "actions operations" }, operations.map(kind =>
      h("button", { type: "button", class: "secondary", name: `ops-${kind}`,
                    onclick: () => openOperationDialog(kind, state.ruleset.operations.schemas[kind]) }, t(`ops.${kind}.title`)))));
  }
}

// The GM's opposed and group tests (`POST /v1/campaigns/{cid}/tests/{kind}`), where the
// ruleset's catalogue gives their body schema (`operations.schemas`); the server rolls, or the table's dice.
const OPERATIONS = ["opposed", "group"];
const nameOfCharacter = id => state.characters.get(id)?.name ?? "?";

/** The form in a dialog (opened from the panel: its fields never mix with the simple test's); it stays
 * open on the result, for another roll. */
function openOperationDialog(kind, schema) {
  const dialog = h("dialog", { class: "sheet-dialog", "aria-labelledby": `ops-${kind}-title` });
  dialog.append(operationForm(kind, schema, dialog));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  dialog.querySelector("input, select, textarea")?.focus();
}

function operationForm(kind, schema, dialog) {
  const names = [...state.characters.values()].sort((a, b) => a.name.localeCompare(b.name, "fr"));
  const skills = state.ruleset.skills || [];
  const widgets = {
    character_id: ctx => {
      const control = select(names.map(c => [c.id, c.name]), { empty: ctx.required ? undefined : t("form.none") });
      control.name = ctx.path.join(".");
      return { el: field(ctx.label, control), control, get: () => control.value || undefined };
    },
  };
  if (skills.length) {
    widgets.skill = ctx => {
      const control = select(skills.map(k => [k, humanize(k)]), { empty: ctx.required ? undefined : t("form.none") });
      control.name = ctx.path.join(".");
      return { el: field(ctx.label, control), control, get: () => control.value || undefined };
    };
  }
  const form = new SchemaForm({ schema, root: schema, mode: "create", omit: ["seed", "dice", "mode"], widgets, value: {} });
  for (const side of ["a", "b"]) {  // an opposition's sides: who acts, who defends
    const legend = form.slots.get(side)?.querySelector(":scope > legend");
    if (legend) legend.textContent = t(`ops.side.${side}`);
  }
  const titleId = `ops-${kind}-title`;
  const result = h("div", { class: "result", id: `ops-${kind}-result`, role: "status", "aria-live": "polite" });
  const dice = h("div", { class: "dice-area" });
  const rollButton = h("button", { type: "submit" }, t("test.roll"));
  const tableButton = h("button", { type: "button", class: "secondary" }, t("test.table"));
  const el = h("form", { class: "test-form operation", id: `ops-${kind}`, novalidate: true, "aria-labelledby": titleId },
    h("h2", { id: titleId }, t(`ops.${kind}.title`)), form.el,
    h("div", { class: "actions" }, rollButton, tableButton,
      h("button", { type: "button", class: "secondary", onclick: () => dialog.close() }, t("ops.close"))), dice, result);
  const path = `/v1/campaigns/${state.campaign.id}/tests/${kind}`;
  const values = () => {
    try { return form.value() || {}; } catch (err) { if (err instanceof FormError) form.showErrors(err.errors); return null; }
  };
  const fail = err => {
    const unplaced = form.showErrors((err.problem?.errors || []).filter(e => !(e.loc || []).includes("dice")), err.problem);
    clear(result, h("p", { class: "error" }, `${describe(err)}${unplaced.length ? ` — ${unplaced.join(" ; ")}` : ""}`));
  };
  el.addEventListener("submit", async event => {
    event.preventDefault();
    const body = values();
    if (!body) return;
    rollButton.disabled = true;
    try { showOperation(result, await api.post(path, body)); } catch (err) { fail(err); } finally { rollButton.disabled = false; }
  });
  tableButton.addEventListener("click", async () => {
    const body = values();
    if (!body) return;
    clear(result);
    form.clearErrors();
    showOperation(result, await enterTableDice(dice, tableDice => api.post(path, { ...body, dice: tableDice }),
      { nameOf: nameOfCharacter, onError: fail }));
  });
  return el;
}

/** An opposition's winner and margin, a group test's leader and outcome, then the dice. */
function showOperation(result, entry) {
  if (!entry) return;
  const line = entry.kind === "opposed"
    ? t("ops.opposed.won", { name: nameOfCharacter(entry.winner_character_id), n: num(entry.margin ?? 0) })
    : `${entry.leader_character_id ? `${t("ops.group.leads", { name: nameOfCharacter(entry.leader_character_id) })}${sep()}` : ""}${
      outcomeWords(entry.outcome)}`;
  clear(result,
    h("p", { class: `outcome ${outcomeClass(entry.outcome)}`, dataset: { entryId: entry.id || "" } },
      `${t(`log.kind.${entry.kind}`)}${sep()}${line}`,
      entry.hidden ? h("span", { class: "badge hidden-roll" }, t("log.hidden")) : null),
    diceList(entry.rolls || [], id => nameOfCharacter(id)));
}

function refill(control, names, optional) {
  const keep = control.value;
  clear(control, optional ? h("option", { value: "" }, t("form.none")) : null, names.map(n => h("option", { value: n }, humanize(n))));
  if ([...control.options].some(o => o.value === keep)) control.value = keep;
}

/** Every possible outcome's exact probability as one stacked bar, and as text (impossible ones left out). */
export function oddsBar(answer, order = []) {
  const entries = Object.entries(answer.outcomes || {}).filter(([, v]) => v.p > 0)
    .sort(([a], [b]) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
  const pct = percent;
  return h("div", {},
    h("div", { class: "odds-bar", role: "img",
               "aria-label": entries.map(([o, v]) => `${outcomeWords(o)} ${pct(v.p)}`).join(", ") },
      entries.filter(([, v]) => v.p > 0).map(([o, v]) =>
        h("span", { class: `seg ${o}`, style: `flex-grow: ${v.p}`, title: `${outcomeWords(o)}: ${v.probability}` }))),
    h("ul", { class: "odds-legend" },
      entries.map(([o, v]) => h("li", { dataset: { outcome: o } }, h("span", { class: `swatch ${o}`, "aria-hidden": "true" }),
        `${outcomeWords(o)}${sep()}`, h("strong", {}, v.probability), ` (${pct(v.p)})`))),
    answer.success ? h("p", { class: "odds-success" }, t("odds.success"), h("strong", {}, answer.success.probability),
      ` (${pct(answer.success.p)})`) : null);
}
