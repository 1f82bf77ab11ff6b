// Results, log entries and fight actions as readable lines, built from their structured
// fields (rule ids, figures, outcomes) in the page's language — never from the server's
// English `what` text. A step's rule id goes in a `.rule-id` span, shown by a "?" toggle.

import { h } from "./dom.js";
import { t, term, num, signed, outcomeWord, timeText, lang, sep } from "./i18n.js";

export const outcomeWords = outcomeWord;

export function outcomeClass(outcome) {
  if (!outcome) return "";
  return String(outcome).includes("success") ? "good" : String(outcome).includes("failure") ? "bad" : "";
}

const PURPOSES = { fr: { test: "test", attack: "attaque", dodge: "esquive", parry: "parade", defense: "défense",
  damage: "dégâts", karma: "karma", initiative: "initiative", absorb: "encaissement", heroism: "héroïsme",
  tiebreak: "départage", advantage: "avantage", perception: "perception" } };

/** A die's purpose ("damage", "karma") in the page's words. */
export const purposeWord = purpose => PURPOSES[lang]?.[purpose] ?? term(purpose);

export function dieText(roll, nameOf = () => null) {
  const who = roll.by ? nameOf(roll.by) : null;
  const purpose = [roll.purpose ? purposeWord(roll.purpose) : null, who].filter(Boolean).join(", ");
  return `${roll.die} ${num(roll.value)}${purpose ? ` (${purpose})` : ""}`;
}

/** The dice of a result as a list: each die, its value and its purpose. */
export function diceList(rolls, nameOf) {
  return h("ul", { class: "dice", "aria-label": t("dice.label") },
    (rolls || []).map(roll => h("li", { class: "die" },
      h("span", { class: "die-face" }, `${roll.die}`), " ", h("strong", {}, num(roll.value)),
      roll.purpose || roll.by ? h("span", { class: "die-purpose" }, ` ${dieText(roll, nameOf).split(" ").slice(2).join(" ")}`) : null)));
}

function effectsText(effects) {
  return Object.entries(effects || {})
    .filter(([, e]) => e && typeof e === "object" && "before" in e && "after" in e && e.before !== e.after)
    .map(([name, e]) => `${term(name)} ${num(e.before)} → ${num(e.after)}`).join(", ");
}

/** A test's figures in the ruleset's terms: score against target, success level, degree, effects. */
export function testLine(entry) {
  const what = entry.stat || entry.skill;
  const figures = [];
  if (entry.natural !== null && entry.natural !== undefined) {
    figures.push(entry.score !== entry.natural && entry.score !== null && entry.score !== undefined
      ? `${num(entry.natural)} → ${num(entry.score)}` : `${num(entry.natural)}`);
  } else if (entry.score !== null && entry.score !== undefined) figures.push(num(entry.score));
  if (entry.target !== null && entry.target !== undefined) figures.push(t("line.vs", { n: num(entry.target) }));
  let line = `${what ? term(what) : t("line.test")}${sep()}${figures.join(" ")} — ${outcomeWords(entry.outcome)}`;
  if (entry.success_level !== null && entry.success_level !== undefined) line += `, ${t("line.level", { n: signed(entry.success_level) })}`;
  if (entry.degree) line += `, ${t("line.degree", { name: term(entry.degree) })}`;
  const effects = effectsText(entry.effects);
  if (effects) line += ` (${effects})`;
  return line;
}

const colon = sep;

