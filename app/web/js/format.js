// Results, log entries and fight actions as readable lines, built from their structured
// fields (rule ids, figures, outcomes) in the page's language — never from the server's
// English `what` text. A step's rule id goes in a `.rule-id` span, shown by a "?" toggle.

import { h } from "./dom.js";
import { t, term, num, signed, outcomeWord, timeText, lang, sep } from "./i18n.js";

export const outcomeWords = outcomeWord;

/** « publié »: a hidden roll the GM published, the time in its title (the roll log, the fight's history). */
export function publishedMark(entry) {
  return h("span", { class: "published-mark", title: t("log.published.title", { at: timeText(entry.published_at) }) },
    t("log.published"));
}

export function outcomeClass(outcome) {
  if (!outcome) return "";
  return String(outcome).includes("success") ? "good" : String(outcome).includes("failure") ? "bad" : "";
}

const PURPOSES = {
  fr: { test: "test", attack: "attaque", dodge: "esquive", parry: "parade", defense: "défense",
    damage: "dégâts", karma: "karma", initiative: "initiative", absorb: "encaissement", heroism: "héroïsme",
    tiebreak: "départage", advantage: "avantage", disadvantage: "désavantage", perception: "perception",
    level_up: "montée de niveau", chance_bonus: "bonus de chance", "bonus damage": "dégâts bonus",
    auto_defense: "défense automatique", asphyxia: "asphyxie", dying_rounds: "rounds de mourant",
    extra_actions: "actions supplémentaires", "initiative roll-off": "départage d'initiative",
    initiative_roll_off: "départage d'initiative", tie: "égalité", intuition: "intuition" },
  en: { level_up: "level up", chance_bonus: "chance bonus", initiative_roll_off: "initiative roll-off",
    extra_actions: "extra actions", dying_rounds: "dying rounds", auto_defense: "automatic defence" },
};

const ID = /^[0-9a-f]{32}$/;  // a combatant's id in a purpose ("tie:<id>"): the die's `by` names it already

/** A die's purpose ("damage", "karma", "level_up:agilite") in the page's words. */
export function purposeWord(purpose) {
  const [head, ...rest] = String(purpose ?? "").split(":").map(part => part.trim());
  const word = PURPOSES[lang]?.[head] ?? term(head);
  const what = rest.filter(part => part && !ID.test(part)).map(term);
  return what.length ? `${word}${sep()}${what.join(", ")}` : word;
}

/** A purpose worth saying: not the free roll's own ("roll", what a die is for when nothing is said). */
const saidPurpose = purpose => (purpose && purpose !== "roll" ? purposeWord(purpose) : null);

export function dieText(roll, nameOf = () => null) {
  const who = roll.by ? nameOf(roll.by) : null;
  const purpose = [saidPurpose(roll.purpose), who].filter(Boolean).join(", ");
  return `${roll.die} ${num(roll.value)}${purpose ? ` (${purpose})` : ""}`;
}

/** The dice of a result as a list: each die, its value and its purpose. */
export function diceList(rolls, nameOf) {
  return h("ul", { class: "dice", "aria-label": t("dice.label") },
    (rolls || []).map(roll => h("li", { class: "die" },
      h("span", { class: "die-face" }, `${roll.die}`), " ", h("strong", {}, num(roll.value)),
      saidPurpose(roll.purpose) || roll.by ? h("span", { class: "die-purpose" }, ` ${dieText(roll, nameOf).split(" ").slice(2).join(" ")}`) : null)));
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
// English: the page's own copy of each step's words (the texts the French table is keyed by), looked up
// by key as well, so a step the server rewords keeps the words this page knows
STEP_KEYS.en = {
  ...Object.fromEntries(Object.keys(STEP_WORDS.fr).filter(what => !/^[a-z0-9_]+$/.test(what) || !what.includes("_"))
    .map(what => [stepKey({ what }), what])),
  no_defence_same_slot: "no dodge nor parry against an attack of the same parallel slot",
  // a stat's id in the server's words: its English name
  effective_agilite: "effective agility", dash_agilite_test: "dash: agility test",
};

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
  const known = stepWord(step);
  if (known) return known;
  if (lang === "en" && what) return what;  // a step of a state's or a posture's name: its own words
  if (what && /^[a-z_]+$/.test(what) && term(what) !== what.replaceAll("_", " ")) return term(what);  // "dodge" → esquive
  if (step.condition || step.name) return term(step.condition || step.name);
  if (step.resource) return term(step.resource);
  return "";  // the rule id says which rule it is
}

const QUIET = new Set(["rule", "key", "what", "slot", "override", "locked", "karma_used"]);

