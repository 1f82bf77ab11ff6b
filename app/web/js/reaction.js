// A combatant's standing reaction (what it does when attacked: dodge, parry…): its owner sets it
// from its own page (`PATCH …/combatants/{id}` `{reaction}`, saved at once), and an attacker's form
// says the target's. Only whoever controls the target (the GM, its owner) may choose another one
// for one attack, as the server rules: the form offers that choice to no one else.

import { api, describe } from "./api.js";
import { h, field, select, listen, setError } from "./dom.js";
import { state, isGm } from "./store.js";
import { t, term } from "./i18n.js";

/** Whether the caller controls `c` (the GM, or its owner): who may choose its reaction. */
export const controls = c => Boolean(c) && (isGm() || (Boolean(c.player_id) && c.player_id === state.me.player_id));

/** The player's own combatants' standing reactions, each a choice saved at once, its result said beside
 * it; null when there is nothing to choose (no own combatant, one reaction only, the fight over). */
export function ownReactions(tracker, e) {
  const own = e.combatants.filter(c => !isGm() && c.player_id && c.player_id === state.me.player_id);
  const choices = state.ruleset?.combat?.actions?.attack ? state.ruleset.combat.reactions || [] : [];
  if (!own.length || e.status === "ended" || choices.length < 2) return null;
  tracker.reactionSaving ||= new Map();  // combatant id -> the value being saved (a redraw meanwhile keeps it)
  tracker.reactionSaved ||= new Map();   // combatant id -> the value its owner saved here
  return h("div", { class: "reactions", id: "own-reactions" }, own.map(c => {
    const value = tracker.reactionSaving.get(c.id) ?? c.reaction ?? "";
    const control = select(choices.map(r => [r, term(r)]), { value });
    control.id = `reaction-${c.id}`;  // a stable id: the redraw patches this very select
    const said = h("p", { class: "hint reaction-said", id: `reaction-said-${c.id}`, role: "status" },
      tracker.reactionSaved.get(c.id) === c.reaction && !tracker.reactionSaving.has(c.id)
        ? t("encounter.reaction.saved", { name: term(c.reaction) }) : "");
    listen(control, "change", event => saveReaction(tracker, e.id, c, event.currentTarget));
    const box = field(t("encounter.reaction.of", { name: c.name }), control);
    box.dataset.combatantId = c.id;
    box.append(said);
    return box;
  }));
}

async function saveReaction(tracker, encounterId, c, live) {
  const value = live.value;  // the select in the page (`patch` keeps it), not this drawing's
  tracker.reactionSaving.set(c.id, value);
  setError(live, "");
  try {
    await api.patch(`/v1/encounters/${encounterId}/combatants/${c.id}`, { reaction: value });
    tracker.reactionSaved.set(c.id, value);
  } catch (err) {
    tracker.reactionSaved.delete(c.id);
    setError(live, describe(err));
  } finally {
    if (tracker.reactionSaving.get(c.id) === value) tracker.reactionSaving.delete(c.id);
  }
  await tracker.refresh().catch(() => {});  // the fight as the server has it now (a refusal: as it was)
}

/** The attack form's `reaction` field: a line saying the target's standing reaction, and for a caller
 * who controls the target a choice of another one for this attack (left empty: the standing one).
 * `target()` is the combatant chosen as target in the fight as last read; `show()` says it again. */
export function reactionField(ctx, target) {
  const options = ctx.schema.enum ?? (ctx.schema.const !== undefined ? [ctx.schema.const] : []);
  if (options.length < 2) return { el: null, get: () => undefined, show: () => {} };  // nothing to choose
  const line = h("p", { class: "target-reaction", "aria-live": "polite" });
  const control = select(options.map(r => [r, term(r)]), { empty: t("encounter.reaction.standing") });
  control.name = ctx.path.join(".");
  const choice = field(t("encounter.reaction.override"), control);
  const show = () => {
    const c = target();
    const text = c ? t("encounter.target.reaction", { name: term(c.reaction) }) : "";
    // only what changed (a read that changes nothing makes no mutation)
    if (line.textContent !== text) line.textContent = text;
    if (line.hidden !== !c) line.hidden = !c;
    if (choice.hidden !== !controls(c)) choice.hidden = !controls(c);
    if (choice.hidden && control.value) control.value = "";  // another's target: its standing reaction, never a choice
  };
  show();
  return { el: h("div", { class: "reaction-field" }, line, choice), control, show,
           get: () => (choice.hidden ? undefined : control.value || undefined) };
}
