// The encounter tracker: build a fight from the campaign's characters, start it, the turn
// order and whose turn it is, each combatant's resources and conditions, the current
// combatant's actions (their bodies read from the ruleset's catalogue entry, `combat`),
// next turn, undo, end; every action as a readable line.

import { api, describe } from "./api.js";
import { h, clear, field, select, setError, bar, humanize, uid } from "./dom.js";
import { state, emit, isGm, nameOf, rememberCombatants } from "./store.js";
import { SchemaForm, FormError } from "./schema-form.js";
import { enterTableDice } from "./dice.js";
import { actionLine, diceList } from "./format.js";

const ID_FIELDS = new Set(["target_id", "also_target_id", "ally_id"]);

/** The action types of this ruleset's encounters, as `GET /v1/rulesets/{id}` describes them
 * (`combat.actions`): type -> {schema (its `$defs` within), gm_only}. */
const actionTypes = () => state.ruleset?.combat?.actions || {};
const gmOnly = type => Boolean(actionTypes()[type]?.gm_only);

export function statusWord(resource) {
  if (resource.status) return resource.status;
  if (resource.value >= resource.max) return "unhurt";
  if (resource.value > resource.max / 2) return "wounded";
  if (resource.value > 0) return "bloodied";
  return "down";
}

/** One combatant: name, side, initiative, resources (bars, or status words), posture, conditions. */
export function combatantView(c, { current, initiative, table = false, hpVisibility = "exact" } = {}) {
  const resources = Object.entries(c.resources || {}).filter(([, r]) => r.status || r.max > 0);
  const asStatus = table && hpVisibility !== "exact";
  const li = h("li", { class: `combatant ${current ? "current" : ""} ${c.down ? "down" : ""}`,
                       dataset: { combatantId: c.id }, "aria-current": current ? "true" : null },
    h("div", { class: "who" },
      current ? h("span", { class: "turn-mark", "aria-hidden": "true" }, "▶ ") : null,
      h("strong", { class: "name" }, c.name),
      h("span", { class: "side" }, ` ${c.side}`),
      initiative !== undefined && initiative !== null ? h("span", { class: "init" }, ` · init ${initiative}`) : null,
      c.hidden ? h("span", { class: "badge hidden-roll" }, "hidden") : null,
      c.down ? h("span", { class: "badge down" }, "down") : null,
      current ? h("span", { class: "sr-only" }, " (current turn)") : null));
  if (hpVisibility === "hidden" && table) { /* nothing about resources */ }
  else if (resources.length) {
    li.append(h("div", { class: "bars" }, resources.map(([name, r]) => (r.status || asStatus)
      ? h("p", { class: `status-word ${statusWord(r)}`, dataset: { resource: name } }, `${name}: ${statusWord(r)}`)
      : bar(name, r.value, r.max))));
  }
  const extras = [];
  if (c.posture) extras.push(h("span", { class: "chip" }, `posture: ${humanize(c.posture)}`));
  if (c.position && !table) extras.push(h("span", { class: "chip" }, `at (${c.position.x}, ${c.position.y})`));
  if (c.reaction && !table) extras.push(h("span", { class: "chip" }, `reaction: ${humanize(c.reaction)}`));
  for (const cond of c.conditions || []) {
    extras.push(h("span", { class: "chip condition", dataset: { condition: cond.name } },
      `${cond.name}${cond.rounds_left ? ` (${cond.rounds_left})` : ""}`));
  }
  if (extras.length) li.append(h("div", { class: "chips" }, extras));
  return li;
}

/** The fight in turn order (setup: as added). */
export function ordered(encounter) {
  const byId = new Map(encounter.combatants.map(c => [c.id, c]));
  if (!encounter.order?.length) return encounter.combatants.map(c => ({ c, slot: null }));
  const seen = new Set();
  const rows = [];
  for (const slot of encounter.order) {
    const c = byId.get(slot.combatant_id);
    if (!c) continue;
    seen.add(c.id);
    rows.push({ c, slot });
  }
  for (const c of encounter.combatants) if (!seen.has(c.id)) rows.push({ c, slot: null });
  return rows;
}

export const currentIds = encounter => new Set(encounter.current?.combatant_ids || (encounter.current?.combatant_id ? [encounter.current.combatant_id] : []));

export class Tracker {
  constructor() {
    this.list = [];
    this.encounter = null;
    this.actions = [];
  }

