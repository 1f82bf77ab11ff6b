// The roll log, live: the first page, then every `log.created` of the stream; filters by
// character and kind; "Load more" follows the cursor. Hidden GM rolls are marked (the
// server never sends them to a player, and this page shows exactly what it receives); the GM
// publishes one once every epoch of its dice is revealed, and a published one says so to all.

import { api, describe } from "./api.js";
import { h, clear, field, select } from "./dom.js";
import { state, on, nameOf, rememberCombatants, emit, isGm } from "./store.js";
import { entryNode, timeOf, outcomeClass, dieText, publishedMark } from "./format.js";
import { t } from "./i18n.js";
import { epochMarks, serverDice } from "./epochs.js";

const KINDS = ["test", "roll", "combat", "action", "opposed", "group", "level_up", "sheet_edit"];
const PAGE = 50;

export class RollLog {
  constructor() {
    this.entries = [];     // newest first
    this.ids = new Set();
    this.live = new Set(); // ids that came by the stream
    this.loads = 0;        // `load`s begun: only the latest one's answer is shown (its filters are the page's)
    this.cursor = null;
    this.filters = { character_id: "", kind: "" };
    this.askedEncounters = new Set();
    this.publishing = new Set(); // ids whose « Publier » is on its way
  }

  query(cursor) {
    return { limit: PAGE, cursor, character_id: this.filters.character_id, kind: this.filters.kind };
  }

  /** Read the newest page (the first, or the filters changed). An entry that came live while it was on its
   * way (so it matches the filters: `add`) stays first, though the page was read before it; the answer of a
   * read that a later one replaced (the filters changed again meanwhile) is dropped. */
  async load() {
    const loading = ++this.loads;
    const before = new Set(this.live);
    const page = await api.get(`/v1/campaigns/${state.campaign.id}/rolls`, this.query());
    if (loading !== this.loads) return;
    const read = new Set(page.items.map(e => e.id));
    const arrived = this.entries.filter(e => this.live.has(e.id) && !before.has(e.id) && !read.has(e.id));
    this.entries = [...arrived, ...page.items];
    this.ids = new Set(this.entries.map(e => e.id));
    this.live = new Set(arrived.map(e => e.id));
    this.cursor = page.next_cursor;
    this.draw();
  }

  async more() {
    if (!this.cursor) return;
    const page = await api.get(`/v1/campaigns/${state.campaign.id}/rolls`, this.query(this.cursor));
    for (const entry of page.items) if (!this.ids.has(entry.id)) { this.ids.add(entry.id); this.entries.push(entry); }
    this.cursor = page.next_cursor;
    this.draw();
  }

  /** Re-read the newest page and merge it: what came live stays first, nothing twice. */
  async resync() {
    const page = await api.get(`/v1/campaigns/${state.campaign.id}/rolls`, this.query());
    const fresh = new Set(page.items.map(e => e.id));
    const newer = this.entries.filter(e => this.live.has(e.id) && !fresh.has(e.id));
    const older = this.entries.filter(e => !this.live.has(e.id) && !fresh.has(e.id));
    this.entries = [...newer, ...page.items, ...older];
    this.ids = new Set(this.entries.map(e => e.id));
    if (!this.cursor && older.length === 0) this.cursor = page.next_cursor;
    this.draw();
  }

  add(entry) {
    if (!entry || this.ids.has(entry.id)) return;
    if (this.filters.character_id || this.filters.kind) {
      this.resync().catch(err => console.warn("log refresh failed", err));  // the server knows whom an entry involves
      return;
    }
    this.ids.add(entry.id);
    this.live.add(entry.id);
    this.entries.unshift(entry);
    this.draw();
  }

  mount(section) {
    this.list = h("ol", { class: "log", id: "log-list", "aria-live": "polite", "aria-relevant": "additions", tabindex: 0,
                          "aria-label": t("log.label") });
    this.moreButton = h("button", { type: "button", class: "secondary", onclick: () => this.more().catch(err => this.fail(err)) }, t("log.more"));
    this.status = h("p", { class: "status", role: "status" });
    this.characterFilter = select([], { empty: t("log.all.characters") });
    this.kindFilter = select(KINDS.map(k => [k, t(`log.kind.${k}`)]), { empty: t("log.all.kinds") });
    const onFilter = () => {
      this.filters = { character_id: this.characterFilter.value, kind: this.kindFilter.value };
      this.load().catch(err => this.fail(err));
    };
    this.characterFilter.addEventListener("change", onFilter);
    this.kindFilter.addEventListener("change", onFilter);
    clear(section,
      h("div", { class: "section-head" }, h("h2", { id: "log-title" }, t("log.title")),
        h("span", { class: "stream-state", id: "stream-state", role: "status" }, "")),
      h("div", { class: "filters" }, field(t("log.filter.character"), this.characterFilter), field(t("log.filter.kind"), this.kindFilter)),
      this.list, this.moreButton, this.status);
    const fillCharacters = () => {
      const keep = this.characterFilter.value;
      clear(this.characterFilter, h("option", { value: "" }, t("log.all.characters")),
        [...state.characters.values()].sort((a, b) => a.name.localeCompare(b.name, "fr")).map(c => h("option", { value: c.id }, c.name)));
      this.characterFilter.value = keep;
    };
    fillCharacters();
    on("characters", () => { fillCharacters(); this.draw(); });
    on("combatants", () => this.draw());
    on("epochs", () => this.draw());
    // "● en direct" only when the stream is open AND the last reads succeeded (a failed refresh is retried)
    let stream = state.stream, stale = false;
    const show = () => {
      const el = section.querySelector("#stream-state");
      const status = stream === "live" && stale ? "reconnecting" : stream;
      el.textContent = status === "live" ? t("stream.live") : status === "reconnecting" ? t("stream.reconnecting") : t("stream.offline");
      el.className = `stream-state ${status}`;
      el.dataset.stale = String(stale);
    };
    on("stream", status => { stream = status; show(); });
    on("sync", detail => { stale = Boolean(detail?.stale); show(); });
    this.draw();
  }