/** A step's name: the rulebook's word for what it does, from its rule id and fields (not its English `what`). */
const STEP_WORDS = {
  fr: {
    "attack test": "test d'attaque", "cooperating attack test": "test d'attaque en coopération",
    "dodge test": "test d'esquive", "defense test": "test de défense", "dodge: confrontation": "esquive : confrontation",
    "HAB test": "test d'HAB", "open perception test": "test de perception", "damage": "dégâts",
    "protection": "protection", "absorb: armour": "encaissement : armure", "hp": "PV", "vitality": "vitalité",
    "down": "hors de combat", "down: 0 HP": "hors de combat : 0 PV", "down: skipped": "hors de combat : passé",
    "above 0 HP: no longer down": "au-dessus de 0 PV : de retour", "wakes up": "se réveille",
    "condition added": "état ajouté", "condition removed": "état retiré", "condition ends": "fin de l'état",
    "turn starts": "début du tour", "turn ends": "fin du tour", "joins the fight": "rejoint le combat", "new round": "nouveau round",
    "critical success": "réussite critique", "critical failure: a miss": "échec critique : raté",
    "the attack misses": "l'attaque rate", "damage halved, rounded up": "dégâts divisés par deux (arrondi au-dessus)",
    "critical failure of the dodge: damage doubled": "échec critique de l'esquive : dégâts doublés",
    "critical dodge: a free attack": "esquive critique : une attaque gratuite",
    "unperceived attack: no defense": "attaque non perçue : pas de défense",
    "mal en point": "mal en point", "opposition": "opposition", "tie": "égalité",
    "tie: 1d6 roll-off": "égalité : départage au d6", "tie: d20 roll-off, highest first": "égalité : départage au d20",
    "tie: d100 rerolls, lowest first": "égalité : relance au d100", "effective agilite": "agilité effective",
    "initiative = 10 + DEX": "initiative = 10 + DEX", "heroism spent: a 4th die": "héroïsme dépensé : un 4e dé",
    "Illumination acts first": "Illumination : agit en premier", "Sépulcrale backlash: acts last": "contre-coup de la Sépulcrale : agit en dernier",
    "Illumination backlash: cannot act": "contre-coup de l'Illumination : ne peut pas agir",
    "backlash ends": "fin du contre-coup", "backlash: its next 2 turns": "contre-coup : ses 2 prochains tours",
    "revealed on its first turn": "révélé à son premier tour", "primes and penalties": "primes et pénalités",
    "pending modifier consumed": "modificateur en attente consommé", "does not act this round": "n'agit pas ce round",
    "dies at the end of the round": "meurt à la fin du round", "nobody can act": "personne ne peut agir",
    "group of extras: one test": "groupe de figurants : un seul test",
    "cooperation: the best result leads": "coopération : le meilleur résultat l'emporte",
    "critical success: an extra action before round 1": "réussite critique : une action de plus avant le round 1",
    "critical failure: acts only from round 2": "échec critique : n'agit qu'à partir du round 2",
    "provocation lapses: its turn ended": "fin de la provocation",
    "provoked: this turn's attacks aim at its provoker": "provoqué : ses attaques visent son provocateur",
    "prudence / danger on this defense test": "prudence / danger sur ce test de défense",
    "acted with others this round: no turn of its own left": "a agi avec d'autres ce round : plus de tour à lui",
    "character deleted since: not restored": "personnage supprimé depuis : non restauré",
    "combatant removed since: not restored": "combattant retiré depuis : non restauré",
    "NPC copy deleted": "copie de PNJ supprimée",
    "the fight ends: no backlash after it": "fin du combat : pas de contre-coup",
    "turn order rules off (campaign option): the GM's order": "ordre du tour du MJ (option de campagne)",
    "Apocalypse: Revive never fired: dies and comes back at 50% hp_max":
      "Apocalypse : la Renaissance n'a pas joué : meurt et revient à 50 % des PV max",
    "Revive: a fatal blow leaves 50% of hp_max instead (once)": "Renaissance : un coup fatal laisse 50 % des PV max (une fois)",
    "counter-attack available": "contre-attaque possible", "free attack": "attaque gratuite",
    "max move": "déplacement max", "move": "déplacement",
    "placed (movement rules off: campaign option)": "placé (règles de déplacement désactivées : option de campagne)",
    "provocation lapses: the provoker is down or out of the fight": "fin de la provocation : le provocateur est hors de combat ou parti",
    "provoked: attacks its provoker": "provoqué : attaque son provocateur",
    "the target moved out of reach in this same slot: the attack fails": "la cible s'est mise hors de portée dans ce même créneau : l'attaque échoue",
    "advantage: an extra action each round while the posture lasts": "avantage : une action de plus par round tant que dure la posture",
    "automatic defence (d10 <= 7)": "défense automatique (d10 ≤ 7)",
    "heroism spent: the action resolved again with new dice": "héroïsme dépensé : l'action rejouée avec de nouveaux dés",
    "provocation: its next offensive action aims at the Sépulcrale": "provocation : sa prochaine action offensive vise la Sépulcrale",
    "back in the fight": "de retour dans le combat", "condition ticks": "état : un round de moins",
    "dodge": "esquive", "parry": "parade", "riposte": "riposte", "counter-attack": "contre-attaque",
    "heal": "soin", "dash: agilite test": "sprint : test d'agilité",
    "Final Skill": "compétence finale",
    "Final Skill test (critical failures count as failures)": "test de compétence finale (les échecs critiques sont des échecs)",
    no_defence_same_slot: "ni esquive ni parade contre une attaque du même créneau parallèle",  // by the server's key
    "one shared turn: the others' own turns of this round pass": "un tour partagé : les autres passent leur propre tour de ce round",
  },
};