  mount(section) {
    this.section = section;
    this.picker = h("select", { name: "encounter" });
    this.picker.addEventListener("change", () => this.select(this.picker.value));
    this.view = h("div", { class: "encounter-view", id: "encounter-view" });
    clear(section,
      h("div", { class: "section-head" }, h("h2", { id: "encounter-title" }, "Encounter"),
        field("Encounter", this.picker),
        isGm() ? h("button", { type: "button", onclick: () => this.openBuilder() }, "New encounter") : null),
      this.view);
    this.diceArea = h("div", { class: "dice-area" });  // kept across redraws: a dice entry in progress survives events
    this.panel = h("div", { class: "action-panel" });
    this.panelKey = null;
  }

  async loadList(prefer) {
    const page = await api.get(`/v1/campaigns/${state.campaign.id}/encounters`, { limit: 50 });
    this.list = page.items;
    clear(this.picker, this.list.length ? this.list.map(e => h("option", { value: e.id }, `${e.name} (${e.status})`))
      : h("option", { value: "" }, "— none —"));
    const pick = prefer || this.encounter?.id || (this.list.find(e => e.status === "active") || this.list[0])?.id;
    if (pick) {
      this.picker.value = pick;
      await this.select(pick);
    } else {
      this.encounter = null;
      this.draw();
    }
  }

  async select(id) {
    if (!id) return;
    if (id !== state.encounterId) {
      this.encounter = null;
      this.actions = [];
    }
    state.encounterId = id;
    await this.refresh();
  }

  /** Reads the fight again; calls while one read runs are folded into one more read after it. */
  refresh() {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = (async () => {
      do {
        this.again = false;
        await this.read();
      } while (this.again);
    })().finally(() => { this.reading = null; });
    return this.reading;
  }

  async read() {
    const id = state.encounterId;
    if (!id) return;
    const [encounter, actions] = await Promise.all([
      api.get(`/v1/encounters/${id}`), api.get(`/v1/encounters/${id}/actions`, { limit: 30 })]);
    if (id !== state.encounterId) return;
    if (this.encounter && encounter.version < this.encounter.version) return;
    this.encounter = encounter;
    this.actions = actions.items;
    const option = [...this.picker.options].find(o => o.value === encounter.id);
    if (option) option.textContent = `${encounter.name} (${encounter.status})`;
    rememberCombatants(encounter);
    emit("combatants");
    emit("encounter", encounter);
    this.draw();
  }

  /** An `encounter.*` event: a fight not in the list reloads it; the one shown is read again if newer. */
  onEvent(name, data) {
    if (!this.list.some(e => e.id === data.id)) {
      return this.loadList(this.encounter ? undefined : data.id).catch(err => console.warn(err));
    }
    if (data.id === state.encounterId && (!this.encounter || data.version > this.encounter.version)) {
      this.refresh().catch(err => console.warn(err));
    }
    if (name === "encounter.updated") this.relabel().catch(() => {});
  }

  async relabel() {
    const page = await api.get(`/v1/campaigns/${state.campaign.id}/encounters`, { limit: 50 });
    this.list = page.items;
    for (const option of this.picker.options) {
      const e = this.list.find(x => x.id === option.value);
      if (e) option.textContent = `${e.name} (${e.status})`;
    }
  }

