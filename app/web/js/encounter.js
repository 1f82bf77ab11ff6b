// The encounter tracker: build a fight from the campaign's characters, start it, the turn
// order and whose turn it is, each combatant's resources and conditions, the current
// combatant's actions (their bodies read from the ruleset's catalogue entry, `combat`),
// next turn, undo, end; every action as a readable line.

import { api, describe } from "./api.js";
import { h, clear, patch, whole, listen, field, select, bar, humanize, uid, retryDelay } from "./dom.js";
import { state, emit, isGm, nameOf, rememberCombatants, mayEnterDice } from "./store.js";
import { SchemaForm, FormError, unwrap } from "./schema-form.js";
import { enterTableDice } from "./dice.js";
import { actionNode, actionHead, diceList, publishedMark } from "./format.js";
import { ownReactions, reactionField } from "./reaction.js";
import { t, term, num, percent, statusWordText, sep } from "./i18n.js";


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
      c.side ? h("span", { class: "side" }, ` ${c.side}`) : null,
      initiative !== undefined && initiative !== null ? h("span", { class: "init" }, t("encounter.init", { n: num(initiative) })) : null,
      c.hidden ? h("span", { class: "badge hidden-roll" }, t("encounter.hidden")) : null,
      c.down ? h("span", { class: "badge down" }, t("encounter.down")) : null,
      current ? h("span", { class: "sr-only" }, t("encounter.current")) : null));
  if (hpVisibility === "hidden" && table) { /* nothing about resources */ }
  else if (resources.length) {
    li.append(h("div", { class: "bars" }, resources.map(([name, r]) => (r.status || asStatus)
      ? h("p", { class: `status-word ${statusWord(r)}`, dataset: { resource: name } },
        `${term(name)}${sep()}${statusWordText(statusWord(r))}`)
      : bar(name, r.value, r.max))));
  }
  const extras = [];
  if (c.posture) extras.push(h("span", { class: "chip" }, t("encounter.posture", { name: term(c.posture) })));
  if (c.position && !table) extras.push(h("span", { class: "chip" }, t("encounter.at", { x: c.position.x, y: c.position.y })));
  if (c.reaction && !table) extras.push(h("span", { class: "chip" }, t("encounter.reaction", { name: term(c.reaction) })));
  for (const cond of c.conditions || []) {
    extras.push(h("span", { class: "chip condition", dataset: { condition: cond.name } },
      `${term(cond.name)}${cond.rounds_left ? ` (${num(cond.rounds_left)})` : ""}`));
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

/** The distance of two cells by the ruleset's metric (`combat.grid.metric`). */
export function distance(a, b, metric) {
  const dx = Math.abs(a.x - b.x), dy = Math.abs(a.y - b.y);
  if (metric === "chebyshev") return Math.max(dx, dy);
  if (metric === "euclidean") return Math.round(Math.hypot(dx, dy) * 10) / 10;
  return dx + dy;  // manhattan (GC-D1)
}

/** Each side of the fight -> its colour's index: the players' sides first, then in the order met
 * (the same on every screen, whatever each may see). */
export function sideColours(encounter) {
  const sides = [];
  const mine = encounter.combatants.filter(c => c.player_id).concat(encounter.combatants.filter(c => !c.player_id));
  for (const c of mine) if (!sides.includes(c.side ?? "")) sides.push(c.side ?? "");
  return new Map(sides.map((side, i) => [side, i % 4]));
}

/** The grid's legend: a swatch per side shown on it. */
function sideLegend(placed, colours) {
  const sides = [...new Set(placed.map(c => c.side ?? ""))];
  if (!sides.length) return null;
  return h("ul", { class: "grid-legend", "aria-label": t("grid.sides") },
    sides.map(side => h("li", {}, h("span", { class: `swatch side-${colours.get(side) ?? 0}`, "aria-hidden": "true" }),
      side || t("grid.no.side"))));
}

/** The grid as the table screen shows it: read-only, the pawns the screen may show (`seen`), each
 * named in full and coloured by its side; null when no one stands on it. */
export function pawnGrid(e, { seen = () => true } = {}) {
  const placed = e.combatants.filter(c => c.position && seen(c));
  if (!placed.length) return null;
  const now = currentIds(e);
  const colours = sideColours(e);
  const xs = placed.map(c => c.position.x), ys = placed.map(c => c.position.y);
  // the pawns' box and a cell around it: a TV nobody scrolls shows where they stand, large
  const x0 = Math.max(0, Math.min(...xs) - 1), y0 = Math.max(0, Math.min(...ys) - 1);
  const width = Math.max(8, Math.max(...xs) + 2 - x0), height = Math.max(6, Math.max(...ys) + 2 - y0);
  const cells = h("div", { class: "grid tv-grid", id: "table-grid", role: "group", "aria-label": t("grid.label"),
    style: `grid-template-columns: repeat(${width}, minmax(0, 1fr))` });
  for (let y = y0; y < y0 + height; y++) {
    for (let x = x0; x < x0 + width; x++) {
      const here = placed.filter(c => c.position.x === x && c.position.y === y);
      const side = here.length ? colours.get(here[0].side ?? "") ?? 0 : null;
      cells.append(h("div", { class: `cell ${here.length ? `taken side-${side}` : ""} ${here.some(c => now.has(c.id)) ? "current" : ""}`.trim(),
        dataset: { x: String(x), y: String(y), ids: here.map(c => c.id).join(",") } },
        here.length ? h("span", { class: "pawn" }, here.map(c => c.name).join(", ")) : null));
    }
  }
  return h("div", { class: "grid-box tv-grid-box" }, cells, sideLegend(placed, colours));
}

export const currentIds = encounter => new Set(encounter.current?.combatant_ids || (encounter.current?.combatant_id ? [encounter.current.combatant_id] : []));

const label = e => `${e.name} (${t(`encounter.status.${e.status}`)})`;

export class Tracker {
  constructor() {
    this.list = [];
    this.listReads = 0;    // list reads begun, and the latest one whose answer is shown (`readList`)
    this.listShown = 0;
    this.encounter = null;
    this.actions = [];
    this.failures = 0;     // failed reads in a row (retried, and the live indicator says so)
    this.myTurn = false;
    this.showRules = false;
  }

  mount(section) {
    this.section = section;
    this.picker = h("select", { name: "encounter" });
    this.picker.addEventListener("change", () => this.select(this.picker.value));
    this.view = h("div", { class: "encounter-view", id: "encounter-view" });
    this.bar = h("div", { class: "fight-bar", id: "fight-bar" });  // sticky while a fight is active
    clear(section,
      h("div", { class: "section-head" }, h("h2", { id: "encounter-title" }, t("encounter.title")),
        field(t("encounter.pick"), this.picker),
        isGm() ? h("button", { type: "button", class: "secondary", onclick: () => this.openBuilder() }, t("encounter.new")) : null),
      this.bar, this.view);
    this.diceArea = h("div", { class: "dice-area", id: "fight-dice" });  // kept across redraws: a dice entry in progress survives events
    this.panel = h("div", { class: "action-panel" });
    this.panelKey = null;
    this.status = h("p", { class: "status", role: "status", id: "encounter-message" });
  }

  /** The list of fights, or null when a read begun after this one has answered already: an older
   * answer (begun before an event, answered after the read that event started) never replaces it. */
  async readList() {
    const read = ++this.listReads;
    const page = await api.get(`/v1/campaigns/${state.campaign.id}/encounters`, { limit: 50 });
    if (read < this.listShown) return null;
    this.listShown = read;
    this.list = page.items;
    return this.list;
  }

  async loadList(prefer) {
    if (!await this.readList()) return;
    patch(this.picker, this.list.length ? this.list.map(e => h("option", { value: e.id }, label(e)))
      : h("option", { value: "" }, t("encounter.none")));
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

  /** Reads the fight again; calls while one read runs are folded into one more read after it.
   * A failed read is retried (backing off) until one succeeds: the page never stays stale. */
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
    })().then(() => {
      if (this.failures) { this.failures = 0; emit("sync", { stale: false }); }
    }, err => {
      this.failures += 1;
      emit("sync", { stale: true });
      clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(() => this.refresh().catch(() => {}), retryDelay(500, this.failures - 1));
      throw err;
    }).finally(() => { this.reading = null; });
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
    if (option && option.textContent !== label(encounter)) option.textContent = label(encounter);
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
      this.refresh().catch(err => console.warn("encounter refresh failed (retried)", err.message));
    }
    if (name === "encounter.updated") this.relabel().catch(() => {});
  }

  /** A character changed (its sheet: what the combatants' resources are read from): the fight is read again.
   * One not in the fight (made, renamed, deleted) changes the GM's add form's list only: the fight is
   * redrawn as it is when that list differs from the one shown (what the GM typed carried over, `adder`). */
  onCharacter(id) {
    if (this.encounter?.combatants.some(c => c.character_id === id)) {
      this.refresh().catch(err => console.warn("encounter refresh failed (retried)", err.message));
    } else if (this.encounter && this.adder(this.encounter) !== this.view.querySelector("#encounter-adder")) {
      this.draw();
    }
  }

  async relabel() {
    if (!await this.readList()) return;
    for (const option of this.picker.options) {
      const e = this.list.find(x => x.id === option.value);
      if (e && option.textContent !== label(e)) option.textContent = label(e);  // unchanged: no mutation
    }
  }

  latestUndoable() {
    return this.actions.find(a => a.type !== "revert" && !a.reverted_by);
  }

  /** The field of the view being typed in (a quick ±PV, an initiative), by its label: a redraw
   *  (an event read the fight again) must not lose what the GM is typing. */
  typing() {
    const el = document.activeElement;
    const label = el?.getAttribute?.("aria-label");
    if (!el || !label || !this.view.contains(el) || !el.matches("input, textarea")) return null;
    return { label, value: el.value };
  }

  keepTyping(typing) {
    if (!typing) return;
    const again = [...this.view.querySelectorAll("input, textarea")].find(el => el.getAttribute("aria-label") === typing.label);
    if (!again) return;
    again.value = typing.value;
    again.focus();
  }

  draw() {
    if (!this.view) return;
    const e = this.encounter;
    document.body.classList.toggle("fight", e?.status === "active");
    if (!e) {
      patch(this.bar);
      patch(this.view, h("p", { class: "hint" }, isGm() ? t("encounter.empty.gm") : t("encounter.empty")));
      delete this.view.dataset.version;
      this.cue(false, []);
      return;
    }
    const now = currentIds(e);
    const active = e.status === "active";
    const turnNames = e.combatants.filter(c => now.has(c.id)).map(c => c.name).join(", ");
    const mine = e.combatants.filter(c => now.has(c.id) && (isGm() || c.player_id === state.me.player_id));
    const myTurn = active && !isGm() && mine.length > 0;

    // the sticky bar: where the fight is, whose turn, and the turn's buttons (short, for a phone too)
    const header = h("p", { class: "encounter-status", id: "encounter-status", tabindex: -1 },
      h("strong", {}, e.name), ` — ${t(`encounter.status.${e.status}`)}`, e.status !== "setup" ? ` — ${t("encounter.round", { n: e.round })}` : "",
      turnNames && active ? h("span", { class: "whose-turn" }, t("encounter.turn.of"), h("strong", { id: "whose-turn" }, turnNames)) : null);
    const controls = h("div", { class: "actions encounter-controls" });
    if (isGm() && e.status === "setup") {
      controls.append(h("button", { type: "button", onclick: () => this.start(false) }, t("encounter.start")),
        h("button", { type: "button", class: "secondary", onclick: () => this.start(true) }, t("encounter.start.table")));
    }
    if (active && (isGm() || mine.length)) {
      controls.append(h("button", { type: "button", id: "next-turn", onclick: () => this.nextTurn() }, t("encounter.next")));
    }
    if (isGm() && active) {
      const latest = this.latestUndoable();
      controls.append(h("button", { type: "button", class: "secondary", id: "undo", disabled: !latest, onclick: () => this.undo() },
        latest ? t("encounter.undo", { what: actionHead(latest, nameOf) }) : t("encounter.undo", { what: t("encounter.undo.nothing") })));
      controls.append(h("button", { type: "button", class: "danger", id: "end-fight", onclick: () => this.end() }, t("encounter.end")));
    }
    const rulesToggle = h("button", { type: "button", class: "small secondary rules-toggle", id: "rules-toggle",
      "aria-pressed": String(this.showRules), "aria-label": t("encounter.rules.label"), title: t("encounter.rules.label"),
      onclick: () => { this.showRules = !this.showRules; this.draw(); } }, t("encounter.rules"));
    const banner = myTurn ? h("p", { class: "your-turn", id: "your-turn", role: "alert" },
      t("encounter.your.turn.of", { name: mine.map(c => c.name).join(", ") })) : null;
    // patched, not rebuilt: a read that changes nothing touches no node, and focus and hover stay (`patch`)
    patch(this.bar, banner, header, h("div", { class: "bar-actions" }, controls, rulesToggle));
    if (this.bar.hidden) this.bar.hidden = false;

    const order = h("ol", { class: "turn-order", id: "turn-order", "aria-label": t("encounter.order") },
      ordered(e).map(({ c, slot }) => {
        const li = combatantView(c, { current: active && now.has(c.id), initiative: c.initiative ?? c.initiative_override ?? slot?.initiative });
        const quick = e.status !== "ended" ? this.quickActions(e, c, mine, now) : null;
        if (quick) li.append(quick);
        return li;
      }));
    const actors = active ? (isGm() ? e.combatants : mine) : [];
    // the form is rebuilt only when who may act changes, so an event does not wipe what is being typed
    const key = JSON.stringify([e.id, e.status, actors.map(c => [c.id, c.name, now.has(c.id)]),
                                e.combatants.map(c => [c.id, c.name, c.side, c.down])]);
    if (key !== this.panelKey) {
      this.panelKey = key;
      clear(this.panel);
      if (actors.length) this.actionPanel(this.panel, e, actors, now);
    }
    const reactions = ownReactions(this, e);
    const history = h("ol", { class: "history", id: "encounter-history", "aria-label": t("encounter.history.label") },
      this.actions.map(a => h("li", { class: a.reverted_by ? "reverted" : "", dataset: { actionId: a.id, type: a.type } },
        actionNode(a, nameOf),
        a.reverted_by ? h("span", { class: "badge" }, t("encounter.undone")) : null,
        a.hidden && a.published_at ? publishedMark(a)
          : a.hidden ? h("span", { class: "badge hidden-roll" }, t("encounter.hidden")) : null)));
    this.view.classList.toggle("show-rules", this.showRules);
    const typing = this.typing();
    const adder = this.adder(e);  // in a running fight under the action form: what it redraws never moves the form
    patch(this.view, order, active ? null : adder, this.grid(e), this.panel, this.diceArea, reactions, this.status,
      active ? adder : null, h("h3", {}, t("encounter.history")), history);
    this.keepTyping(typing);
    this.targetReaction?.();  // the attack form's target may have changed its standing reaction
    if (this.adderFocus?.isConnected) this.adderFocus.focus();
    this.adderFocus = null;
    if (this.drawnVersion !== `${e.id}:${e.version}`) {  // the fight moved on: the odds and the reach with it
      this.drawnVersion = `${e.id}:${e.version}`;
      if (actors.length) {
        this.replan?.();
        const chosen = this.panel.querySelector("select[name=actor]")?.value;
        if (chosen) this.readReach(e, chosen);
      }
    }
    for (const [key, value] of Object.entries({ version: String(e.version), status: e.status, round: String(e.round) })) {
      if (this.view.dataset[key] !== value) this.view.dataset[key] = value;  // (an unchanged one makes no mutation)
    }
    this.cue(myTurn, mine);
  }

  /** The GM adds a campaign character to the fight: before the start, or while it runs (the API places it in the turn order by the ruleset's initiative rule, with the GM's value or dice). */
  adder(e) {
    if (!isGm() || e.status === "ended") return null;
    const present = new Set(e.combatants.map(c => c.character_id));
    const characters = [...state.characters.values()].filter(c => !present.has(c.id))
      .sort((a, b) => a.name.localeCompare(b.name, "fr"));
    if (!characters.length) return null;
    // kept across redraws (an event read the fight again): the character chosen and the side typed stay
    const fight = `${e.id}:${e.status}`;
    const key = `${fight} ${JSON.stringify(characters.map(c => [c.id, c.name]))}`;
    if (this.adderForm && this.adderKey === key) return this.adderForm;
    // the list changed (a character came or went): what the GM typed in this fight's form stays
    const before = this.adderKey?.startsWith(`${fight} `) ? this.adderForm : null;
    this.adderKey = key;
    this.adderForm = whole(this.adderFormOf(e, characters));  // this very form in the page (the one kept above)
    for (const was of before?.elements ?? []) {
      const now = was.name ? this.adderForm.elements.namedItem(was.name) : null;
      if (!now) continue;
      if (was.type === "checkbox") now.checked = was.checked;
      else if (now.tagName !== "SELECT" || [...now.options].some(o => o.value === was.value)) now.value = was.value;
      if (was === document.activeElement) this.adderFocus = now;  // the field being typed in stays focused (`draw`)
    }
    return this.adderForm;
  }

  adderFormOf(e, characters) {
    const running = e.status === "active";
    const who = select(characters.map(c => [c.id, c.name]));
    who.name = "add-who";
    const side = h("input", { type: "text", size: 8, name: "add-side", value: t("builder.foes") });
    const hidden = h("input", { type: "checkbox", name: "add-hidden" });
    const initiative = running ? h("input", { type: "number", size: 4, name: "add-initiative" }) : null;
    const table = running ? h("button", { type: "button", class: "secondary", name: "add-table" }, t("encounter.add.table")) : null;
    const form = h("form", { class: "inline adder", id: "encounter-adder", novalidate: true, "aria-label": t("encounter.add") },
      field(t("encounter.add.who"), who), field(t("builder.side"), side),
      h("label", {}, hidden, " ", t("encounter.add.hidden")),
      running ? field(t("encounter.add.initiative"), initiative) : null,
      h("button", { type: "submit", class: "secondary", name: "add" }, t("encounter.add")), table);
    const body = () => {
      const out = { character_id: who.value, side: side.value.trim() || null, hidden: hidden.checked };
      if (initiative && initiative.value !== "") out.initiative = Number(initiative.value);
      return out;
    };
    const send = async withTable => {
      const path = `/v1/encounters/${e.id}/combatants`;
      try {
        const result = withTable
          ? await enterTableDice(this.diceArea, dice => api.post(path, { ...body(), dice }), { nameOf, onError: err => this.fail(err) })
          : await api.post(path, body());
        if (!result) return;
        if (result.action) this.say(result.action);
        await this.refresh();
      } catch (err) {
        this.fail(err);
      }
    };
    form.addEventListener("submit", event => { event.preventDefault(); send(false); });
    table?.addEventListener("click", () => send(true));
    return form;
  }

  /** "À toi de jouer": a banner (drawn above), the title, and a vibration where allowed — once per turn. */
  cue(myTurn, mine) {
    const base = document.title.replace(/^▶ [^—]+ — /, "");
    const title = myTurn ? `▶ ${t("encounter.your.turn")} — ${base}` : base;
    if (document.title !== title) document.title = title;
    const turnKey = myTurn ? `${this.encounter.id}:${this.encounter.round}:${mine.map(c => c.id).join(",")}` : null;
    if (turnKey && turnKey !== this.turnKey) {
      try { navigator.vibrate?.([120, 60, 120]); } catch { /* not allowed here */ }
    }
    this.turnKey = turnKey;
    this.myTurn = myTurn;
  }

  /** A row's quick actions: attack it (the current combatant of the caller), and for the GM ±PV and a condition. */
  quickActions(e, c, mine, now) {
    const types = actionTypes();
    const attacker = mine.find(m => m.id !== c.id) || (isGm() ? e.combatants.find(m => now.has(m.id) && m.id !== c.id) : null);
    const box = h("div", { class: "quick", role: "group", "aria-label": t("encounter.quick", { name: c.name }) });
    const active = e.status === "active";
    if (active && types.attack && attacker && !now.has(c.id) && !c.down) {
      box.append(h("button", { type: "button", class: "small", "aria-label": t("encounter.quick.attack.label", { name: c.name }),
        onclick: () => this.quickAttack(attacker, c) }, t("encounter.quick.attack")));
    }
    if (isGm()) {
      box.append(h("button", { type: "button", class: "small secondary", "aria-pressed": String(Boolean(c.hidden)),
        "aria-label": t(c.hidden ? "encounter.reveal.label" : "encounter.hide.label", { name: c.name }),
        onclick: () => this.patchCombatant(c, { hidden: !c.hidden }) }, t(c.hidden ? "encounter.reveal" : "encounter.hide")));
      if (e.status === "setup") {  // an initiative override, before the start
        const init = h("input", { type: "number", step: 1, class: "amount init-override", inputmode: "numeric",
          "aria-label": t("encounter.quick.init", { name: c.name }), placeholder: t("encounter.quick.init.short") });
        listen(init, "keydown", event => {
          const { value } = event.currentTarget;
          if (event.key !== "Enter" || value.trim() === "" || !Number.isInteger(Number(value))) return;
          event.preventDefault();
          this.patchCombatant(c, { initiative: Number(value) });
        });
        box.append(init);
        return box;
      }
      if (!active) return box.childElementCount ? box : null;
      const pool = Object.keys(c.resources || {})[0];
      if (pool && (types.heal || types.damage)) {
        const amount = h("input", { type: "number", step: 1, class: "amount", inputmode: "numeric",
          "aria-label": t("encounter.quick.amount", { name: c.name }).replace(term("hp"), term(pool)), placeholder: `± ${term(pool)}` });
        listen(amount, "keydown", event => {
          if (event.key !== "Enter") return;
          event.preventDefault();
          const n = Number(event.currentTarget.value);
          if (!Number.isInteger(n) || n === 0) return;
          const type = n > 0 ? "heal" : "damage";
          if (!types[type]) return;
          this.act({ type, target_id: c.id, amount: Math.abs(n), resource: pool });
        });
        box.append(amount);
      }
      if (types.condition) {
        const name = h("input", { type: "text", class: "condition-name", size: 8, placeholder: t("encounter.quick.condition.placeholder"),
          "aria-label": t("encounter.quick.condition", { name: c.name }) });
        listen(name, "keydown", event => {
          const typed = event.currentTarget.value.trim();
          if (event.key !== "Enter" || !typed) return;
          event.preventDefault();
          this.act({ type: "condition", target_id: c.id, add: { name: typed } });
        });
        box.append(name);
      }
    }
    return box.childElementCount ? box : null;
  }

  /** "Attaquer" on a row: with a weapon on the actor's sheet, the attack goes at once; else the
   * action form is set to this attack on this target, its first empty field focused. */
  quickAttack(attacker, target) {
    const sheet = state.characters.get(attacker.character_id)?.sheet || {};
    const weapon = (sheet.weapons || []).find(w => w.name)?.name;
    if (weapon) return this.act({ type: "attack", actor_id: attacker.id, target_id: target.id, weapon });
    this.choose?.("attack", attacker.id, target.id);
  }

  async patchCombatant(c, body) {
    try {
      await api.patch(`/v1/encounters/${this.encounter.id}/combatants/${c.id}`, body);
      await this.refresh();
    } catch (err) {
      this.fail(err);
    }
  }

  async act(body) {
    try {
      const result = await api.post(`/v1/encounters/${this.encounter.id}/actions`, body);
      this.say(result);
      await this.refresh();
      this.afterAction();
    } catch (err) {
      this.fail(err);
    }
  }

  /** After an action: "Tour suivant" takes the focus (one tap away on a phone) on a player's turn, and
   * for the GM when the focus was lost (the button pressed redrawn: never left on <body>); without it,
   * the fight's status line. A GM typing ±PV keeps its field. */
  afterAction() {
    const lost = !document.activeElement || document.activeElement === document.body || !document.activeElement.isConnected;
    if (!(isGm() ? lost : this.myTurn || lost)) return;
    (document.getElementById("next-turn") || document.getElementById("encounter-status"))?.focus();
  }

  /** The grid: every combatant the caller may see on its cell (the server never sends a hidden one
   * to a player); the GM places a combatant with a click, the one whose turn it is moves with a click
   * (the server counts the distance and the reach, and says why not). */
  grid(e) {
    const placed = e.combatants.filter(c => c.position);
    const canMove = Boolean(actionTypes().move) && e.status === "active";
    const now = currentIds(e);
    const movers = canMove ? e.combatants.filter(c => now.has(c.id) && c.position && (isGm() || c.player_id === state.me.player_id)) : [];
    const placers = isGm() && e.status !== "ended" ? e.combatants : [];
    if (!placed.length && !placers.length) return null;
    const xs = placed.map(c => c.position.x), ys = placed.map(c => c.position.y);
    const width = Math.min(Math.max(12, ...xs.map(x => x + 3)), 40), height = Math.min(Math.max(8, ...ys.map(y => y + 3)), 40);
    const choices = [...movers.map(c => [`move:${c.id}`, t("grid.move", { name: c.name })]),
      ...placers.map(c => [`place:${c.id}`, t("grid.place", { name: c.name })])];
    if (this.gridChoice && !choices.some(([v]) => v === this.gridChoice)) this.gridChoice = null;
    const unplaced = placers.find(c => !c.position);
    const preset = this.gridChoice || (movers[0] ? `move:${movers[0].id}` : unplaced ? `place:${unplaced.id}` : choices[0]?.[0]);
    const mode = choices.length ? select(choices, { value: preset }) : null;
    if (mode) {
      Object.assign(mode, { name: "grid-mode", id: "grid-mode" });  // a stable id: the redraw patches this very select
      listen(mode, "change", event => { this.gridChoice = event.currentTarget.value; this.draw(); });
    }
    const modeNow = () => this.view.querySelector("#grid-mode")?.value;  // the select in the page (`patch` keeps it)
    // distances as the ruleset counts them (the catalogue's `combat.grid.metric`), from the pawn chosen
    const metric = state.ruleset?.combat?.grid?.metric;
    const from = (() => {
      const id = (this.gridChoice || preset || "").split(":")[1];
      return e.combatants.find(c => c.id === id)?.position || null;
    })();
    const away = (x, y) => (from && metric ? distance(from, { x, y }, metric) : null);
    const near = this.inReach() || new Set();  // the targets the actor chosen in the action form may reach (`choices`)
    const colours = sideColours(e);
    const cells = h("div", { class: "grid", id: "grid", role: "group", "aria-label": t("grid.label"),
      style: `grid-template-columns: repeat(${width}, var(--cell))` });
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const here = placed.filter(c => c.position.x === x && c.position.y === y);
        const names = here.map(c => c.name).join(", ");
        const reached = here.some(c => near.has(c.id));
        const cell = h("button", { type: "button", class: `cell ${here.length ? `taken side-${colours.get(here[0].side ?? "") ?? 0}` : ""} ${here.some(c => now.has(c.id)) ? "current" : ""}
          ${here.some(c => c.hidden) ? "hidden-one" : ""} ${reached ? "in-reach" : ""}`.replace(/\s+/g, " ").trim(),
          dataset: { key: `${x},${y}`, x: String(x), y: String(y), ids: here.map(c => c.id).join(",") }, disabled: !mode,
          "aria-label": `${names ? t("grid.cell.taken", { x, y, names }) : t("grid.cell", { x, y })}${
            away(x, y) ? t("grid.away", { n: num(away(x, y)) }) : ""}${reached ? t("grid.in.reach") : ""}`, title: names || `${x}, ${y}` },
          // the pawns' names in full, as the label says them (WCAG 2.5.3), wrapped within the cell
          names ? h("span", { class: "pawn" }, names) : null);
        listen(cell, "click", () => this.onCell(modeNow(), x, y));
        // or drag a pawn onto a cell: its move when it may move now, else (the GM) its placement
        const pawn = here.map(c => (movers.some(m => m.id === c.id) ? `move:${c.id}` : placers.some(m => m.id === c.id) ? `place:${c.id}` : null))
          .find(Boolean);
        if (pawn) {
          cell.draggable = true;
          listen(cell, "dragstart", event => { event.dataTransfer.setData("text/plain", pawn); event.dataTransfer.effectAllowed = "move"; });
        }
        if (mode) {
          listen(cell, "dragover", event => event.preventDefault());
          listen(cell, "drop", event => {
            event.preventDefault();
            const choice = event.dataTransfer.getData("text/plain");
            if (/^(move|place):/.test(choice)) this.onCell(choice, x, y);
          });
        }
        cells.append(cell);
      }
    }
    return h("div", { class: "grid-box" },
      mode ? field(t("grid.mode"), mode) : null, cells, sideLegend(placed, colours));
  }

  async onCell(choice, x, y) {
    if (!choice) return;
    this.gridChoice = choice;
    const [what, id] = choice.split(":");
    const e = this.encounter;
    try {
      if (what === "place") {
        await api.patch(`/v1/encounters/${e.id}/combatants/${id}`, { position: { x, y } });
        await this.refresh();
      } else {
        const result = await api.post(`/v1/encounters/${e.id}/actions`, { type: "move", actor_id: id, to: { x, y } });
        this.say(result);
        await this.refresh();
      }
    } catch (err) {
      this.fail(err);
    }
  }

  actionPanel(panel, encounter, actors, now) {
    const actor = select(actors.map(c => [c.id, c.name]));
    actor.name = "actor";
    const defaultActor = actors.find(c => now.has(c.id));
    if (defaultActor) actor.value = defaultActor.id;
    const type = h("select", { name: "action-type" });
    const formBox = h("div", { class: "action-form" });
    const act = h("button", { type: "submit" }, t("encounter.act"));
    const table = mayEnterDice() ? h("button", { type: "button", class: "secondary" }, t("encounter.act.table")) : null;
    // the exact odds of the blow (`actions/plan`), before the Act button; nothing when the plan has none
    const odds = h("p", { class: "odds-before", id: "action-odds", "aria-live": "polite", "aria-label": t("encounter.odds"),
      hidden: true, dataset: { state: "none" } });
    const form = h("form", { novalidate: true, "aria-labelledby": "action-title" },
      h("h3", { id: "action-title" }, t("encounter.action")),
      field(t("encounter.actor"), actor), field(t("encounter.action.type"), type), formBox, odds,
      h("div", { class: "actions" }, act, table));
    panel.append(form);
    let current = null;
    const types = actionTypes();
    const names = [...Object.keys(types).filter(k => !types[k].gm_only),  // the ruleset's actions, then the GM's
      ...(isGm() ? Object.keys(types).filter(k => types[k].gm_only) : [])];
    clear(type, names.map(k => h("option", { value: k }, humanize(k))));
    if (this.lastType && names.includes(this.lastType)) type.value = this.lastType;
    const build = () => {
      if (!types[type.value]) { current = null; clear(formBox, h("p", { class: "hint" }, t("encounter.no.action"))); return planSoon(); }
      this.lastType = type.value;
      current = this.actionForm(types[type.value].schema, encounter, actor.value);
      clear(formBox, current.el);
      this.markReach();
      this.markGrid();
      planSoon();
    };
    /** The action's body as the form has it (a FormError while a required field is empty). */
    const bodyOf = () => {
      const body = { ...current.value(), type: type.value };
      if (!gmOnly(type.value)) body.actor_id = actor.value;
      return body;
    };
    const planPath = `/v1/encounters/${encounter.id}/actions/plan`;
    let asked = 0, timer = null;
    const showOdds = (found, body) => {
      const hit = found?.hit, down = found?.down?.p > 0 ? found.down : null;  // an impossible "down" is not offered
      clear(odds, hit ? h("span", { class: "odds-hit", dataset: { probability: hit.probability } }, t("encounter.odds.hit", { p: percent(hit.p) })) : null,
        hit && down ? " · " : null,
        down ? h("span", { class: "odds-down", dataset: { probability: down.probability } }, t("encounter.odds.down", { p: percent(down.p) })) : null);
      odds.hidden = !(hit || down);
      Object.assign(odds.dataset, { state: hit || down ? "ready" : "none", target: body?.target_id || "", type: body?.type || "" });
    };
    const planNow = async () => {
      const mine = ++asked;
      this.busy(+1);
      try { await planOnce(mine); } finally { this.busy(-1); }
    };
    const planOnce = async (mine) => {
      let body;
      try { if (!current) throw new FormError([]); body = bodyOf(); } catch (err) {
        if (err instanceof FormError) return showOdds(null);
        throw err;
      }
      try {
        const plan = await api.post(planPath, body);
        if (mine === asked) showOdds(plan.odds, body);
      } catch {
        if (mine === asked) showOdds(null, body);  // refused (not its turn…): the Act button says why
      }
    };
    const planSoon = () => {
      odds.dataset.state = "pending";
      if (timer === null) this.busy(+1);  // a plan is due: the page is not idle
      clearTimeout(timer);
      timer = setTimeout(() => { timer = null; this.busy(-1); planNow().catch(err => console.warn(err)); }, 150);
    };
    this.replan = planSoon;
    type.addEventListener("change", build);
    actor.addEventListener("change", () => { build(); this.readReach(encounter, actor.value); });  // its weapons, its reach
    formBox.addEventListener("change", planSoon);  // a target, an option
    formBox.addEventListener("input", planSoon);
    build();
    this.readReach(encounter, actor.value);
    this.choose = (typeName, actorId, targetId) => {
      if (!names.includes(typeName)) return;
      if ([...actor.options].some(o => o.value === actorId)) actor.value = actorId;
      type.value = typeName;
      build();
      const targetControl = formBox.querySelector("select[name=target_id], select");
      const pickTarget = [...formBox.querySelectorAll("select")].find(sel => [...sel.options].some(o => o.value === targetId));
      if (pickTarget) pickTarget.value = targetId;
      this.targetReaction?.();
      current?.sync?.();  // what the target changes (who may join the attack)
      const empty = [...formBox.querySelectorAll("input:not([type=checkbox]), textarea")].find(i => !i.value && i.checkVisibility());
      (empty || targetControl || act).focus();
      form.scrollIntoView({ block: "nearest" });
    };

    const send = async (withTable) => {
      if (!current) return;
      let body;
      try { body = bodyOf(); } catch (err) { if (err instanceof FormError) return current.showErrors(err.errors); throw err; }
      const post = extra => api.post(`/v1/encounters/${encounter.id}/actions`, { ...body, ...extra });
      try {
        // the table dice all at once, in the plan's order (a refused plan: the action's own refusal follows)
        if (withTable) this.diceArea.setAttribute("aria-busy", "true");  // the dice are about to be asked
        const plan = withTable ? await api.post(planPath, body).then(p => p.dice, () => null) : null;
        const result = withTable
          ? await enterTableDice(this.diceArea, dice => post({ dice }), { nameOf, plan, onError: err => this.fail(err, current) })
          : await post({});
        if (!result) return;
        this.say(result);
        await this.refresh();
        this.afterAction();
      } catch (err) {
        this.fail(err, current);
      }
    };
    form.addEventListener("submit", event => { event.preventDefault(); send(false); });
    table?.addEventListener("click", () => send(true));
  }

  /** Who the actor may reach now (`GET …/choices`: the targets the caller sees in reach, per action type),
   * read again when the fight moves on; the target lists and the grid mark them. */
  async readReach(encounter, actorId) {
    const version = encounter.version;
    const key = `${encounter.id}:${actorId}:${this.encounter?.version ?? version}`;
    if (!actorId || this.reachKey === key) return;
    this.reachKey = key;
    let found = null;
    this.busy(+1);
    try {
      found = await api.get(`/v1/encounters/${encounter.id}/choices`, { combatant_id: actorId });
    } catch { found = null; }  // not asked for this combatant (a player's other one): no marks
    finally { this.busy(-1); }
    if (this.reachKey !== key) return;
    this.reach = found ? { actor: actorId, byType: Object.fromEntries(found.actions.map(a => [a.type, a])) } : null;
    this.markReach();
    this.markGrid();  // in place: a redraw here would replace a cell being dragged
    if (this.view) this.view.dataset.reach = key;
  }

  /** Background reads of the form (its plan, its reach) in flight: `html[data-busy]` while any runs. */
  busy(delta) {
    this.pending = (this.pending || 0) + delta;
    if (this.pending > 0) document.documentElement.dataset.busy = "form";
    else delete document.documentElement.dataset.busy;
  }

  /** The combatants in reach for the action chosen (else for an attack). */
  inReach() {
    const actor = this.panel.querySelector("select[name=actor]")?.value;
    if (!this.reach || this.reach.actor !== actor) return null;  // not known (yet) for this actor
    // the action chosen when it names a target, else an attack; nothing said when the API would refuse it
    // (not its turn…): no target is sure. What the body must still say (`needs`: a damage expression
    // when no weapon is on the sheet) never refuses it: the form asks for it
    const type = this.panel.querySelector("select[name=action-type]")?.value;
    const choice = this.reach.byType[type]?.targets?.length ? this.reach.byType[type] : this.reach.byType.attack;
    return choice?.allowed ? new Set(choice.targets || []) : null;
  }

  /** The grid's cells of the combatants in reach, marked (class and label), as `grid()` draws them. */
  markGrid() {
    const near = this.inReach() || new Set();
    const suffix = t("grid.in.reach");
    for (const cell of this.view?.querySelectorAll("#grid button.cell") || []) {
      const reached = (cell.dataset.ids || "").split(",").some(id => near.has(id));
      cell.classList.toggle("in-reach", reached);
      const label = cell.getAttribute("aria-label") || "";
      const base = label.endsWith(suffix) ? label.slice(0, -suffix.length) : label;
      cell.setAttribute("aria-label", reached ? `${base}${suffix}` : base);
    }
  }

  markReach() {
    const near = this.inReach() || new Set();
    for (const sel of this.panel.querySelectorAll("select[name=target_id], select[name=also_target_id]")) {
      for (const option of sel.options) if (option.value) option.dataset.inReach = String(near.has(option.value));
      const box = sel.closest(".field");
      let hint = box?.querySelector(".reach-hint");
      if (box && !hint) box.append(hint = h("p", { class: "hint reach-hint", dataset: { field: sel.name } }));
      if (hint) {
        hint.hidden = !near.size;
        hint.textContent = near.size ? t("encounter.in.reach", { names: [...near].map(nameOf).join(", ") }) : "";
      }
    }
  }

  /** The form of one action: its JSON Schema from the catalogue (its own `$refs` root). Compact: the
   * skill from the actor's sheet, a bought prime as one choice, and a field that only matters for an
   * option (its penalty, a second target, a difficulty, a damage without a weapon) shown once it is chosen;
   * the rarer circumstances folded away. */
  actionForm(schema, encounter, actorId) {
    const combatants = encounter.combatants;
    let targetControl = null;  // the target's select, once built: whose reaction the form says
    const me = combatants.find(c => c.id === actorId);
    const characterOf = c => state.characters.get(c?.character_id);
    const sheet = characterOf(me)?.sheet || {};
    const isExtra = c => characterOf(c)?.sheet?.tier === "figurant";  // AS-C11: only extras act in groups
    const weapon = ctx => {  // the weapons on the actor's sheet, by name
      const names = [...(sheet.weapons || []), ...(sheet.inventory?.items || []).filter(i => /weapon/.test(i.kind || ""))]
        .map(w => w.name).filter(Boolean);
      // the sheet's first weapon chosen: an attack goes as the sheet says ("— aucune —" stays offered)
      const control = select(names, { empty: names.length ? t("encounter.weapon.none") : t("encounter.weapon.none.sheet"), value: names[0] });
      control.name = ctx.path.join(".");
      return { el: field(ctx.label, control), control, get: () => control.value || undefined };
    };
    const skill = ctx => {  // the actor's skills (the ruleset's default first), not a free text
      const own = sheet.skills && typeof sheet.skills === "object" && !Array.isArray(sheet.skills) ? sheet.skills : {};
      const names = [...new Set([ctx.schema.default, ...Object.keys(own)])];
      const control = select(names.map(n => [n, typeof own[n] === "number"
        ? t("encounter.skill.value", { name: term(n), value: num(own[n]) }) : term(n)]), { value: ctx.schema.default });
      control.name = ctx.path.join(".");
      return { el: field(ctx.label, control), control, get: () => control.value || undefined };
    };
    const one = label => ctx => {  // a list of at most one choice (AS-C4's prime bought, its penalty): one select
      const options = unwrap(ctx.schema.items || {}, schema).schema.enum || [];
      const control = select(options.map(o => [o, humanize(o)]), { empty: t("form.none") });
      control.name = ctx.path.join(".");
      return { el: field(t(label), control), control, get: () => (control.value ? [control.value] : undefined) };
    };
    const pick = ctx => {
      const control = select(combatants.map(c => [c.id, c.name]), { empty: ctx.required ? undefined : t("form.none"), value: ctx.value });
      control.name = ctx.path.join(".");
      if (ctx.path.join(".") === "target_id") targetControl = control;
      if (ctx.required && !ctx.value) {  // a default target: someone of another side, standing
        const actor = combatants.find(c => currentIds(encounter).has(c.id));
        const other = combatants.find(c => c.side !== actor?.side && !c.down)
          || combatants.find(c => c.id !== actor?.id && !c.down);
        if (other) control.value = other.id;
      }
      return { el: field(ctx.label, control), control, get: () => control.value || undefined };
    };
    // the others acting with the actor, one tick box each by name: its side's standing combatants, the
    // extras for an extra's group (AS-C11), the others for a cooperation (AS-T6); never the target
    const together = extras => ctx => {
      const boxes = combatants.filter(c => c.id !== actorId && !c.down && c.side === me?.side && isExtra(c) === extras)
        .map(c => [c.id, h("input", { type: "checkbox", id: uid("g") }), c.name]);
      const fs = h("fieldset", { class: "group", name: ctx.path.join(".") }, h("legend", {}, ctx.label),
        boxes.map(([id, input, name]) => h("span", { class: "check", dataset: { combatantId: id } }, input, h("label", { for: input.id }, name))));
      fs.id = uid("fs");
      fs.append(h("p", { class: "error", id: `${fs.id}-error`, role: "alert", hidden: true }));
      const sync = target => {  // the target is no member of the attack on it
        for (const [id, input] of boxes) {
          const box = input.closest(".check");
          box.hidden = id === target;
          if (box.hidden) input.checked = false;
        }
        fs.hidden = (extras !== isExtra(me)) || !boxes.some(([id]) => id !== target);
      };
      return { el: fs, control: fs, sync,
        get: () => { const ids = boxes.filter(([, i]) => i.checked && !i.closest(".check").hidden).map(([id]) => id); return ids.length ? ids : undefined; } };
    };
    const widgets = Object.fromEntries([...ID_FIELDS].map(n => [n, pick]));
    const group = together(true), cooperating = together(false);
    const synced = [];
    widgets.group = ctx => { const node = group(ctx); synced.push(node.sync); return node; };
    widgets.cooperating = ctx => { const node = cooperating(ctx); synced.push(node.sync); return node; };
    widgets.weapon = weapon;
    // the target's standing reaction, said as it is now (the fight read again), and chosen only by who controls it
    let reaction = null;
    widgets.reaction = ctx => (reaction = reactionField(ctx,
      () => this.encounter?.combatants.find(c => c.id === targetControl?.value) ?? null));
    // a skill with a default (Asgard's "combat") is one of the sheet's; one a sheet may lack (the rulebook's
    // weakened roll) stays free text
    if (typeof schema.properties?.skill?.default === "string") widgets.skill = skill;
    const maxOne = name => (schema.properties?.[name]?.maxItems === 1);
    if (maxOne("primes")) widgets.primes = one("encounter.prime.bought");
    if (maxOne("penalties")) widgets.penalties = one("encounter.prime.paid");
    const omit = ["type", "actor_id", "seed", "dice", ...(isGm() ? [] : ["hidden"])];
    const form = new SchemaForm({ schema, root: schema, mode: "create", widgets, omit, value: {} });
    if (reaction && targetControl) {
      targetControl.addEventListener("change", reaction.show);
      reaction.show();
    }
    this.targetReaction = reaction?.show ?? null;
    const boxOf = name => { const c = form.slots.get(name); return c?.tagName === "FIELDSET" ? c : c?.closest(".field"); };
    const valueOf = name => form.slots.get(name)?.value ?? "";
    const ticked = (name, option) => [...(boxOf(name)?.querySelectorAll("input[type=checkbox]") || [])]
      .some(i => i.checked && i.nextElementSibling?.textContent === humanize(option));
    const kind = characterOf(me)?.kind;
    const shown = {  // a field's box shown only while what it is for is chosen
      damage: () => !valueOf("weapon"),
      penalties: () => Boolean(valueOf("primes")),
      also_target_id: () => valueOf("primes") === "attaques_multiples" || ticked("free_primes", "attaques_multiples"),
      difficulty: () => Boolean(form.slots.get("unperceived")?.checked),
      take_11: () => isGm() && kind === "npc",  // AS-T8: the GM's NPCs
      heroism_4d6: () => sheet.heroism === undefined || sheet.heroism > 0,  // AS-H1 costs 1 heroism
    };
    const sync = () => {
      for (const [name, when] of Object.entries(shown)) { const box = boxOf(name); if (box && form.slots.get(name)) box.hidden = !when(); }
      for (const fn of synced) fn(valueOf("target_id"));
    };
    // the rarer circumstances (AS-C4 free primes and imposed penalties, AS-T7 close skills, assets, AS-T8)
    const rare = ["free_primes", "mandatory_penalties", "close_skill", "defense_close_skill", "asset_dice", "take_11"]
      .map(boxOf).filter(Boolean);
    if (rare.length > 1) {
      const more = h("details", { class: "more-options" }, h("summary", {}, t("encounter.more")));
      more.append(...rare);
      form.el.append(more);  // last: the usual fields first
    }
    form.el.addEventListener("change", sync);
    sync();
    form.sync = sync;
    return form;
  }

  /** The result of an action (or a start) as a line and its dice. */
  say(result) {
    const action = result?.action ?? result;
    if (!action?.type) return;
    clear(this.status, actionNode(action, nameOf), action.rolls?.length ? diceList(action.rolls, nameOf) : null);
  }

  /** An error, once, in the page's words (names, not ids: the problem's text is not shown). */
  fail(err, form) {
    const unplaced = form && err.problem?.errors ? form.showErrors(err.problem.errors.filter(e => !(e.loc || []).includes("dice")), err.problem) : [];
    clear(this.status, h("span", { class: "error" }, describe(err)), unplaced.length ? ` ${unplaced.join(" ; ")}` : "");
  }

  async post(path, body = {}) {
    try {
      const result = await api.post(`/v1/encounters/${this.encounter.id}/${path}`, body);
      this.say(result);
      await this.refresh();
      return result;
    } catch (err) {
      this.fail(err);
      return null;
    }
  }

  /** "Tour suivant", then the focus on the fight's status line (whose turn it is now). */
  async nextTurn() {
    const result = await this.post("next-turn");
    if (result) document.getElementById("encounter-status")?.focus();
  }

  async start(withTable) {
    const id = this.encounter.id;
    const send = extra => api.post(`/v1/encounters/${id}/start`, extra);
    try {
      const result = withTable ? await enterTableDice(this.diceArea, dice => send({ dice }), { nameOf, onError: err => this.fail(err) })
        : await send({});
      if (!result) return;
      this.say(result);
      await this.refresh();
    } catch (err) {
      this.fail(err);
    }
  }

  async undo() {
    const latest = this.latestUndoable();
    if (!latest) return this.fail(new Error(t("encounter.undo.nothing")));
    await this.post(`actions/${latest.id}/revert`);
  }

  async end() {
    if (!window.confirm(t("encounter.end.confirm", { name: this.encounter.name }))) return;
    await this.post("end");
  }

  openBuilder() {
    const characters = [...state.characters.values()].sort((a, b) => a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name, "fr"));
    const name = h("input", { type: "text", name: "encounter-name", value: t("builder.name.default") });
    const visibility = select([["exact", t("builder.visibility.exact")], ["status", t("builder.visibility.status")],
      ["hidden", t("builder.visibility.hidden")]], { value: "status" });
    const reveal = h("input", { type: "checkbox", checked: true });
    const rows = characters.map(c => {
      const include = h("input", { type: "checkbox", id: uid("inc"), checked: c.kind === "pc" });
      const side = h("input", { type: "text", value: c.kind === "pc" ? t("builder.heroes") : t("builder.foes"),
        "aria-label": t("builder.side.of", { name: c.name }), size: 8 });
      const count = h("input", { type: "number", min: 1, max: 50, value: "1", "aria-label": t("builder.copies.of", { name: c.name }),
        disabled: c.kind !== "npc", size: 3 });
      const hidden = h("input", { type: "checkbox", "aria-label": t("builder.hidden.of", { name: c.name }) });
      return { c, include, side, count, hidden,
        el: h("tr", {}, h("td", {}, include, h("label", { for: include.id }, ` ${c.name}`)), h("td", {}, t(`kind.${c.kind}`)),
          h("td", {}, side), h("td", {}, count), h("td", {}, hidden)) };
    });
    const status = h("p", { class: "status", role: "status" });
    const dialog = h("dialog", { "aria-labelledby": "builder-title" });
    const form = h("form", { novalidate: true },
      h("h2", { id: "builder-title" }, t("builder.title")),
      field(t("builder.name"), name), field(t("builder.visibility"), visibility),
      field(t("builder.reveal"), reveal),
      h("table", { class: "builder" },
        h("thead", {}, h("tr", {}, ["builder.combatant", "builder.kind", "builder.side", "builder.copies", "builder.hidden"]
          .map(k => h("th", { scope: "col" }, t(k))))),
        h("tbody", {}, rows.map(r => r.el))),
      status,
      h("div", { class: "actions" }, h("button", { type: "submit" }, t("builder.create")),
        h("button", { type: "button", class: "secondary", onclick: () => dialog.close() }, t("form.cancel"))));
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
