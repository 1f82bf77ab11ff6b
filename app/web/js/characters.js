// Characters as cards (resources as bars, key stats, karma/heroism/points) and the
// create/edit form built from the ruleset's sheet schema.

import { api, describe } from "./api.js";
import { h, clear, bar, field, select } from "./dom.js";
import { state, on, isGm, controls, upsertCharacter, mayEnterDice } from "./store.js";
import { SchemaForm, FormError, mergePatch } from "./schema-form.js";
import { t, term, termLabel, num, statusWordText, sep } from "./i18n.js";
import { enterTableDice } from "./dice.js";
import { entryNode, diceList } from "./format.js";
import { luckLine, loadLuck } from "./luck.js";

const POINTS = ["level", "karma", "heroism", "light_points", "dark_points", "intuition", "protection", "armor",
  "mental_health", "posture"];

/** The sheet's pools: every `x` with an `x_max` (hp, mp, vitality, pe…). */
export function resourcesOf(sheet) {
  const pools = [];
  for (const [key, max] of Object.entries(sheet || {})) {
    if (!key.endsWith("_max") || typeof max !== "number" || max <= 0) continue;
    const name = key.slice(0, -4);
    const value = typeof sheet[name] === "number" ? sheet[name] : max;
    pools.push([name, value, max]);
  }
  return pools;
}

function keyStats(sheet) {
  const out = [];
  for (const group of ["stats", "skills"]) {
    const values = sheet?.[group];
    if (values && typeof values === "object" && !Array.isArray(values)) {
      for (const [k, v] of Object.entries(values)) if (typeof v === "number") out.push([k, v]);
    }
  }
  return out;
}

function playerName(id) {
  return state.players.find(p => p.id === id)?.name;
}

export function card(character) {
  const mine = controls(character);
  const full = mine || Boolean(character.sheet);  // `observer`: the whole sheet, read only
  const headingId = `char-${character.id}`;
  const owner = character.player_id ? playerName(character.player_id) : null;
  const el = h("article", { class: `card character ${character.kind}`, "aria-labelledby": headingId,
                            dataset: { characterId: character.id } },
    h("header", {},
      h("h3", { id: headingId }, character.name),
      h("span", { class: `badge ${character.kind}` }, t(`kind.${character.kind}`)),
      owner ? h("span", { class: "owner" }, owner) : null));
  if (!full) {
    el.append(h("p", { class: "hint" }, character.player_id === null || (!character.player_id && character.kind === "npc") ? t("characters.gm") : t("characters.other")));
    const pools = Object.entries(character.pools || {});  // `limited`: each pool as a status word
    if (pools.length) {
      el.append(h("div", { class: "bars" }, pools.map(([name, p]) =>
        h("p", { class: `status-word ${p.status}`, dataset: { resource: name } }, `${term(name)}${sep()}${statusWordText(p.status)}`))));
    }
    return el;
  }
  const sheet = character.sheet || {};
  const pools = resourcesOf(sheet);
  if (pools.length) el.append(h("div", { class: "bars" }, pools.map(([name, value, max]) => bar(name, value, max))));
  const stats = keyStats(sheet);
  if (stats.length) {
    el.append(h("dl", { class: "stats" }, stats.map(([k, v]) => h("div", {}, h("dt", {}, term(k)), h("dd", {}, num(v))))));
  }
  const points = POINTS.filter(k => sheet[k] !== undefined && sheet[k] !== null && typeof sheet[k] !== "object");
  if (points.length) {
    el.append(h("dl", { class: "points" }, points.map(k => h("div", {}, h("dt", {}, term(k)), h("dd", {}, typeof sheet[k] === "number" ? num(sheet[k]) : term(sheet[k]))))));
  }
  const lucky = luckLine(character);
  if (lucky) el.append(h("p", { class: "luck", title: t("luck.title"), dataset: { luck: character.id } }, lucky));
  if (mine) el.append(h("button", { type: "button", class: "small secondary", "aria-label": t("characters.edit.label", { name: character.name }),
                          onclick: () => openCharacterDialog(character) }, t("characters.edit")));
  const actions = ruleActions(character);
  if (actions.length) el.append(h("button", { type: "button", class: "small secondary", "aria-label": t("characters.actions.label", { name: character.name }),
                                 onclick: () => openActionDialog(character, actions) }, t("characters.actions")));
  const levelUp = isGm() ? state.ruleset?.operations?.schemas?.level_up : null;  // GC-L1..L6: the GM's
  if (levelUp) el.append(h("button", { type: "button", class: "small secondary", "aria-label": t("characters.level.up.label", { name: character.name }),
                          onclick: () => openLevelUpDialog(character, levelUp) }, t("characters.level.up")));
  return el;
}