  draw() {
    if (!this.view) return;
    const e = this.encounter;
    if (!e) {
      clear(this.view, h("p", { class: "hint" }, isGm() ? "No encounter: build one from the characters." : "No encounter yet."));
      delete this.view.dataset.version;
      return;
    }
    const now = currentIds(e);
    const turnNames = e.combatants.filter(c => now.has(c.id)).map(c => c.name).join(", ");
    const header = h("p", { class: "encounter-status", id: "encounter-status" },
      h("strong", {}, e.name), ` — ${e.status}`, e.status !== "setup" ? ` — round ${e.round}` : "",
      turnNames && e.status === "active" ? h("span", { class: "whose-turn" }, ` — turn of `, h("strong", { id: "whose-turn" }, turnNames)) : null);
    const order = h("ol", { class: "turn-order", id: "turn-order", "aria-label": "Turn order" },
      ordered(e).map(({ c, slot }) => combatantView(c, { current: e.status === "active" && now.has(c.id), initiative: slot?.initiative ?? c.initiative })));
    const controls = h("div", { class: "actions encounter-controls" });
    if (isGm() && e.status === "setup") {
      controls.append(
        h("button", { type: "button", onclick: () => this.start(false) }, "Start"),
        h("button", { type: "button", class: "secondary", onclick: () => this.start(true) }, "Start with table dice"));
    }
    const mine = e.combatants.filter(c => now.has(c.id) && (isGm() || c.player_id === state.me.player_id));
    if (e.status === "active" && (isGm() || mine.length)) {
      controls.append(h("button", { type: "button", id: "next-turn", onclick: () => this.post("next-turn") }, "Next turn"));
    }
    if (isGm() && e.status === "active") {
      controls.append(h("button", { type: "button", class: "secondary", id: "undo", onclick: () => this.undo() }, "Undo last action"));
      controls.append(h("button", { type: "button", class: "danger", onclick: () => this.end() }, "End encounter"));
    }
    this.status = this.status || h("p", { class: "status", role: "status", id: "encounter-message" });
    const actors = e.status === "active" ? (isGm() ? e.combatants : mine) : [];
    // the form is rebuilt only when who may act changes, so an event does not wipe what is being typed
    const key = JSON.stringify([e.id, e.status, actors.map(c => [c.id, c.name, now.has(c.id)]),
                                e.combatants.map(c => [c.id, c.name, c.side, c.down])]);
    if (key !== this.panelKey) {
      this.panelKey = key;
      clear(this.panel);
      if (actors.length) this.actionPanel(this.panel, e, actors, now);
    }
    const panel = this.panel;
    const reactions = !isGm() ? this.reactionControls(e) : null;
    const history = h("ol", { class: "history", id: "encounter-history", "aria-label": "Actions, newest first" },
      this.actions.map(a => h("li", { class: a.reverted_by ? "reverted" : "", dataset: { actionId: a.id, type: a.type } },
        h("span", { class: "line" }, actionLine(a, nameOf)),
        a.reverted_by ? h("span", { class: "badge" }, " undone") : null,
        a.hidden ? h("span", { class: "badge hidden-roll" }, "hidden") : null)));
    clear(this.view, header, order, this.grid(e), controls, this.diceArea, panel, reactions, this.status,
      h("h3", {}, "History"), history);
    Object.assign(this.view.dataset, { version: String(e.version), status: e.status, round: String(e.round) });
  }

  grid(e) {
    const placed = e.combatants.filter(c => c.position);
    if (!placed.length) return null;
    const xs = placed.map(c => c.position.x), ys = placed.map(c => c.position.y);
    const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    if (x1 - x0 > 40 || y1 - y0 > 40) return null;
    const grid = h("div", { class: "grid", role: "img", style: `grid-template-columns: repeat(${x1 - x0 + 1}, 2.2rem)`,
      "aria-label": `Positions: ${placed.map(c => `${c.name} at ${c.position.x}, ${c.position.y}`).join("; ")}` });
    for (let y = y0; y <= y1; y++) {
      for (let x = x0; x <= x1; x++) {
        const here = placed.filter(c => c.position.x === x && c.position.y === y);
        grid.append(h("span", { class: `cell ${here.length ? "taken" : ""}`, title: here.map(c => c.name).join(", ") },
          here.map(c => c.name.slice(0, 2)).join("")));
      }
    }
    return grid;
  }

  reactionControls(e) {
    const own = e.combatants.filter(c => c.player_id && c.player_id === state.me.player_id);
    if (!own.length || e.status === "ended") return null;
    const choices = actionTypes().attack ? state.ruleset.combat.reactions || [] : [];
    if (!choices.length) return null;
    const box = h("div", { class: "reactions" });
    for (const c of own) {
      const control = select(choices.map(r => [r, humanize(r)]), { value: c.reaction ?? "" });
      control.addEventListener("change", async () => {
        try { await api.patch(`/v1/encounters/${e.id}/combatants/${c.id}`, { reaction: control.value }); await this.refresh(); }
        catch (err) { setError(control, describe(err)); }
      });
      box.append(field(`Standing reaction of ${c.name}`, control));
    }
    return box;
  }