// The French words of the steps' figures (their parameters' names) the generic fallback shows; a name not
// here is shown as « valeur N » in French, never as the server's English word.
const PARAMS = {
  fr: {
    actions: "actions", action_bonus: "bonus d'action", acts_last: "agit en dernier", agilite: "agilité",
    amount: "quantité", armor: "armure", asset_dice: "dés d'atout", attack: "attaque", attack_level: "niveau d'attaque",
    attack_score: "score d'attaque", automatic: "automatique", backlash_turns: "tours de contre-coup",
    base_move: "déplacement de base", bonus: "bonus", bonus_damage: "dégâts bonus", cannot_act: "ne peut pas agir",
    constant: "constante", critical: "critique", damage: "dégâts", damage_dice: "dés de dégâts",
    damage_multiplier: "multiplicateur de dégâts", danger_left: "danger restant", danger_tests: "tests de danger",
    defense: "défense", dies_in_rounds: "meurt dans (rounds)", difficulty: "difficulté", disadvantage: "désavantage",
    disadvantage_die: "dé de désavantage", distance: "distance", dodge_level: "niveau d'esquive", dodged: "esquivé",
    doubled_dice: "dés doublés", dying: "mourant", excess: "excédent", group_bonus: "bonus de groupe",
    halvings: "divisions par deux", heroism_die: "dé d'héroïsme", initiative: "initiative", karma: "karma",
    karma_die: "dé de karma", karma_locked: "karma bloqué", level: "niveau", max_move: "déplacement max",
    may_defend: "peut se défendre", members: "membres", modifier: "modificateur", moved: "parcouru",
    multiplier: "multiplicateur", natural: "dé", parallel: "en parallèle", penalties: "pénalités", penalty: "pénalité",
    percentage: "pourcentage", perception: "perception", posture_modifier: "modificateur de posture",
    previous_dodges: "esquives précédentes", primes: "primes", protection: "protection", prudence_left: "prudence restante",
    prudence_tests: "tests de prudence", range: "portée", rerolls: "relances", resistance: "résistance", result: "résultat",
    riposte_available: "riposte possible", round: "round", rounds_left: "rounds restants", score: "score",
    stat_value: "valeur de caractéristique", take_11: "prendre 11", taken: "subis", total: "total",
    turns_held: "tours tenus", turns_left: "tours restants", unconscious_rounds: "rounds inconscient", value: "valeur",
    volonte: "volonté", weapon_roll: "jet d'arme",
  },
};

/** A figure's name in the page's words (null: none known in French). */
function paramWord(name) {
  if (lang === "en") return term(name);
  return PARAMS.fr[name] ?? null;
}

/** Who won an opposition: a side ("attacker", "defender") in the page's words, else a combatant's name. */
function winnerWord(winner, nameOf) {
  const key = `line.winner.${winner}`;
  if (t(key) !== key) return t(key);
  return nameOf?.(winner) || term(winner);
}

/** The figures of the steps whose parameters say more than a number: in the page's sentences, by key. */
const KEYED = {
  posture_taken: step => [
    typeof step.damage_multiplier === "number" && step.damage_multiplier !== 1
      ? t("fig.damage.multiplier", { n: num(step.damage_multiplier) }) : null,
    step.may_defend === false ? t("fig.no.defence") : null],
  max_move: step => [t("fig.moved", { moved: num(step.moved), max: num(step.max_move) })],
  enters_special_posture: step => [
    typeof step.karma_locked === "number" ? t("fig.karma.locked", { n: num(step.karma_locked) }) : null,
    typeof step.advantage_die === "number" ? t("fig.advantage.die", { n: num(step.advantage_die) }) : null,
    typeof step.advantage === "string" ? term(step.advantage) : null],
};

function stepFigures(step, nameOf) {
  const keyed = KEYED[step.key];
  if (keyed) return keyed(step).filter(Boolean);
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
  if (step.winner) bits.push(t("line.wins", { name: winnerWord(step.winner, nameOf) }));
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
      const word = paramWord(key);
      if (typeof value === "number") bits.push(word ? `${word} ${num(value)}` : t("line.value", { n: num(value) }));
      else if (typeof value === "boolean" && value && word) bits.push(word);
    }
  }
  return bits;
}

/** One step as nodes: [rule id] who — name: figures. */
export function stepNode(step, nameOf) {
  const who = step.combatant_id ? nameOf(step.combatant_id) : null;
  const name = stepName(step);
  const bits = stepFigures(step, nameOf);
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

/** A sheet field's path ("stats.agilite", "hp_max") in the page's words: its last part. */
const fieldWord = path => term(String(path).split(".").pop());

/** What a level-up changed: « niveau 1 → 2 : agilité 70 → 79, PV max 100 → 118 ». */
export function levelUpText(entry) {
  const changes = (entry.changes || []).filter(c => c.field !== "level" && c.before !== c.after)
    .map(c => `${fieldWord(c.field)} ${value(c.before)} → ${value(c.after)}`);
  const level = entry.level && typeof entry.level === "object"
    ? t("log.level", { before: num(entry.level.before), after: num(entry.level.after) }) : t("log.kind.level_up");
  return changes.length ? `${level}${sep()}${changes.join(", ")}` : level;
}

/** A roll-log entry in one line (nodes). */
export function entryNode(entry, nameOf) {
  const name = entry.character_id ? nameOf(entry.character_id) : "?";
  switch (entry.kind) {
    case "test":
      return h("span", { class: "line" }, `${name} — ${testLine(entry)}`);
    case "roll":
      return h("span", { class: "line" }, `${entry.character_id ? `${name} — ` : ""}${entry.expression} = ${num(entry.total)}${
        saidPurpose(entry.purpose) ? ` (${saidPurpose(entry.purpose)})` : ""}`);
    case "level_up":
      return h("span", { class: "line" }, `${name} — ${levelUpText(entry)}`);
    case "combat":
      return actionNode(entry, nameOf);
    case "sheet_edit": {
      const fields = (entry.fields || entry.changes || []);
      const list = Array.isArray(fields)
        ? fields.map(f => `${fieldWord(f.field)} ${value(f.before)} → ${value(f.after)}`)
        : Object.entries(fields).map(([k, f]) => `${fieldWord(k)} ${value(f.before)} → ${value(f.after)}`);
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