/** A level-up (`POST /v1/characters/{id}/level-ups`): its form from the catalogue's body schema, the
 * dice rolled by the server; the card follows by its `character.updated`. */
export function openLevelUpDialog(character, schema) {
  const next = (character.sheet?.level ?? 0) + 1;
  // only the fields of the level being taken (and those of every level)
  const otherLevels = Object.entries(schema.properties || {}).filter(([, prop]) => !levelFits(prop, next)).map(([name]) => name);
  const form = new SchemaForm({ schema, root: schema, mode: "create", omit: ["seed", "dice", "hidden", ...otherLevels], value: {} });
  const status = h("p", { class: "status", role: "status" });
  const missing = h("p", { class: "hint missing", id: "level-up-missing", "aria-live": "polite" });
  const sayMissing = () => {
    const names = [...form.el.querySelectorAll("[aria-required=true]")].filter(c => c.value === "")
      .map(c => c.labels?.[0]?.textContent.trim()).filter(Boolean);
    missing.textContent = names.length ? t("levelup.missing", { names: names.join(", ") }) : "";
    missing.hidden = !names.length;
  };
  const dialog = h("dialog", { class: "sheet-dialog", "aria-labelledby": "level-up-title" });
  const submit = h("button", { type: "submit" }, t("characters.level.up.send"));
  const formEl = h("form", { novalidate: true, method: "dialog" },
    h("h2", { id: "level-up-title" }, t("characters.level.up.title", { name: character.name, n: num((character.sheet?.level ?? 0) + 1) })),
    form.el, missing, status,
    h("div", { class: "actions" }, submit, h("button", { type: "button", class: "secondary", onclick: () => dialog.close() }, t("form.cancel"))));
  dialog.append(formEl);
  dialog.addEventListener("close", () => dialog.remove());
  formEl.addEventListener("change", sayMissing);
  formEl.addEventListener("input", sayMissing);
  formEl.addEventListener("submit", async event => {
    event.preventDefault();
    let values;
    try { values = form.value(); } catch (err) { if (err instanceof FormError) return form.showErrors(err.errors); throw err; }
    submit.disabled = true;
    try {
      await api.post(`/v1/characters/${character.id}/level-ups`, values);
      upsertCharacter(await api.get(`/v1/characters/${character.id}`));
      dialog.close();
    } catch (err) {
      const unplaced = form.showErrors(err.problem?.errors || [], err.problem);
      status.textContent = `${describe(err)}${unplaced.length ? ` — ${unplaced.join(" ; ")}` : ""}`;
    } finally {
      submit.disabled = false;
    }
  });
  document.body.append(dialog);
  sayMissing();  // in the page: the controls' labels found
  dialog.showModal();
  dialog.querySelector("input, select, textarea")?.focus();
}

/** Whether a level-up field applies at `level`: its `x-level` `{min, max?}` (no max: from min on), as
 * the server's schema says it; a field without one applies at every level. */
function levelFits(prop, level) {
  const at = prop["x-level"];
  if (!at) return true;
  return level >= at.min && (at.max === undefined || level <= at.max);
}

/** The ruleset's character actions (`operations.character_actions`: type -> {gm_only, schema}) the
 * viewer may perform on this character: every one for the GM, the others' for its owner. */