  actionPanel(panel, encounter, actors, now) {
    const actor = select(actors.map(c => [c.id, c.name]));
    const defaultActor = actors.find(c => now.has(c.id));
    if (defaultActor) actor.value = defaultActor.id;
    const type = h("select", { name: "action-type" });
    const formBox = h("div", { class: "action-form" });
    const act = h("button", { type: "submit" }, "Act");
    const table = h("button", { type: "button", class: "secondary" }, "Act with table dice");
    const form = h("form", { novalidate: true, "aria-labelledby": "action-title" },
      h("h3", { id: "action-title" }, "Turn action"),
      field("Actor", actor), field("Action", type), formBox,
      h("div", { class: "actions" }, act, table));
    panel.append(form);
    let current = null;
    const types = actionTypes();
    const names = [...Object.keys(types).filter(t => !types[t].gm_only),  // the ruleset's actions, then the GM's
      ...(isGm() ? Object.keys(types).filter(t => types[t].gm_only) : [])];
    clear(type, names.map(t => h("option", { value: t }, humanize(t))));
    if (this.lastType && names.includes(this.lastType)) type.value = this.lastType;
    const build = () => {
      if (!types[type.value]) return clear(formBox, h("p", { class: "hint" }, "No action in this ruleset's encounters."));
      this.lastType = type.value;
      current = this.actionForm(types[type.value].schema, encounter, actor.value);
      clear(formBox, current.el);
    };
    type.addEventListener("change", build);
    actor.addEventListener("change", build);  // its weapons
    build();

    const send = async (withTable) => {
      if (!current) return;
      let values;
      try { values = current.value(); } catch (err) { if (err instanceof FormError) return current.showErrors(err.errors); throw err; }
      const body = { ...values, type: type.value };
      if (!gmOnly(type.value)) body.actor_id = actor.value;
      const post = extra => api.post(`/v1/encounters/${encounter.id}/actions`, { ...body, ...extra });
      try {
        const result = withTable
          ? await enterTableDice(this.diceArea, dice => post({ dice }), { nameOf, onError: err => this.fail(err, current) })
          : await post({});
        if (!result) return;
        this.say(actionLine(result, nameOf), result.rolls);
        await this.refresh();
      } catch (err) {
        this.fail(err, current);
      }
    };
    form.addEventListener("submit", event => { event.preventDefault(); send(false); });
    table.addEventListener("click", () => send(true));
  }

  /** The form of one action: its JSON Schema from the catalogue (its own `$refs` root). */
  actionForm(schema, encounter, actorId) {
    const combatants = encounter.combatants;
    const weapon = ctx => {  // the weapons on the actor's sheet, by name
      const sheet = state.characters.get(combatants.find(c => c.id === actorId)?.character_id)?.sheet || {};
      const names = [...(sheet.weapons || []), ...(sheet.inventory?.items || []).filter(i => /weapon/.test(i.kind || ""))]
        .map(w => w.name).filter(Boolean);
      const control = select(names, { empty: names.length ? "— none —" : "— none on the sheet —" });
      return { el: field(ctx.label, control, { hint: ctx.schema.description }), control, get: () => control.value || undefined };
    };
    const pick = ctx => {
      const control = select(combatants.map(c => [c.id, c.name]), { empty: ctx.required ? undefined : "— none —", value: ctx.value });
      if (ctx.required && !ctx.value) {  // a default target: someone of another side, standing
        const actor = combatants.find(c => currentIds(encounter).has(c.id));
        const other = combatants.find(c => c.side !== actor?.side && !c.down)
          || combatants.find(c => c.id !== actor?.id && !c.down);
        if (other) control.value = other.id;
      }
      return { el: field(ctx.label.replace(/ Id$/, ""), control), control, get: () => control.value || undefined };
    };
    const group = ctx => {
      const boxes = combatants.map(c => [c.id, h("input", { type: "checkbox", id: uid("g") }), c.name]);
      const fs = h("fieldset", { class: "group" }, h("legend", {}, ctx.label),
        boxes.map(([, input, name]) => h("span", { class: "check" }, input, h("label", { for: input.id }, name))));
      fs.id = uid("fs");
      fs.append(h("p", { class: "error", id: `${fs.id}-error`, role: "alert", hidden: true }));
      return { el: fs, control: fs, get: () => { const ids = boxes.filter(([, i]) => i.checked).map(([id]) => id); return ids.length ? ids : undefined; } };
    };
    const widgets = Object.fromEntries([...ID_FIELDS].map(n => [n, pick]));
    widgets.group = group;
    widgets.weapon = weapon;
    const omit = ["type", "actor_id", "seed", "dice", ...(isGm() ? [] : ["hidden"])];
    return new SchemaForm({ schema, root: schema, mode: "create", widgets, omit, value: {} });
  }

