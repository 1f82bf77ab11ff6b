// Tiny DOM helpers: elements are built with textContent only (never innerHTML), so no
// name, sheet value or API message can inject markup.

import { num, term } from "./i18n.js";

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") listen(el, key.slice(2), value);
    else if (key === "style") el.style.cssText = value;  // CSSOM, which a CSP without inline styles allows
    else if (key === "value" || key === "checked" || key === "selected") {
      el[key] = value;
      (el.jdrProps ||= {})[key] = value;  // what the page said, told apart from what the user typed (`patch`)
    } else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

// An element's handlers given to `h` (or `listen`) sit in `el.jdrOn` behind one shared listener, so `patch`,
// keeping an element, hands it the handlers of its newer drawing (their closures see the newer data; an
// element they name is that drawing's, not the one in the page: read `event.currentTarget` instead).
function dispatch(event) { return this.jdrOn?.[event.type]?.call(this, event); }

export function listen(el, type, fn) {
  (el.jdrOn ||= {})[type] = fn;
  el.addEventListener(type, dispatch);
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Make `parent`'s children those of `children` (nodes or strings, as `clear` takes them) by patching
 * what is there in place: a node equal to its newer drawing is not touched at all, a changed one only
 * where it changed, so focus, hover, selection and a click in progress survive a redraw, and a redraw
 * that changes nothing makes no DOM mutation. Children are matched by key (`id`, `data-key`,
 * `data-combatant-id`, `data-action-id`), else in order by tag and class; a node given as itself (one
 * kept across redraws, like a form in progress) stays as it is, and one marked `whole` replaces its
 * older self rather than being patched into it. An input's value or a box's `checked` is set only when
 * the drawing's own value changed (never over what the user is typing). */
export function patch(parent, ...children) {
  const wanted = [];
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    wanted.push(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  const kept = new Set(wanted.filter(n => n.parentNode === parent));  // given as themselves: left as they are
  const old = [...parent.childNodes].filter(n => !kept.has(n));
  const byKey = new Map();
  for (const n of old) { const k = keyOf(n); if (k && !byKey.has(k)) byKey.set(k, n); }
  const loose = old.filter(n => !keyOf(n));
  const left = new Map();  // the unkeyed wanted nodes still to match, by kind: what an old node may still become
  for (const n of wanted) if (!kept.has(n) && !n.jdrWhole && !keyOf(n)) left.set(kindOf(n), (left.get(kindOf(n)) || 0) + 1);
  const taken = new Set();
  let at = 0;
  const plan = wanted.map(want => {
    if (kept.has(want) || want.jdrWhole) return want;
    const key = keyOf(want);
    if (key) {
      const match = byKey.get(key);
      if (match && !taken.has(match) && sameTag(match, want)) { taken.add(match); return [match, want]; }
      return want;
    }
    const kind = kindOf(want);
    left.set(kind, left.get(kind) - 1);
    let i = at;
    while (i < loose.length && (taken.has(loose[i]) || kindOf(loose[i]) !== kind)) i++;
    if (i >= loose.length && at < loose.length && !taken.has(loose[at]) && sameTag(loose[at], want) && !left.get(kindOf(loose[at]))) {
      i = at;  // same tag, another class, and no later drawing of that class: patched into this one
    }
    if (i >= loose.length) return want;
    taken.add(loose[i]);
    at = i + 1;
    return [loose[i], want];
  });
  for (const n of old) if (!taken.has(n)) n.remove();
  let cursor = parent.firstChild;
  for (const step of plan) {
    const node = Array.isArray(step) ? step[0] : step;
    if (Array.isArray(step)) morph(node, step[1]);
    if (node === cursor) cursor = cursor.nextSibling;
    else parent.insertBefore(node, cursor);
  }
  while (cursor) { const next = cursor.nextSibling; cursor.remove(); cursor = next; }
  return parent;
}

/** `node` is placed by `patch` as itself, never patched into an older node of the same key: a part with
 * a state of its own that its owner keeps (and copies over when it makes a new one). */
export function whole(node) {
  node.jdrWhole = true;
  return node;
}

function keyOf(n) {
  if (n.nodeType !== 1) return null;
  if (n.id) return `#${n.id}`;
  const d = n.dataset;
  return d.key ? `k:${d.key}` : d.combatantId ? `c:${d.combatantId}` : d.actionId ? `a:${d.actionId}` : null;
}
const kindOf = n => (n.nodeType === 1 ? `${n.tagName} ${n.getAttribute("class") || ""}` : `#${n.nodeType}`);
const sameTag = (a, b) => a.nodeType === b.nodeType && (a.nodeType !== 1 || a.tagName === b.tagName);

/** `from` (in the page) made like `to` (a newer drawing of it): its text, attributes, handlers,
 * declared values, and children (`patch`). */
function morph(from, to) {
  if (from.nodeType !== 1) {
    if (from.nodeValue !== to.nodeValue) from.nodeValue = to.nodeValue;
    return;
  }
  for (const { name, value } of [...to.attributes]) {
    if (from.getAttribute(name) === value) continue;
    if (name === "style") from.style.cssText = value;  // CSSOM: the page's CSP refuses a style attribute set as such
    else from.setAttribute(name, value);
  }
  for (const { name } of [...from.attributes]) if (!to.hasAttribute(name)) from.removeAttribute(name);
  if (from.jdrOn || to.jdrOn) {
    from.jdrOn = to.jdrOn;
    for (const type of Object.keys(to.jdrOn || {})) from.addEventListener(type, dispatch);  // (once per type)
  }
  if (from.jdrProps || to.jdrProps) {
    for (const [key, value] of Object.entries(to.jdrProps || {})) if (from.jdrProps?.[key] !== value) from[key] = value;
    from.jdrProps = to.jdrProps;
  }
  patch(from, [...to.childNodes]);
  if (from.tagName === "SELECT" && from.value !== to.value) from.value = to.value;
}

/** The wait (ms) before retry `attempt` (0: the first) of a failed read or a dropped stream: `first`
 * doubled at each failure, at most 8 s. `<html data-retry-ms="…">` makes it that many ms every time
 * instead: the browser tests set it (a test of retries need not wait seconds); the page never does. */
export function retryDelay(first, attempt) {
  const fixed = Number(document.documentElement.dataset.retryMs);
  return fixed > 0 ? fixed : Math.min(first * 2 ** attempt, 8000);
}

let counter = 0;
export const uid = (prefix = "f") => `${prefix}-${++counter}`;

/** A labelled control: `<div class="field"><label for>…</label>control<p class="error"></p></div>`. */
export function field(label, control, { hint } = {}) {
  const id = control.id || (control.id = uid("c"));
  const error = h("p", { class: "error", id: `${id}-error`, role: "alert", hidden: true });
  control.setAttribute("aria-describedby", error.id);
  const box = h("div", { class: control.type === "checkbox" ? "field check" : "field" });
  const labelEl = h("label", { for: id }, label);
  if (control.type === "checkbox") box.append(control, labelEl);
  else box.append(labelEl, control);
  if (hint) box.append(h("p", { class: "hint" }, hint));
  box.append(error);
  return box;
}

/** Show (or clear, with an empty message) the error paragraph of a control made by field(). */
export function setError(control, message) {
  const error = document.getElementById(`${control.id}-error`);
  if (!error) return;
  error.textContent = message || "";
  error.hidden = !message;
  if (message) control.setAttribute("aria-invalid", "true");
  else control.removeAttribute("aria-invalid");
}

export function select(options, { value, empty } = {}) {
  const el = h("select");
  if (empty !== undefined) el.append(h("option", { value: "" }, empty));
  for (const option of options) {
    const [v, label] = Array.isArray(option) ? option : [option, option];
    el.append(h("option", { value: v }, label));
  }
  if (value !== undefined && value !== null) el.value = value;
  return el;
}

/** A resource bar: role=meter, its figures as text beside it (readable without colour). */
export function bar(id, value, max) {
  const name = term(id);
  const ratio = max > 0 ? Math.max(0, Math.min(1, value / max)) : 0;
  const level = ratio > 0.5 ? "high" : ratio > 0.25 ? "mid" : "low";
  return h("div", { class: "bar-row" },
    h("span", { class: "bar-name" }, name),
    h("div", { class: `bar ${level}`, role: "meter", "aria-label": name, "aria-valuemin": 0,
               "aria-valuemax": max, "aria-valuenow": value, "aria-valuetext": `${num(value)} / ${num(max)}`,
               dataset: { resource: id } },
      h("div", { class: "bar-fill", style: `width: ${(ratio * 100).toFixed(1)}%` })),
    h("span", { class: "bar-figures" }, `${num(value)} / ${num(max)}`));
}

/** An API id in the page's words (i18n.js `term`: agilite → agilité, hp → PV). */
export function humanize(code) {
  return term(code);
}
