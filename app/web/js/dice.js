// "Enter table dice": ask the API which die it needs next (its 422 `needed` names it),
// one input per die, in the order the rule consumes them, until the request goes through.
// With a dice plan (`POST …/actions/plan`: every die of the action, in order), the caller's
// dice are asked all at once, the conditioned ones marked; the API's `needed` then says,
// where a conditioned die sits, whether it is wanted (so a value is never given to the wrong die).

import { h, clear, field, setError, uid } from "./dom.js";
import { describe } from "./api.js";
import { t } from "./i18n.js";
import { purposeWord } from "./format.js";

const FACES = die => Number(String(die).replace(/^\d*d/, "")) || null;

/** A die's label: "d100 pour attaque (Aiko)". */
function dieLabel(die, nameOf) {
  const who = die.by ? nameOf(die.by) : null;
  const base = t("dice.for", { die: die.die, purpose: purposeWord(die.purpose) });
  return who && who !== "?" ? t("dice.by", { label: base, who }) : base;
}

function dieInput(die) {
  return h("input", { type: "number", min: 1, max: FACES(die.die), step: 1, id: uid("die"), inputmode: "numeric",
                      dataset: { die: die.die, purpose: die.purpose } });
}

/** The value typed for a die, or an error message (empty: null, allowed when `optional`). */
function readDie(input, die, optional) {
  const faces = FACES(die.die);
  const raw = input.value.trim();
  if (!raw && optional) return { value: null };
  const value = Number(raw);
  if (!raw || !Number.isInteger(value) || value < 1 || (faces && value > faces)) {
    return { error: faces ? t("dice.range", { faces }) : t("dice.whole") };
  }
  return { value };
}

const sameDie = (a, b) => a.die === b.die && a.purpose === b.purpose && (!b.by || !a.by || a.by === b.by);

/**
 * container: where the dice inputs go; send(dice) → Promise (the API call with `dice`);
 * nameOf(combatant id) → a name for `needed.by`; plan: the plan's dice (`[{die, purpose, by,
 * entered_by, condition?}]`), asked at once. Resolves with send's result, or null if cancelled.
 */
