// Tiny DOM helpers: elements are built with textContent only (never innerHTML), so no
// name, sheet value or API message can inject markup.

import { num, term } from "./i18n.js";

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "style") el.style.cssText = value;  // CSSOM, which a CSP without inline styles allows
    else if (key === "value" || key === "checked" || key === "selected") el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
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