function ruleActions(character) {
  const all = Object.entries(state.ruleset?.operations?.character_actions || {});
  if (isGm()) return all;
  return controls(character) ? all.filter(([, action]) => !action.gm_only) : [];
}

const nameOfCharacter = id => state.characters.get(id)?.name ?? null;

/** A rule action on a character (`POST /v1/characters/{id}/actions`: AS-C6 first aid, AS-H4 cancel
 * damage…): the action chosen by name, its form built from the catalogue's body schema, the dice
 * rolled by the server or entered at the table; the result (the log entry) stays shown, the card
 * follows. */
export function openActionDialog(character, actions) {
  const titleId = "character-action-title";
  const dialog = h("dialog", { class: "sheet-dialog", "aria-labelledby": titleId });
  const type = select(actions.map(([kind]) => [kind, termLabel(kind)]), {});
  type.name = "action-type";
  const fields = h("div", { class: "action-fields" });
  const result = h("div", { class: "result", id: "character-action-result", role: "status", "aria-live": "polite" });
  const dice = h("div", { class: "dice-area" });
  const apply = h("button", { type: "submit" }, t("characters.actions.send"));
  const table = mayEnterDice() ? h("button", { type: "button", class: "secondary" }, t("test.table")) : null;
  let form = null;
  const build = () => {
    const schema = actions.find(([kind]) => kind === type.value)[1].schema;
    form = actionForm(schema, character);
    clear(fields, form.el);
    clear(result);
  };
  const formEl = h("form", { novalidate: true, id: "character-action" },
    h("h2", { id: titleId }, t("characters.actions.title", { name: character.name })),
    field(t("characters.actions.type"), type), fields,
    h("div", { class: "actions" }, apply, table,
      h("button", { type: "button", class: "secondary", onclick: () => dialog.close() }, t("ops.close"))), dice, result);
  dialog.append(formEl);
  dialog.addEventListener("close", () => dialog.remove());
  type.addEventListener("change", build);
  build();
  const path = `/v1/characters/${character.id}/actions`;
  const body = () => {
    try { return { ...(form.value() || {}), type: type.value }; } catch (err) {
      if (err instanceof FormError) { form.showErrors(err.errors); return null; }
      throw err;
    }
  };
  const fail = err => {
    const unplaced = form.showErrors((err.problem?.errors || []).filter(e => !(e.loc || []).includes("dice")), err.problem);
    clear(result, h("p", { class: "error" }, `${describe(err)}${unplaced.length ? ` — ${unplaced.join(" ; ")}` : ""}`));
  };
  const show = async entry => {
    if (!entry) return;
    clear(result, h("p", { class: "outcome", dataset: { entryId: entry.id || "" } }, entryNode(entry, nameOfCharacter),
      entry.hidden ? h("span", { class: "badge hidden-roll" }, t("log.hidden")) : null),
    entry.rolls?.length ? diceList(entry.rolls, nameOfCharacter) : null);
    upsertCharacter(await api.get(`/v1/characters/${character.id}`));
  };
  formEl.addEventListener("submit", async event => {
    event.preventDefault();
    const values = body();
    if (!values) return;
    apply.disabled = true;
    form.clearErrors();
    try { await show(await api.post(path, values)); } catch (err) { fail(err); } finally { apply.disabled = false; }
  });
  table?.addEventListener("click", async () => {
    const values = body();
    if (!values) return;
    clear(result);
    form.clearErrors();
    try {
      await show(await enterTableDice(dice, tableDice => api.post(path, { ...values, dice: tableDice }),
        { nameOf: nameOfCharacter, onError: fail }));
    } catch (err) { fail(err); }
  });
  document.body.append(dialog);
  dialog.showModal();
  type.focus();
}

