// The table screen: a read-only view for a shared screen (a TV nobody scrolls) — large type.
// In a fight: whose turn it is, every combatant in compact tiles (10 fit a 1080p screen), the
// grid; under `hp_visibility: status` only status words. Out of a fight: the table's dice tray,
// the campaign's latest rolls, live from the event stream. Never a hidden combatant nor a hidden
// roll, whoever's token opened it.

import { api, describe } from "./api.js";
import { h, clear } from "./dom.js";
import { state, nameOf, rememberCombatants } from "./store.js";
import { t, num } from "./i18n.js";
import { entryNode, outcomeClass, outcomeWords, purposeWord, timeOf } from "./format.js";
import { combatantView, ordered, currentIds, pawnGrid } from "./encounter.js";

const TRAY = 6;  // the rolls the tray shows: the newest first, as large as a 1080p screen holds them

export class TableScreen {
  constructor() {
    this.rolls = [];
  }

  mount(root) {
    this.main = h("main", { class: "table-screen", id: "table-screen", "aria-live": "polite" });
    clear(root,
      h("header", { class: "top table-top" },
        h("h1", {}, state.campaign.name),
        h("a", { href: "#/", class: "button secondary" }, t("table.back"))),
      this.main);
    document.body.classList.add("table-mode");
  }

  /** The running fight if there is one; else the dice tray (its rolls read again). */
  async pick() {
    const active = await api.get(`/v1/campaigns/${state.campaign.id}/encounters`, { status: "active", limit: 1 });
    this.id = active.items[0]?.id ?? null;
    if (!this.id) this.encounter = null;
    await this.refresh();
  }

  async refresh() {
    try {
      if (!this.id) {
        await this.readRolls();
        return this.drawTray();
      }
      const e = await api.get(`/v1/encounters/${this.id}`);
      if (this.encounter && e.id === this.encounter.id && e.version < this.encounter.version) return;
      if (e.status !== "active") {  // the fight is over: back to the dice
        Object.assign(this, { id: null, encounter: null });
        return this.refresh();
      }
      this.encounter = e;
      rememberCombatants(e);
      this.draw();
    } catch (err) {
      clear(this.main, h("p", { class: "error" }, describe(err)));
    }
  }

  async readRolls() {
    const page = await api.get(`/v1/campaigns/${state.campaign.id}/rolls`, { limit: TRAY * 2 });
    this.rolls = page.items.filter(e => !e.hidden).slice(0, TRAY);
  }

  onEvent(name, data) {
    if (name === "encounter.created" || (name === "encounter.updated" && data.id !== this.id)) return this.pick();
    if (data.id === this.id) this.refresh();
  }

  /** A new log entry: onto the tray (out of a fight), the newest first. */
  onRoll(data) {
    if (this.id) return;
    if (!data.entry) return this.refresh();  // an event naming its entry only: read the newest page
    if (data.entry.hidden || this.rolls.some(e => e.id === data.entry.id)) return;
    this.rolls = [data.entry, ...this.rolls].slice(0, TRAY);
    this.drawTray();
  }

  drawTray() {
    delete this.main.dataset.version;
    this.main.dataset.mode = "dice";
    clear(this.main,
      h("h2", { class: "big", id: "tray-title" }, t("table.tray")),
      this.rolls.length
        ? h("ol", { class: "tray", id: "dice-tray", "aria-labelledby": "tray-title" }, this.rolls.map((entry, i) => rollTile(entry, i === 0)))
        : h("p", { class: "big hint-dark" }, t("table.tray.empty")));
  }

  draw() {
    const e = this.encounter;
    const visibility = e.options?.hp_visibility || "exact";
    const now = currentIds(e);
    const shown = ordered(e).filter(({ c }) => !c.hidden);
    const turn = shown.filter(({ c }) => now.has(c.id)).map(({ c }) => c.name).join(", ");
    const grid = pawnGrid(e, { seen: c => !c.hidden });
    this.main.dataset.mode = "fight";
    clear(this.main,
      h("div", { class: "table-head" },
        h("h2", { class: "big" }, e.name, " ", h("span", { class: "round" }, e.status === "active" ? t("encounter.round", { n: e.round }) : t(`encounter.status.${e.status}`))),
        turn && e.status === "active" ? h("p", { class: "huge", id: "table-turn" }, t("table.turn"), h("strong", {}, turn)) : null),
      h("div", { class: `table-fight ${grid ? "with-grid" : ""}` },
        h("ol", { class: "turn-order big-order", "aria-label": t("encounter.order") },
          shown.map(({ c, slot }) => combatantView(c, { current: e.status === "active" && now.has(c.id), initiative: slot?.initiative,
                                                          table: true, hpVisibility: visibility }))),
        grid));
    this.main.dataset.version = String(e.version);
  }
}

/** One roll of the tray: who, the line, each die large, the outcome. */
function rollTile(entry, newest) {
  const who = entry.character_id ? nameOf(entry.character_id) : null;
  const dice = entry.rolls || [];
  return h("li", { class: `roll ${outcomeClass(entry.outcome)} ${newest ? "newest" : ""}`, dataset: { entryId: entry.id, kind: entry.kind } },
    h("p", { class: "roll-head" }, who && who !== "?" ? h("strong", {}, who) : null, " ",
      h("time", { datetime: entry.created_at }, timeOf(entry.created_at))),
    dice.length ? h("ul", { class: "tray-dice", "aria-label": t("dice.label") }, dice.map(roll =>
      h("li", { class: "tray-die", "aria-label": t("table.die", { die: roll.die, value: num(roll.value) }) },
        h("span", { class: "tray-value", "aria-hidden": "true" }, num(roll.value)),
        h("span", { class: "tray-face", "aria-hidden": "true" }, [roll.die, roll.purpose && roll.purpose !== "roll" ? purposeWord(roll.purpose) : null].filter(Boolean).join(" · "))))) : null,
    entry.outcome ? h("p", { class: "roll-outcome" }, outcomeWords(entry.outcome)) : null,
    h("p", { class: "roll-line" }, entryNode(entry, nameOf)));
}
