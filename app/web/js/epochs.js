// Verifiable server dice: the current dice epoch (its commitment, its salts, its count of dice), a
// salt any member adds before its first die, the GM's reveal, and for each revealed epoch a check
// done here, in the page, with Web Crypto: the seed's SHA-256 against the commitment published
// before the first die, and every server die of the epoch this viewer can read derived again from
// the seed (HMAC-SHA256) and compared with what the log says.

import { api, getAll, describe } from "./api.js";
import { h, clear, patch, field } from "./dom.js";
import { state, isGm, emit } from "./store.js";
import { t, lang, num, timeText } from "./i18n.js";

const TWO_32 = 2 ** 32;
const MAX_SALTS = 16;
const utf8 = new TextEncoder();

/** Every server die of a log entry (an object with `epoch`, `k` and `value`), wherever the entry
 * lists it (a test's `rolls`, a combat entry's steps…), as the server's own walk finds them. */
export function serverDice(value, out = []) {
  if (Array.isArray(value)) for (const item of value) serverDice(item, out);
  else if (value && typeof value === "object") {
    if ("epoch" in value && "k" in value && "value" in value) out.push(value);
    else for (const item of Object.values(value)) serverDice(item, out);
  }
  return out;
}

export const shortId = id => `${String(id).slice(0, 4)}…`;
const shortHex = value => `${String(value).slice(0, 12)}…`;

/** Numbers in runs: [7, 8, 9, 12] → "7–9, 12". */
export function runs(numbers) {
  const sorted = [...new Set(numbers)].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i < sorted.length; i++) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    out.push(j > i ? `${num(sorted[i])}–${num(sorted[j])}` : num(sorted[i]));
    i = j;
  }
  return out.join(", ");
}

/** Where a log entry's server dice come from, discreetly: « époque 3f2a… n° 7–9 » (one per epoch). */
export function epochMarks(entry) {
  const byEpoch = new Map();
  for (const die of serverDice(entry)) {
    if (!byEpoch.has(die.epoch)) byEpoch.set(die.epoch, []);
    byEpoch.get(die.epoch).push(die.k);
  }
  if (!byEpoch.size) return null;
  return h("span", { class: "epoch-marks" }, [...byEpoch].map(([epoch, ks]) =>
    h("span", { class: "epoch-mark", title: t("epochs.mark.title", { id: epoch }), dataset: { epoch, k: ks.join(" ") } },
      t("epochs.mark", { id: shortId(epoch), k: runs(ks) }))));
}

// --- the check, in the page -------------------------------------------------------------------------

const hex = buffer => [...new Uint8Array(buffer)].map(b => b.toString(16).padStart(2, "0")).join("");
const bytesOf = text => new Uint8Array(text.match(/../g).map(pair => parseInt(pair, 16)));

/** Die `k` of an epoch (API.md "Verifiable server dice"): HMAC-SHA256(seed, msg + ":" + j) for j = 0,
 * 1, …, read as eight big-endian 32-bit words; the first below the largest multiple of `faces` gives
 * `word % faces + 1`. `msg` is "{epoch}:{k}" then "\n" and each salt, in order. */
export async function derivedDie(key, epoch, k, faces) {
  const message = `${epoch.id}:${k}${epoch.salts.map(salt => `\n${salt}`).join("")}`;
  const limit = TWO_32 - (TWO_32 % faces);
  for (let j = 0; j < 64; j++) {  // each word passes with odds above 1/2: 512 words never all fail
    const words = new DataView(await crypto.subtle.sign("HMAC", key, utf8.encode(`${message}:${j}`)));
    for (let i = 0; i < 32; i += 4) {
      const word = words.getUint32(i, false);
      if (word < limit) return (word % faces) + 1;
    }
  }
  return null;
}

const facesOf = label => {
  const faces = /^d(\d+)$/.exec(String(label))?.[1];
  return faces && Number(faces) >= 1 && Number(faces) < TWO_32 ? Number(faces) : null;
};

