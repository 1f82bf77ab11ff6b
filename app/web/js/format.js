// Results, log entries and fight actions as readable lines.

import { h, humanize } from "./dom.js";

const OUTCOME_WORDS = {
  super_critical_success: "super-critical success",
  critical_success: "critical success",
  success: "success",
  failure: "failure",
  critical_failure: "critical failure",
  super_critical_failure: "super-critical failure",
};

export const outcomeWords = outcome => OUTCOME_WORDS[outcome] || humanize(outcome);

export function outcomeClass(outcome) {
  if (!outcome) return "";
  return String(outcome).includes("success") ? "good" : String(outcome).includes("failure") ? "bad" : "";
}

export function dieText(roll, nameOf = () => null) {
  const who = roll.by ? nameOf(roll.by) : null;
  const purpose = [roll.purpose, who].filter(Boolean).join(", ");
  return `${roll.die} ${roll.value}${purpose ? ` (${purpose})` : ""}`;
}

/** The dice of a result as a list: each die, its value and its purpose. */
export function diceList(rolls, nameOf) {
  return h("ul", { class: "dice", "aria-label": "Dice" },
    (rolls || []).map(roll => h("li", { class: "die" },
      h("span", { class: "die-face" }, `${roll.die}`), " ", h("strong", {}, String(roll.value)),
      roll.purpose || roll.by ? h("span", { class: "die-purpose" }, ` ${dieText(roll, nameOf).split(" ").slice(2).join(" ")}`) : null)));
}

function effectsText(effects) {
  return Object.entries(effects || {})
    .filter(([, e]) => e && typeof e === "object" && "before" in e && "after" in e && e.before !== e.after)
    .map(([name, e]) => `${humanize(name)} ${e.before} → ${e.after}`).join(", ");
}

/** A test's figures in the ruleset's terms: score against target, success level, degree, effects. */
export function testLine(entry) {
  const what = entry.stat || entry.skill || "test";
  const figures = [];
  if (entry.natural !== null && entry.natural !== undefined) {
    figures.push(entry.score !== entry.natural && entry.score !== null ? `${entry.natural} → ${entry.score}` : `${entry.natural}`);
  } else if (entry.score !== null && entry.score !== undefined) figures.push(`${entry.score}`);
  if (entry.target !== null && entry.target !== undefined) figures.push(`vs ${entry.target}`);
  let line = `${humanize(what)}: ${figures.join(" ")} — ${outcomeWords(entry.outcome)}`;
  if (entry.success_level !== null && entry.success_level !== undefined) line += `, level ${signed(entry.success_level)}`;
  if (entry.degree) line += `, degree ${humanize(entry.degree)}`;
  const effects = effectsText(entry.effects);
  if (effects) line += ` (${effects})`;
  return line;
}

const signed = n => (n > 0 ? `+${n}` : `${n}`);

const VERBS = {
  attack: "attacks", heal: "heals", damage: "damages", condition: "changes a condition of", move: "moves",
  dash: "dashes", posture: "takes a posture", final_skill: "uses the final skill",
};

/** One fight action as a line: who does what to whom, then each step with its figures. */
export function actionLine(action, nameOf) {
  const actor = action.actor_id ? nameOf(action.actor_id) : null;
  const target = action.target_id ? nameOf(action.target_id) : null;
  let head;
  if (action.type === "next_turn") head = "Next turn";
  else if (action.type === "start") head = "Initiative rolled";
  else if (action.type === "revert") head = "Undo";
  else head = [actor || "GM", VERBS[action.type] || humanize(action.type), target].filter(Boolean).join(" ");
  const steps = (action.steps || []).map(step => stepText(step, nameOf)).filter(Boolean);
  return steps.length ? `${head}: ${steps.join("; ")}` : head;
}

const QUIET = new Set(["rule", "what", "slot", "override", "locked", "karma_used"]);