/** A step's key: the server's `key` when it sends one, else its `what` as a snake_case ASCII word
 * ("down: 0 HP" → "down_0_hp"): the page's words are looked up by key, not by the English text. */
export const stepKey = step => step.key || String(step.what || "").normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
  .toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_+|_+$/g, "");

const STEP_KEYS = Object.fromEntries(Object.entries(STEP_WORDS).map(([language, words]) =>
  [language, Object.fromEntries(Object.entries(words).map(([what, word]) => [stepKey({ what }), word]))]));

/** The steps whose `what` names a state, a posture or a number: their words around it. */
const STEP_PATTERNS = {
  fr: [
    [/^(.+): counted in the fight$/, m => `${term(m[1])} : compté dans le combat`],
    [/^no longer (.+)$/, m => `n'est plus ${term(m[1])}`],
    [/^(.+): a round less$/, m => `${term(m[1])} : un round de moins`],
    [/^(.+): it does not perceive$/, m => `${term(m[1])} : ne perçoit pas`],
    [/^extra action (\d+)$/, m => `action supplémentaire ${num(Number(m[1]))}`],
    [/^the fight ends: leaves (.+)$/, m => `fin du combat : quitte ${term(m[1])}`],
    [/^leaves (.+)$/, m => `quitte ${term(m[1])}`],
    [/^enters (.+)$/, m => `entre en ${term(m[1])}`],
    [/^no dodge nor parry in (.+)$/, m => `ni esquive ni parade en ${term(m[1])}`],
    [/^an (\w+) attack: no (.+)$/, m => `attaque ${term(m[1])} : pas de ${term(m[2])}`],
    [/^(.+) posture$/, m => `posture ${term(m[1])}`],
  ],
};

/** The rulebook's words for a step in the page's language (null: none known), by its key. */
export function stepWord(step) {
  const known = STEP_KEYS[lang]?.[stepKey(step)];
  if (known) return known;
  const what = String(step.what || "");
  for (const [pattern, words] of STEP_PATTERNS[lang] || []) {
    const m = what.match(pattern);
    if (m) return words(m);
  }
  return null;
}

function stepName(step) {
  const what = step.what ? String(step.what) : "";
  if (lang === "en" && what) return what;
  const known = stepWord(step);
  if (known) return known;
  if (what && /^[a-z_]+$/.test(what) && term(what) !== what.replaceAll("_", " ")) return term(what);  // "dodge" → esquive
  if (step.condition || step.name) return term(step.condition || step.name);
  if (step.resource) return term(step.resource);
  return "";  // the rule id says which rule it is
}

const QUIET = new Set(["rule", "what", "slot", "override", "locked", "karma_used"]);

function stepFigures(step) {
  const bits = [];
  const roll = step.natural ?? step.roll ?? (Array.isArray(step.dice) ? step.dice.join("+") : undefined);
  const against = step.target ?? step.percentage ?? step.defense;
  if (roll !== undefined && roll !== null) {
    let figure = typeof roll === "number" ? num(roll) : `${roll}`;
    const total = step.score ?? (step.expression ? undefined : step.total);
    if (total !== undefined && total !== null && String(total) !== String(roll)) figure += ` = ${num(total)}`;
    if (against !== undefined && against !== null && typeof against !== "object") figure += ` ${t("line.vs", { n: num(against) })}`;
    bits.push(figure);
  }
  if (step.outcome) bits.push(outcomeWords(step.outcome));
  if (step.hit === true) bits.push(t("line.hit"));
  if (step.hit === false) bits.push(t("line.miss"));
  if (step.winner) bits.push(t("line.wins", { name: step.winner }));
  if (step.expression) {
    const raw = step.raw ?? step.weapon_roll;
    let dmg = `${step.expression}${raw !== undefined ? ` = ${num(raw)}` : ""}`;
    if (step.multiplier !== undefined && step.multiplier !== 1) dmg += ` ×${num(step.multiplier)}`;
    const final = step.total ?? step.damage;
    if (final !== undefined && String(final) !== String(raw)) dmg += ` = ${num(final)}`;
    bits.push(dmg);
  } else if (typeof step.damage === "number" && roll === undefined) {
    bits.push(t("line.damage", { n: num(step.damage) }));
  }
  const pool = step.resource ? `${term(step.resource)} ` : "";
  if (step.hp && typeof step.hp === "object") bits.push(`${term("hp")} ${num(step.hp.before)} → ${num(step.hp.after)}`);
  else if (typeof step.before === "number" && typeof step.after === "number") bits.push(`${pool}${num(step.before)} → ${num(step.after)}`);
  else if (pool && typeof step.after === "number") bits.push(`${pool}→ ${num(step.after)}`);
  if (step.posture && typeof step.posture === "string") bits.push(t("encounter.posture", { name: term(step.posture) }));
  if (step.rounds_left !== undefined && typeof step.rounds_left === "number") bits.push(`${num(step.rounds_left)} r.`);
  if (!bits.length) {  // a step of its own kind: its first figures as they are
    for (const [key, value] of Object.entries(step)) {
      if (bits.length >= 3 || QUIET.has(key) || key.endsWith("_id")) continue;
      if (typeof value === "number") bits.push(`${term(key)} ${num(value)}`);
      else if (typeof value === "boolean" && value) bits.push(term(key));
    }
  }
  return bits;
}

