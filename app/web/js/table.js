// The table screen: a read-only view of the current encounter for a shared screen —
// large type, the turn order, whose turn it is; under `hp_visibility: status` only status
// words, and never a hidden combatant, whoever's token opened it.

import { api, describe } from "./api.js";
import { h, clear } from "./dom.js";
import { state } from "./store.js";
import { t } from "./i18n.js";
import { combatantView, ordered, currentIds } from "./encounter.js";

export class TableScreen {
  mount(root) {
    this.main = h("main", { class: "table-screen", id: "table-screen", "aria-live": "polite" });
    clear(root,
      h("header", { class: "top table-top" },
        h("h1", {}, state.campaign.name),
        h("a", { href: "#/", class: "button secondary" }, t("table.back"))),
      this.main);
    document.body.classList.add("table-mode");
  }

  async pick() {
    const active = await api.get(`/v1/campaigns/${state.campaign.id}/encounters`, { status: "active", limit: 1 });
    const any = active.items.length ? active : await api.get(`/v1/campaigns/${state.campaign.id}/encounters`, { limit: 1 });
    this.id = any.items[0]?.id ?? null;
    await this.refresh();
  }

  async refresh() {
    if (!this.id) return clear(this.main, h("p", { class: "big" }, t("table.none")));
    try {
      const e = await api.get(`/v1/encounters/${this.id}`);
      if (this.encounter && e.id === this.encounter.id && e.version < this.encounter.version) return;
      this.encounter = e;
      this.draw();
    } catch (err) {
      clear(this.main, h("p", { class: "error" }, describe(err)));
    }
  }

  onEvent(name, data) {
    if (name === "encounter.created" || (name === "encounter.updated" && data.id !== this.id)) return this.pick();
    if (data.id === this.id) this.refresh();
  }

  draw() {
    const e = this.encounter;
    const visibility = e.options?.hp_visibility || "exact";
    const now = currentIds(e);
    const shown = ordered(e).filter(({ c }) => !c.hidden);
    const turn = shown.filter(({ c }) => now.has(c.id)).map(({ c }) => c.name).join(", ");
    clear(this.main,
      h("h2", { class: "big" }, e.name, " ", h("span", { class: "round" }, e.status === "active" ? t("encounter.round", { n: e.round }) : t(`encounter.status.${e.status}`))),
      turn && e.status === "active" ? h("p", { class: "huge", id: "table-turn" }, t("table.turn"), h("strong", {}, turn)) : null,
      h("ol", { class: "turn-order big-order", "aria-label": t("encounter.order") },
        shown.map(({ c, slot }) => combatantView(c, { current: e.status === "active" && now.has(c.id), initiative: slot?.initiative,
                                                        table: true, hpVisibility: visibility }))));
    this.main.dataset.version = String(e.version);
  }
}