export function stepText(step, nameOf) {
  const who = step.combatant_id ? nameOf(step.combatant_id) : null;
  const bits = [];
  const roll = step.natural ?? step.roll ?? (Array.isArray(step.dice) ? step.dice.join("+") : undefined);
  const against = step.target ?? step.percentage ?? step.defense;
  if (roll !== undefined && roll !== null) {
    let figure = `${roll}`;
    const total = step.score ?? (step.expression ? undefined : step.total);
    if (total !== undefined && total !== null && String(total) !== String(roll)) figure += ` = ${total}`;
    if (against !== undefined && against !== null) figure += ` vs ${against}`;
    bits.push(figure);
  }
  if (step.outcome) bits.push(outcomeWords(step.outcome));
  if (step.hit === true) bits.push("hit");
  if (step.hit === false) bits.push("miss");
  if (step.winner) bits.push(`${step.winner} wins`);
  if (step.expression) {
    const raw = step.raw ?? step.weapon_roll;
    let dmg = `${step.expression}${raw !== undefined ? ` = ${raw}` : ""}`;
    if (step.multiplier !== undefined && step.multiplier !== 1) dmg += ` ×${step.multiplier}`;
    const final = step.total ?? step.damage;
    if (final !== undefined && String(final) !== String(raw)) dmg += ` = ${final}`;
    bits.push(dmg);
  } else if (step.damage !== undefined && typeof step.damage === "number" && roll === undefined) {
    bits.push(`${step.damage} damage`);
  }
  const pool = step.resource ? `${humanize(step.resource)} ` : "";
  if (step.hp && typeof step.hp === "object") bits.push(`hp ${step.hp.before} → ${step.hp.after}`);
  else if (typeof step.before === "number" && typeof step.after === "number") bits.push(`${pool}${step.before} → ${step.after}`);
  else if (pool && typeof step.after === "number") bits.push(`${pool}→ ${step.after}`);
  if (step.posture && step.what && String(step.what).includes("posture")) bits.push(humanize(step.posture));
  if (!bits.length) {  // a step of its own kind: its first figures as they are
    for (const [key, value] of Object.entries(step)) {
      if (bits.length >= 3 || QUIET.has(key) || key.endsWith("_id")) continue;
      if (typeof value === "number" || (typeof value === "string" && value.length < 30)) bits.push(`${humanize(key)} ${value}`);
    }
  }
  const what = humanize(step.what || step.rule || "");
  const lead = who ? `${who} — ${what}` : what;
  return bits.length ? `${lead}: ${bits.join(", ")}` : lead;
}

/** A roll-log entry in one line. */
export function entryLine(entry, nameOf) {
  switch (entry.kind) {
    case "test":
      return `${entry.character_id ? nameOf(entry.character_id) : "?"} — ${testLine(entry)}`;
    case "roll":
      return `${entry.character_id ? `${nameOf(entry.character_id)} — ` : ""}${entry.expression} = ${entry.total}${
        entry.purpose ? ` (${entry.purpose})` : ""}`;
    case "combat":
      return actionLine(entry, nameOf);
    case "sheet_edit": {
      const fields = (entry.fields || entry.changes || []);
      const list = Array.isArray(fields)
        ? fields.map(f => `${f.field}: ${JSON.stringify(f.before)} → ${JSON.stringify(f.after)}`)
        : Object.entries(fields).map(([k, f]) => `${k}: ${JSON.stringify(f.before)} → ${JSON.stringify(f.after)}`);
      return `${entry.character_id ? nameOf(entry.character_id) : "?"} — sheet edited by the GM: ${list.join(", ")}`;
    }
    default: {
      const name = entry.character_id ? `${nameOf(entry.character_id)} — ` : "";
      const outcome = entry.outcome ? ` — ${outcomeWords(entry.outcome)}` : "";
      return `${name}${humanize(entry.kind)}${entry.type ? ` ${humanize(entry.type)}` : ""}${outcome}`;
    }
  }
}

export function timeOf(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? "" : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}