export function enterTableDice(container, send, { nameOf = () => null, onError, plan = null } = {}) {
  const dice = [];
  const sent = [];    // the input each die sent came from (a planned one, or a one-by-one one)
  const planned = (plan || []).filter(d => d.entered_by === "caller");
  const list = h("ol", { class: "dice-entry", "aria-label": t("dice.table") });
  const status = h("p", { class: "status", role: "status" });
  const box = h("div", { class: "dice-box" }, h("p", { class: "hint" }, t(planned.length ? "dice.intro.plan" : "dice.intro")),
    list, status);
  clear(container, box);
  container.setAttribute("aria-busy", "true");  // until the request went through or was given up
  let finish;
  const done = new Promise(resolve => { finish = resolve; }).finally(() => container.removeAttribute("aria-busy"));
  let queue = null;   // the planned dice as typed: [{die, input, value}], sent in order
  let pos = 0;        // the next queued die not yet sent nor skipped

  async function attempt() {
    try {
      const result = await send([...dice]);
      clear(container);
      finish(result);
    } catch (err) {
      const needed = err.status === 422 && err.problem?.needed;
      if (needed) return queue && take(needed) ? attempt() : ask(needed);
      const index = err.problem?.code === "die_out_of_range" ? err.problem.index : dice.length - 1;
      if (err.status === 422 && dice.length && sent[index] && (err.problem.errors || []).some(e => (e.loc || []).includes("dice"))) {
        return wrong(sent[index], describe(err), index);  // a value outside its die: back to it, said next to it
      }
      if (onError) { clear(container); onError(err); }  // the caller says why, once
      else { status.textContent = describe(err); clear(container, status); }  // no die left to enter: the reason stays
      finish(null);
    }
  }

  /** The queued die the API asks for (conditioned ones before it were not needed): sent with those after
   * it up to the next conditioned one. False when the plan did not foresee it (then asked one by one). */
  function take(needed) {
    for (let j = pos; j < queue.length; j++) {
      const q = queue[j];
      if (sameDie(q.die, needed) && q.value !== null) {
        push(q);
        pos = j + 1;
        feed();
        return true;
      }
      if (!q.die.condition) break;  // a die every resolution takes is never skipped
    }
    queue = null;
    return false;
  }

  function push(q) {
    dice.push(q.value);
    sent.push(q.input);
  }

  /** The queued dice every resolution takes, up to the next conditioned one (the API says if that one is wanted). */
  function feed() {
    while (pos < queue.length && !queue[pos].die.condition) push(queue[pos++]);
  }

  function wrong(input, message, index) {
    dice.length = index;
    sent.length = index;
    const planForm = input.closest("form.dice-plan");
    if (planForm) {
      [...list.querySelectorAll("li.asked")].forEach(li => li.remove());  // asked after the plan's: asked again if needed
      queue = null;
      planForm.querySelectorAll("input, button").forEach(el => { el.disabled = false; el.hidden = false; });
    } else {
      input.disabled = false;
      reopen(input);
    }
    focusInPlace(input);
    setError(input, message);
  }

  function reopen(input) {
    const li = input.closest("li");
    const button = li.querySelector("button[type=submit]");
    if (button) button.disabled = false;
    const cancel = li.querySelector("button.cancel");
    if (cancel) cancel.hidden = false;  // a wrong die: the entry can still be abandoned
  }

  const cancelButton = () => h("button", { type: "button", class: "secondary cancel", onclick: () => { clear(container); finish(null); } },
    t("dice.cancel"));

  /** Every die of the plan the caller enters, at once, in the plan's order. */
  function askPlan() {
    const rows = planned.map(die => ({ die, input: dieInput(die) }));
    const form = h("form", { class: "dice-plan", novalidate: true },
      h("ol", { class: "planned" }, rows.map(({ die, input }) => h("li", { class: die.condition ? "conditioned" : "" },
        field(die.condition ? t("dice.if.needed", { label: dieLabel(die, nameOf) }) : dieLabel(die, nameOf), input,
          die.condition ? { hint: t("dice.condition") } : {})))),
      h("div", { class: "actions" }, h("button", { type: "submit" }, t("dice.send.all")), cancelButton()));
    form.addEventListener("submit", event => {
      event.preventDefault();
      let bad = null;
      queue = rows.map(({ die, input }) => {
        const read = readDie(input, die, Boolean(die.condition));
        setError(input, read.error || "");
        if (read.error && !bad) bad = input;
        return { die, input, value: read.value ?? null };
      });
      if (bad) { queue = null; return focusInPlace(bad); }
      form.querySelectorAll("input, button").forEach(el => { el.disabled = true; });
      form.querySelector("button.cancel").hidden = true;
      dice.length = 0;
      sent.length = 0;
      pos = 0;
      feed();
      attempt();
    });
    list.append(h("li", { class: "plan" }, form));
    focusInPlace(rows[0].input);
  }

  /** One die the API asks for (no plan, or one the plan did not foresee). */
  function ask(needed) {
    const input = dieInput(needed);
    const sendButton = h("button", { type: "submit" }, t("dice.send"));
    const cancel = cancelButton();
    const form = h("form", { class: "die-form", novalidate: true }, field(dieLabel(needed, nameOf), input), sendButton, cancel);
    form.addEventListener("submit", event => {
      event.preventDefault();
      const read = readDie(input, needed, false);
      if (read.error) return setError(input, read.error);
      setError(input, "");
      input.disabled = true;
      sendButton.disabled = true;
      cancel.hidden = true;
      dice.push(read.value);
      sent.push(input);
      attempt();
    });
    list.append(h("li", { class: "asked" }, form));
    focusInPlace(input);
  }

  if (planned.length) askPlan();
  else attempt();
  return done;
}

/** Focus without moving the page, unless the control is out of sight (then only as far as needed). */
function focusInPlace(control) {
  control.focus({ preventScroll: true });
  const box = control.getBoundingClientRect();
  if (box.top < 0 || box.bottom > window.innerHeight) control.scrollIntoView({ block: "nearest" });
}