/** The form of one character action: the characters it names (a healer, an ally) picked by name. */
function actionForm(schema, character) {
  const others = [...state.characters.values()].sort((a, b) => a.name.localeCompare(b.name, "fr"));
  const pick = ({ exclude = null } = {}) => ctx => {
    const named = others.filter(c => c.id !== exclude);
    const control = select(named.map(c => [c.id, c.name]), { empty: ctx.required ? undefined : t("form.none") });
    control.name = ctx.path.join(".");
    return { el: field(ctx.label, control), control, get: () => control.value || undefined };
  };
  const widgets = { healer_id: pick(), ally_id: pick({ exclude: character.id }), damage_id: blowPicker(character) };
  const omit = ["type", "seed", "dice", ...(isGm() ? [] : ["hidden"])];
  return new SchemaForm({ schema, root: schema, mode: "create", widgets, omit, value: {} });
}

/** The vitality (the first pool) a log entry took from this character: a fight's action (its changes)
 * or a character action (its effects); 0 when none. */
function lostBy(entry, character) {
  const pool = state.ruleset?.combat?.pools?.[0]?.name;
  const changes = entry.kind === "combat"
    ? (entry.changes || []).filter(c => c.character_id === character.id && c.field === pool)
    : entry.character_id === character.id && entry.effects?.[pool] ? [entry.effects[pool]] : [];
  return changes.reduce((sum, c) => sum + (typeof c.before === "number" && typeof c.after === "number"
    ? Math.max(0, c.before - c.after) : 0), 0);
}

/** AS-H4's `damage_id`: the blow already applied, picked among the character's latest log entries
 * that took its vitality (each by its line), read once the form is drawn. */
function blowPicker(character) {
  return ctx => {
    const control = select([], { empty: t("form.none") });
    control.name = ctx.path.join(".");
    control.dataset.state = "loading";
    api.get(`/v1/campaigns/${state.campaign.id}/rolls`, { character_id: character.id, limit: 30 }).then(page => {
      for (const entry of page.items) {
        const lost = lostBy(entry, character);
        if (lost > 0) {
          control.append(h("option", { value: entry.id },
            t("characters.actions.blow", { line: entryNode(entry, nameOfCharacter).textContent, n: num(lost) })));
        }
      }
    }, () => {}).finally(() => { control.dataset.state = "ready"; });
    return { el: field(ctx.label, control), control, get: () => control.value || undefined };
  };
}

export function renderCharacters(section) {
  const grid = h("div", { class: "cards", id: "character-cards" });
  const canCreate = isGm() || state.me?.player_id;
  // why the others' cards turned into status words (or lost their figures): the running fight's hp_visibility
  const note = h("p", { class: "notice visibility-note", id: "visibility-note", hidden: true });
  clear(section,
    h("div", { class: "section-head" },
      h("h2", { id: "characters-title" }, t("characters.title")),
      canCreate ? h("button", { type: "button", onclick: () => openCharacterDialog(null) }, t("characters.new")) : null),
    note, grid);
  on("encounter", encounter => {
    const visibility = encounter?.status === "active" && !isGm() ? encounter.options?.hp_visibility || "exact" : "exact";
    note.hidden = visibility === "exact";
    note.textContent = visibility === "exact" ? "" : t(visibility === "hidden" ? "encounter.visibility.note.hidden" : "encounter.visibility.note");
  });
  const draw = () => {
    const sorted = [...state.characters.values()].sort((a, b) =>
      // the caller's own first (`controls` is undefined for a card without its owner: a limited one, never NaN here)
      Number(Boolean(controls(b))) - Number(Boolean(controls(a))) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name, "fr"));
    clear(grid, sorted.length ? sorted.map(card) : h("p", { class: "hint" }, t("characters.none")));
  };
  draw();
  on("characters", draw);
  on("players", draw);
  on("luck", draw);
  loadLuck();
}

function sheetAccess(editing) {
  return (path, raw) => {
    if (isGm() || path[0] !== "sheet" || path.length !== 2) return "edit";
    if (!raw["x-rule-governed"]) return "edit";
    if (!editing) return raw["x-player-sets-at-creation"] ? "edit" : "hidden";
    return "readonly";
  };
}