  say(text, rolls) {
    clear(this.status, h("span", { class: "line" }, text), rolls?.length ? diceList(rolls, nameOf) : null);
  }

  fail(err, form) {
    const unplaced = form && err.problem?.errors ? form.showErrors(err.problem.errors.filter(e => !(e.loc || []).includes("dice"))) : [];
    clear(this.status, h("span", { class: "error" }, describe(err)), unplaced.length ? ` ${unplaced.join("; ")}` : "");
  }

  async post(path, body = {}) {
    try {
      const result = await api.post(`/v1/encounters/${this.encounter.id}/${path}`, body);
      if (result?.type) this.say(actionLine(result, nameOf), result.rolls);
      await this.refresh();
      return result;
    } catch (err) {
      this.fail(err);
      return null;
    }
  }

  async start(withTable) {
    const id = this.encounter.id;
    const send = extra => api.post(`/v1/encounters/${id}/start`, extra);
    try {
      const result = withTable ? await enterTableDice(this.diceArea, dice => send({ dice }), { nameOf, onError: err => this.fail(err) })
        : await send({});
      if (!result) return;
      if (result.action) this.say(actionLine(result.action, nameOf), result.action.rolls);
      await this.refresh();
    } catch (err) {
      this.fail(err);
    }
  }

  async undo() {
    const latest = this.actions.find(a => a.type !== "revert" && !a.reverted_by);
    if (!latest) return this.fail(new Error("nothing to undo"));
    await this.post(`actions/${latest.id}/revert`);
  }

  async end() {
    await this.post("end");
  }

  openBuilder() {
    const characters = [...state.characters.values()].sort((a, b) => a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name, "fr"));
    const name = h("input", { type: "text", name: "encounter-name", value: "Rencontre" });
    const visibility = select([["exact", "exact values"], ["status", "status words (unhurt, wounded…)"], ["hidden", "hidden"]], { value: "status" });
    const reveal = h("input", { type: "checkbox", checked: true });
    const rows = characters.map(c => {
      const include = h("input", { type: "checkbox", id: uid("inc"), checked: c.kind === "pc" });
      const side = h("input", { type: "text", value: c.kind === "pc" ? "heroes" : "foes", "aria-label": `Side of ${c.name}`, size: 8 });
      const count = h("input", { type: "number", min: 1, max: 50, value: "1", "aria-label": `Copies of ${c.name}`, disabled: c.kind !== "npc", size: 3 });
      const hidden = h("input", { type: "checkbox", "aria-label": `${c.name} hidden` });
      return { c, include, side, count, hidden,
        el: h("tr", {}, h("td", {}, include, h("label", { for: include.id }, ` ${c.name}`)), h("td", {}, c.kind.toUpperCase()),
          h("td", {}, side), h("td", {}, count), h("td", {}, hidden)) };
    });
    const status = h("p", { class: "status", role: "status" });
    const dialog = h("dialog", { "aria-labelledby": "builder-title" });
    const form = h("form", { novalidate: true },
      h("h2", { id: "builder-title" }, "New encounter"),
      field("Encounter name", name), field("Resources shown to players", visibility),
      field("Reveal hidden combatants on their first turn", reveal),
      h("table", { class: "builder" },
        h("thead", {}, h("tr", {}, ["Combatant", "Kind", "Side", "NPC copies", "Hidden"].map(t => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows.map(r => r.el))),
      status,
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Create encounter"),
        h("button", { type: "button", class: "secondary", onclick: () => dialog.close() }, "Cancel")));
    dialog.append(form);
    dialog.addEventListener("close", () => dialog.remove());
    form.addEventListener("submit", async event => {
      event.preventDefault();
      const combatants = rows.filter(r => r.include.checked).map(r => {
        const one = { character_id: r.c.id, side: r.side.value.trim() || null, hidden: r.hidden.checked };
        const copies = Number(r.count.value);
        if (r.c.kind === "npc" && copies > 1) one.count = copies;
        return one;
      });
      try {
        const created = await api.post(`/v1/campaigns/${state.campaign.id}/encounters`, {
          name: name.value, options: { hp_visibility: visibility.value, reveal_on_turn: reveal.checked }, combatants });
        dialog.close();
        await this.loadList(created.id);
      } catch (err) {
        status.textContent = describe(err);
      }
    });
    document.body.append(dialog);
    dialog.showModal();
    name.focus();
  }
}