/** One step as nodes: [rule id] who — name: figures. */
export function stepNode(step, nameOf) {
  const who = step.combatant_id ? nameOf(step.combatant_id) : null;
  const name = stepName(step);
  const bits = stepFigures(step);
  const lead = [who, name].filter(Boolean).join(" — ");
  const text = bits.length ? (lead ? `${lead}${colon()}${bits.join(", ")}` : bits.join(", ")) : lead;
  const rule = step.rule && /^[A-Z]{2}-/.test(step.rule) ? step.rule : null;
  if (!text && !rule) return null;
  return h("span", { class: "step", dataset: rule ? { rule } : {} },
    rule ? h("span", { class: "rule-id" }, `[${rule}] `) : null, text || rule);
}

const HEADS = { next_turn: "line.next_turn", start: "line.start", revert: "line.revert", end: "line.end" };

/** The head of an action: who does what to whom. */
export function actionHead(action, nameOf) {
  if (HEADS[action.type]) return t(HEADS[action.type]);
  const actor = action.actor_id ? nameOf(action.actor_id) : null;
  const target = action.target_id ? nameOf(action.target_id) : null;
  const verb = `verb.${action.type}`;
  const said = t(verb) === verb ? term(action.type) : t(verb);
  return [actor || t("line.gm"), said, target].filter(Boolean).join(" ");
}

/** One fight action as nodes: the head, then each step with its figures (rule ids in `.rule-id`). */
export function actionNode(action, nameOf) {
  const steps = (action.steps || []).map(step => stepNode(step, nameOf)).filter(Boolean);
  const parts = [actionHead(action, nameOf)];
  steps.forEach((step, i) => parts.push(i === 0 ? colon() : " ; ", step));
  return h("span", { class: "line" }, parts);
}

/** The same as text, rule ids left out (a status line, a title). */
export function actionLine(action, nameOf) {
  const node = actionNode(action, nameOf);
  node.querySelectorAll(".rule-id").forEach(el => el.remove());
  return node.textContent;
}

function value(v) {
  if (typeof v === "number") return num(v);
  if (typeof v === "string") return term(v);
  if (v === null || v === undefined) return "—";
  return JSON.stringify(v);
}

/** A roll-log entry in one line (nodes). */
export function entryNode(entry, nameOf) {
  const name = entry.character_id ? nameOf(entry.character_id) : "?";
  switch (entry.kind) {
    case "test":
      return h("span", { class: "line" }, `${name} — ${testLine(entry)}`);
    case "roll":
      return h("span", { class: "line" }, `${entry.character_id ? `${name} — ` : ""}${entry.expression} = ${num(entry.total)}${
        entry.purpose ? ` (${entry.purpose})` : ""}`);
    case "combat":
      return actionNode(entry, nameOf);
    case "sheet_edit": {
      const fields = (entry.fields || entry.changes || []);
      const list = Array.isArray(fields)
        ? fields.map(f => `${term(f.field)} ${value(f.before)} → ${value(f.after)}`)
        : Object.entries(fields).map(([k, f]) => `${term(k)} ${value(f.before)} → ${value(f.after)}`);
      return h("span", { class: "line" }, `${name} — ${t("log.sheet.edit", { list: list.join(", ") })}`);
    }
    default: {
      const who = entry.character_id ? `${name} — ` : "";
      const outcome = entry.outcome ? ` — ${outcomeWords(entry.outcome)}` : "";
      const kind = t(`log.kind.${entry.kind}`);
      return h("span", { class: "line" }, `${who}${kind === `log.kind.${entry.kind}` ? term(entry.kind) : kind}${
        entry.type ? ` ${term(entry.type)}` : ""}${outcome}`);
    }
  }
}

export const timeOf = timeText;