export function openCharacterDialog(character) {
  const editing = Boolean(character);
  const ruleset = state.ruleset;
  const properties = {
    name: { type: "string", maxLength: 200 },
    ...(isGm() ? { kind: { enum: ["pc", "npc"], default: "pc" } } : {}),
    ...(isGm() ? { player_access: { enum: ["observer", "limited", "none"] } } : {}),
    ...(isGm() ? { player_id: { title: "Player" } } : {}),
    sheet: { ...ruleset.sheet_schema },
  };
  const widgets = {
    player_id: ctx => {
      const control = select(state.players.map(p => [p.id, p.name]), { empty: t("form.player.none"), value: ctx.value ?? "" });
      return { el: field(t("form.player"), control), control,
               get: () => (control.value ? control.value : editing ? null : undefined) };
    },
  };
  const suggestions = { stats: ruleset.stats || [], skills: ruleset.skills || [], race: Object.keys(ruleset.races || {}) };
  const form = new SchemaForm({
    schema: { type: "object", properties, required: ["name", "sheet"] },
    root: ruleset.sheet_schema,
    value: editing ? { name: character.name, kind: character.kind, player_id: character.player_id, player_access: character.player_access,
                      sheet: character.sheet } : { kind: "pc" },
    mode: editing ? "edit" : "create",
    widgets,
    suggest: suggestions,
    access: sheetAccess(editing),
  });
  const status = h("p", { class: "status", role: "status" });
  const title = editing ? t("characters.edit.title", { name: character.name }) : t("characters.new");
  const dialog = h("dialog", { class: "sheet-dialog", "aria-labelledby": "sheet-dialog-title" });
  const submit = h("button", { type: "submit" }, editing ? t("characters.save") : t("characters.create"));
  const formEl = h("form", { novalidate: true, method: "dialog" },
    h("h2", { id: "sheet-dialog-title" }, title),
    form.el, status,
    h("div", { class: "actions" }, submit,
      h("button", { type: "button", class: "secondary", onclick: () => dialog.close() }, t("form.cancel"))));
  dialog.append(formEl);
  dialog.addEventListener("close", () => dialog.remove());
  formEl.addEventListener("submit", async event => {
    event.preventDefault();
    status.textContent = "";
    let values;
    try {
      values = form.value();
    } catch (err) {
      if (err instanceof FormError) return form.showErrors(err.errors);
      throw err;
    }
    if (!isGm() && !editing) values.player_id = state.me.player_id;  // a player creates its own
    submit.disabled = true;
    try {
      const saved = editing ? await save(character, values) : await api.post(`/v1/campaigns/${state.campaign.id}/characters`, values);
      upsertCharacter(saved);
      dialog.close();
    } catch (err) {
      const errors = err.problem?.errors || [];
      const forbidden = (err.problem?.fields || []).map(f => ({ loc: ["sheet", f], msg: t("form.only.gm"), local: true }));
      const unplaced = form.showErrors([...errors, ...forbidden], err.problem);
      status.textContent = unplaced.length || (!errors.length && !forbidden.length)
        ? `${describe(err)}${unplaced.length ? ` — ${unplaced.join(" ; ")}` : ""}` : t("form.fix");
    } finally {
      submit.disabled = false;
    }
  });
  document.body.append(dialog);
  dialog.showModal();
  dialog.querySelector("input, select, textarea")?.focus();
}

async function save(character, values) {
  const body = {};
  for (const key of ["name", "kind", "player_id", "player_access"]) {
    if (values[key] !== undefined && values[key] !== character[key]) body[key] = values[key];
  }
  const patch = mergePatch(character.sheet, values.sheet || {});
  if (Object.keys(patch).length) body.sheet = patch;
  if (!Object.keys(body).length) return character;
  return api.patch(`/v1/characters/${character.id}`, body, { "If-Match": `"${character.version}"` });
}
