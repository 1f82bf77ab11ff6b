// "Enter table dice": ask the API which die it needs next (its 422 `needed` names it),
// one input per die, in the order the rule consumes them, until the request goes through.

import { h, clear, field, setError, uid } from "./dom.js";
import { describe } from "./api.js";
import { t } from "./i18n.js";
import { purposeWord } from "./format.js";

const FACES = die => Number(String(die).replace(/^\d*d/, "")) || null;

/**
 * container: where the dice inputs go; send(dice) → Promise (the API call with `dice`);
 * nameOf(combatant id) → a name for `needed.by`. Resolves with send's result, or null if cancelled.
 */
export function enterTableDice(container, send, { nameOf = () => null, onError } = {}) {
  const dice = [];
  const list = h("ol", { class: "dice-entry", "aria-label": t("dice.table") });
  const status = h("p", { class: "status", role: "status" });
  const box = h("div", { class: "dice-box" }, h("p", { class: "hint" }, t("dice.intro")), list, status);
  clear(container, box);
  let finish;
  const done = new Promise(resolve => { finish = resolve; });

  async function attempt() {
    try {
      const result = await send([...dice]);
      clear(container);
      finish(result);
    } catch (err) {
      const needed = err.status === 422 && err.problem?.needed;
      if (needed) return ask(needed);
      if (err.status === 422 && dice.length && (err.problem.errors || []).some(e => (e.loc || []).includes("dice"))) {
        // a value outside its die: take it back, show why next to it
        dice.pop();
        const input = list.lastElementChild?.querySelector("input");
        if (input) { input.disabled = false; focusInPlace(input); setError(input, describe(err)); reopen(input); return; }
      }
      if (onError) { clear(container); onError(err); }  // the caller says why, once
      else { status.textContent = describe(err); clear(container, status); }  // no die left to enter: the reason stays
      finish(null);
    }
  }

  function reopen(input) {
    const li = input.closest("li");
    const button = li.querySelector("button[type=submit]");
    if (button) button.disabled = false;
    const cancel = li.querySelector("button.cancel");
    if (cancel) cancel.hidden = false;  // a wrong die: the entry can still be abandoned
  }

  function ask(needed) {
    const who = needed.by ? nameOf(needed.by) : null;
    const base = t("dice.for", { die: needed.die, purpose: purposeWord(needed.purpose) });
    const label = who ? t("dice.by", { label: base, who }) : base;
    const faces = FACES(needed.die);
    const input = h("input", { type: "number", min: 1, max: faces, step: 1, id: uid("die"), inputmode: "numeric",
                               dataset: { die: needed.die, purpose: needed.purpose } });
    const sendButton = h("button", { type: "submit" }, t("dice.send"));
    const cancel = h("button", { type: "button", class: "secondary cancel", onclick: () => { clear(container); finish(null); } }, t("dice.cancel"));
    const form = h("form", { class: "die-form", novalidate: true }, field(label, input), sendButton, cancel);
    form.addEventListener("submit", event => {
      event.preventDefault();
      const value = Number(input.value);
      if (!input.value.trim() || !Number.isInteger(value)) return setError(input, faces ? t("dice.range", { faces }) : t("dice.whole"));
      setError(input, "");
      input.disabled = true;
      sendButton.disabled = true;
      cancel.hidden = true;
      dice.push(value);
      attempt();
    });
    list.append(h("li", {}, form));
    focusInPlace(input);
  }

  attempt();
  return done;
}

/** Focus without moving the page, unless the control is out of sight (then only as far as needed). */
function focusInPlace(control) {
  control.focus({ preventScroll: true });
  const box = control.getBoundingClientRect();
  if (box.top < 0 || box.bottom > window.innerHeight) control.scrollIntoView({ block: "nearest" });
}