  fail(err) { if (this.status) this.status.textContent = describe(err); }

  /** The list drawn again; focus inside it (a line, its « Publier ») stays on the same entry's element. */
  draw() {
    if (!this.list) return;
    const focused = document.activeElement;
    const within = focused !== this.list && this.list.contains(focused) ? focused.closest("li[data-entry-id]") : null;
    clear(this.list, this.entries.length ? this.entries.map(entry => this.item(entry)) : h("li", { class: "hint" }, t("log.empty")));
    this.moreButton.hidden = !this.cursor;
    if (within) this.focusEntry(within.dataset.entryId, focused.classList.contains("publish"));
  }

  /** Focus on an entry's « Publier » when asked and still there, else on its line. */
  focusEntry(id, onButton = false) {
    const line = [...this.list.children].find(li => li.dataset.entryId === id);
    if (!line) return;
    const button = onButton ? line.querySelector("button.publish") : null;
    if (button && !button.disabled) { button.focus(); return; }
    line.setAttribute("tabindex", "-1");  // focusable by the script only, not a stop of the Tab key
    line.focus();
  }

  /** The GM's « Publier »: the hidden roll shown to the players (they read it live, by `log.published`). */
  async publish(entry) {
    this.publishing.add(entry.id);
    this.draw();
    try {
      const shown = await api.post(`/v1/campaigns/${state.campaign.id}/rolls/${entry.id}/publish`);
      this.entries = this.entries.map(e => (e.id === shown.id ? shown : e));
      if (this.status) this.status.textContent = "";
    } catch (err) {
      this.fail(err);
    } finally {
      this.publishing.delete(entry.id);
    }
    this.draw();
    this.focusEntry(entry.id, true);  // refused: the button again; published: its line, which says « publié »
  }

  /** A hidden roll's state for publishing: « publié » for all; for the GM, the button once each
   * epoch of its dice is revealed (its numbers tell nothing before), else when it may be. */
  publishNode(entry, line) {
    if (entry.published_at) return publishedMark(entry);
    if (!entry.hidden || !isGm()) return null;
    if (!serverDice(entry).every(die => state.revealedEpochs.has(die.epoch))) {
      return h("span", { class: "publish-wait" }, t("log.publish.wait"));
    }
    const what = entry.kind === "roll" && entry.expression ? entry.expression : line.textContent;
    return h("button", { type: "button", class: "secondary small publish", disabled: this.publishing.has(entry.id),
                         "aria-label": t("log.publish.label", { what }), onclick: () => this.publish(entry) }, t("log.publish"));
  }

  item(entry) {
    if (entry.kind === "combat" && entry.encounter_id
        && [entry.actor_id, entry.target_id].some(id => id && !state.combatants.has(id))) this.learnNames(entry.encounter_id);
    const line = entryNode(entry, nameOf);
    return h("li", { class: `entry ${entry.kind} ${outcomeClass(entry.outcome)}`, dataset: { entryId: entry.id, kind: entry.kind } },
      h("time", { datetime: entry.created_at }, timeOf(entry.created_at)), " ",
      h("span", { class: "kind" }, t(`log.kind.${entry.kind}`)), " ",
      entry.hidden && !entry.published_at ? h("span", { class: "badge hidden-roll", title: t("log.hidden.title") }, t("log.hidden")) : null,
      line,
      entry.rolls?.length ? h("span", { class: "dice-inline" }, ` [${entry.rolls.map(r => dieText(r, nameOf)).join(", ")}]`) : null,
      epochMarks(entry), " ", this.publishNode(entry, line));
  }

  learnNames(encounterId) {
    if (this.askedEncounters.has(encounterId)) return;
    this.askedEncounters.add(encounterId);
    api.get(`/v1/encounters/${encounterId}`).then(encounter => { rememberCombatants(encounter); emit("combatants"); })
      .catch(() => {});
  }
}