/** A revealed epoch checked against the dice of it this viewer read: `{commitment, seen, ok,
 * mismatches: [{k, logged, computed}], unseen}`. A number read twice with two values, or outside the
 * epoch's count, is a mismatch too. */
export async function checkEpoch(epoch, dice) {
  const seed = /^[0-9a-f]{64}$/.test(epoch.seed ?? "") ? bytesOf(epoch.seed) : null;
  const commitment = seed !== null && hex(await crypto.subtle.digest("SHA-256", seed)) === epoch.commitment;
  const byK = new Map();
  for (const die of dice) {
    if (!byK.has(die.k)) byK.set(die.k, []);
    byK.get(die.k).push(die);
  }
  const mismatches = [];
  let ok = 0;
  const key = seed && await crypto.subtle.importKey("raw", seed, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  for (const [k, copies] of [...byK].sort((a, b) => a[0] - b[0])) {
    const faces = facesOf(copies[0].die);
    const computed = key && faces && Number.isInteger(k) && k >= 0 && k < epoch.dice ? await derivedDie(key, epoch, k, faces) : null;
    const wrong = copies.find(die => die.value !== computed);
    if (wrong) mismatches.push({ k, logged: wrong.value, computed });
    else ok += 1;
  }
  const seen = byK.size;
  const inside = [...byK.keys()].filter(k => Number.isInteger(k) && k >= 0 && k < epoch.dice).length;
  return { commitment, seen, ok, mismatches, unseen: Math.max(0, epoch.dice - inside) };
}

/** "1 dé" / "2 dés": the catalogue's `.one` or `.other` form of `key` for `n`. */
function counted(key, n, params = {}) {
  const form = new Intl.PluralRules(lang).select(n) === "one" ? "one" : "other";
  return t(`${key}.${form}`, { n: num(n), ...params });
}

// --- the panel ----------------------------------------------------------------------------------------

export class DicePanel {
  constructor() {
    this.current = null;     // the campaign's current epoch
    this.revealed = [];      // newest first
    this.results = new Map(); // epoch id → the check's result (or {error})
    this.checks = 0;          // checks begun: only the latest one's results are shown
    this.message = "";
    state.revealedEpochs = new Set();
  }

  /** The revealed epochs told to the rest of the page (the log's « Publier » waits for them). */
  tell() {
    const ids = new Set(this.revealed.map(epoch => epoch.id));
    if (ids.size === state.revealedEpochs.size && [...ids].every(id => state.revealedEpochs.has(id))) return;
    state.revealedEpochs = ids;
    emit("epochs");
  }

  get base() { return `/v1/campaigns/${state.campaign.id}/dice-epochs`; }

  mount(section) {
    this.section = section;
    this.body = h("div", { class: "epochs-body" });
    this.status = h("p", { class: "status", role: "status", id: "epochs-status" });
    clear(section, h("h2", { id: "epochs-title" }, t("epochs.title")),
      h("p", { class: "hint" }, t("epochs.hint")), this.body, this.status);
    this.draw();
  }

  /** The epochs as the server lists them now; the revealed ones checked in the background (the whole
   * log is read for it: the page is ready before), again only when they are others than last checked. */
  async load() {
    const { items } = await api.get(this.base);
    this.current = items.find(epoch => !epoch.revealed_at) ?? this.current;
    this.revealed = items.filter(epoch => epoch.revealed_at);
    this.tell();
    this.draw();
    const ids = this.revealed.map(epoch => epoch.id).join();
    if (ids !== this.checkedIds) this.check();
  }

  /** The current epoch read again (its count of dice: a roll this viewer does not see moves it too). */
  async refresh() {
    const epoch = await api.get(`${this.base}/current`);
    if (this.current && epoch.id !== this.current.id) return this.load();  // revealed meanwhile: the list too
    this.current = epoch;
    this.draw();
  }

  onEvent(name, data) {
    if (name === "dice_epoch.salted" && data.epoch) {
      if (!this.current || this.current.id === data.epoch.id) this.current = { ...data.epoch, dice: Math.max(data.epoch.dice, this.current?.dice ?? 0) };
      this.draw();
    } else if (name === "dice_epoch.revealed" && data.epoch) {
      this.learnRevealed(data.epoch, data.next);
    } else if (name === "log.published") {
      this.check();  // a hidden roll now shown: its dice join the check
    }
  }

  /** A new log entry: its dice move the current epoch's count (no salt after the first die). */
  onEntry(entry) {
    if (!entry || !this.current) return;
    const mine = serverDice(entry).filter(die => die.epoch === this.current.id).map(die => die.k + 1);
    if (mine.length && Math.max(...mine) > this.current.dice) {
      this.current = { ...this.current, dice: Math.max(...mine) };
      this.draw();
    }
  }

  /** An epoch just revealed (the GM's answer, or its event: whichever comes second changes nothing). */
  learnRevealed(epoch, next) {
    const known = this.revealed.some(e => e.id === epoch.id);
    if (!known) this.revealed = [epoch, ...this.revealed];
    if (next && (!this.current || this.current.id === epoch.id)) this.current = next;
    this.tell();
    this.draw();
    if (!known) this.check();
  }

  /** Every revealed epoch checked against the whole log this viewer reads (every page of it). */
  async check() {
    if (!this.revealed.length) return;
    const checking = ++this.checks;
    this.checkedIds = this.revealed.map(epoch => epoch.id).join();
    this.section.setAttribute("aria-busy", "true");
    if (!globalThis.crypto?.subtle) {
      this.results = new Map(this.revealed.map(epoch => [epoch.id, { error: t("epochs.check.insecure") }]));
      this.done(checking);
      return;
    }
    let dice;
    try {
      dice = serverDice(await getAll(`/v1/campaigns/${state.campaign.id}/rolls`));
    } catch (err) {
      if (checking !== this.checks) return;
      this.results = new Map(this.revealed.map(epoch => [epoch.id, { error: describe(err) }]));
      this.done(checking);
      return;
    }
    const results = new Map();
    for (const epoch of this.revealed) {
      try {
        results.set(epoch.id, await checkEpoch(epoch, dice.filter(die => die.epoch === epoch.id)));
      } catch (err) {
        results.set(epoch.id, { error: String(err?.message || err) });
      }
    }
    if (checking !== this.checks) return;
    this.results = results;
    this.done(checking);
  }

  done(checking) {
    this.section.removeAttribute("aria-busy");
    this.draw();
    this.section.dataset.checked = String(checking);
  }

  async addSalt(input) {
    const salt = input.value.trim();
    if (!salt) { this.say(t("epochs.salt.empty")); return; }
    try {
      this.current = await api.post(`${this.base}/current/salts`, { salt });
      input.value = "";
      this.say(t("epochs.salt.added"));
    } catch (err) {
      this.say(describe(err));
      if (err.problem?.code === "epoch_started" || err.problem?.code === "too_many_salts") await this.refresh().catch(() => {});
    }
    this.draw();
  }

  async reveal(button) {
    if (!window.confirm(t("epochs.reveal.confirm"))) return;
    button.disabled = true;
    try {
      const { next, ...epoch } = await api.post(`${this.base}/current/reveal`);
      this.say(t("epochs.revealed"));
      this.learnRevealed(epoch, next);
    } catch (err) {
      button.disabled = false;
      this.say(describe(err));
    }
  }

  say(text) { this.message = text; if (this.status) this.status.textContent = text; }

  draw() {
    if (!this.body) return;
    patch(this.body, this.currentNode(),
      h("h3", { id: "epochs-revealed-title" }, t("epochs.revealed.title")),
      this.revealed.length
        ? h("ol", { class: "epochs-revealed", id: "epochs-revealed", "aria-labelledby": "epochs-revealed-title" },
          this.revealed.map(epoch => this.revealedNode(epoch)))
        : h("p", { class: "hint", id: "epochs-revealed" }, t("epochs.revealed.none")));
  }

  currentNode() {
    const epoch = this.current;
    if (!epoch) return h("p", { class: "hint" }, t("app.loading"));
    const copy = h("button", { type: "button", class: "secondary small", "aria-label": t("epochs.copy.label"), onclick: async event => {
      const button = event.currentTarget;  // the page's (a redraw patches it, its handler is the newest drawing's)
      try { await navigator.clipboard.writeText(epoch.commitment); button.textContent = t("login.copied"); }
      catch { button.textContent = t("login.copy.manual"); }
    } }, t("login.copy"));
    const open = epoch.dice === 0 && epoch.salts.length < MAX_SALTS;
    const input = h("input", { type: "text", name: "salt", id: "epoch-salt", maxlength: 64, autocomplete: "off" });
    const form = open ? h("form", { class: "salt-form", onsubmit: event => {
      event.preventDefault();
      this.addSalt(event.currentTarget.querySelector("input[name=salt]"));
    } },
      field(t("epochs.salt.label"), input, { hint: t("epochs.salt.hint") }),
      h("button", { type: "submit", class: "secondary" }, t("epochs.salt.add"))) : null;
    const reveal = isGm() ? h("button", { type: "button", id: "epoch-reveal", onclick: event => this.reveal(event.currentTarget) }, t("epochs.reveal")) : null;
    return h("div", { class: "epoch-current", id: "epoch-current", dataset: { epochId: epoch.id, dice: String(epoch.dice) } },
      h("h3", { title: epoch.id }, t("epochs.current", { id: shortId(epoch.id) })),
      h("dl", { class: "epoch-facts" },
        h("dt", {}, t("epochs.commitment")),
        h("dd", {}, h("code", { class: "commitment", title: epoch.commitment, dataset: { full: epoch.commitment } }, shortHex(epoch.commitment)), " ", copy),
        h("dt", {}, t("epochs.dice")), h("dd", { class: "epoch-dice" }, num(epoch.dice)),
        h("dt", {}, t("epochs.salts")),
        h("dd", {}, epoch.salts.length
          ? h("ul", { class: "salts", id: "epoch-salts" }, epoch.salts.map(salt => h("li", {}, salt)))
          : h("span", { class: "hint", id: "epoch-salts" }, t("epochs.salts.none")))),
      form ?? h("p", { class: "hint" }, epoch.dice > 0 ? t("epochs.salt.closed") : t("epochs.salt.full")),
      reveal);
  }

  revealedNode(epoch) {
    const result = this.results.get(epoch.id);
    const state = !result ? "checking" : result.error ? "error" : result.commitment && !result.mismatches.length ? "ok" : "mismatch";
    return h("li", { class: `epoch ${state}`, dataset: { epochId: epoch.id, result: state } },
      h("span", { class: "epoch-head", title: epoch.id },
        t("epochs.revealed.line", { id: shortId(epoch.id), dice: counted("epochs.count", epoch.dice), at: timeText(epoch.revealed_at) }),
        epoch.imported ? h("span", { class: "badge" }, t("epochs.imported")) : null),
      this.verdict(result));
  }

  verdict(result) {
    if (!result) return h("p", { class: "verdict" }, t("epochs.check.busy"));
    if (result.error) return h("p", { class: "verdict error" }, t("epochs.check.failed", { error: result.error }));
    const lines = [];
    if (!result.commitment) lines.push(h("p", { class: "verdict bad" }, t("epochs.check.commitment")));
    if (result.mismatches.length) {
      lines.push(h("p", { class: "verdict bad" }, counted("epochs.check.wrong", result.mismatches.length, { seen: num(result.seen) })),
        h("ul", { class: "mismatches" }, result.mismatches.map(m => h("li", { dataset: { k: String(m.k) } },
          t("epochs.check.die", { k: num(m.k), logged: num(m.logged), computed: m.computed === null ? "—" : num(m.computed) })))));
    } else if (result.commitment) {
      lines.push(h("p", { class: "verdict good" }, result.seen
        ? counted("epochs.check.ok", result.seen, { ok: num(result.ok) }) : t("epochs.check.none")));
    }
    if (result.unseen) lines.push(h("p", { class: "hint unseen" }, counted("epochs.check.unseen", result.unseen)));
    return lines;
  }
}
