// A form built from a JSON Schema (a ruleset's sheet, a test's options, a fight action's
// body): one labelled control per field, values read back as JSON, and the 422's
// errors shown next to the field their `loc` names.

import { h, uid, field, setError, humanize } from "./dom.js";
import { t, lang, validationText, termLabel } from "./i18n.js";

export function resolve(schema, root) {
  let seen = 0;
  while (schema && schema.$ref && seen++ < 20) {
    const target = schema.$ref.replace(/^#\//, "").split("/")
      .reduce((node, key) => node?.[key.replaceAll("~1", "/").replaceAll("~0", "~")], root);
    const { $ref, ...rest } = schema;
    schema = { ...target, ...rest };
  }
  return schema || {};
}

/** `anyOf: [X, null]` → X, nullable. */
export function unwrap(schema, root) {
  schema = resolve(schema, root);
  const alternatives = schema.anyOf || schema.oneOf;
  if (alternatives) {
    const real = alternatives.filter(s => s.type !== "null");
    if (real.length === 1) {
      const { anyOf, oneOf, ...outer } = schema;
      return { schema: { ...resolve(real[0], root), ...outer }, nullable: real.length < alternatives.length };
    }
  }
  return { schema, nullable: false };
}

/** A field's own title, else its name (not the title of the model it refers to: "FinalSkill"). */
const labelOf = (schema, path, raw = {}) => (path.length ? termLabel(path[path.length - 1]) : schema.title || "");
/** The schema's own description (English, from the server) only as an English hint. */
const described = schema => (lang === "en" ? schema.description : undefined);
const isEmpty = v => v === undefined || v === null || v === "" || (typeof v === "object" && !Array.isArray(v) && !Object.keys(v).length);

export class SchemaForm {
  /**
   * schema: the object schema; root: where its $refs point; value: the initial value;
   * mode: "create" (unset and default values are left out) or "edit" (all values read back);
   * widgets: {propertyName: (ctx) => node} replacing a field's control;
   * suggest: {propertyName: [keys]} for maps (a new sheet's stats); omit: property names left out;
   * access: (path, propertySchema) => "edit" | "readonly" | "hidden".
   */
  constructor({ schema, root, value = {}, mode = "create", widgets = {}, suggest = {}, omit = [], access = () => "edit" }) {
    Object.assign(this, { root: root || schema, mode, widgets, suggest, omit, access });
    this.slots = new Map();
    this.node = this.object(schema, [], value ?? {}, { required: true, top: true });
    this.el = this.node.el;
  }

  value() { return this.node.get(); }

  clearErrors() {
    for (const control of this.slots.values()) setError(control, "");
  }

  /** Shows each `{loc, msg, type?}` next to its field, in the page's words (a rule's refusal by `problem`'s
   * code); returns the messages no field took. */
  showErrors(errors, problem = {}) {
    this.clearErrors();
    const byControl = new Map();
    const unplaced = [];
    for (const error of errors || []) {
      const loc = (error.loc || []).filter((part, i) => !(i === 0 && part === "body")).map(String);
      let path = [...loc];
      while (path.length && !this.slots.has(path.join("."))) path.pop();
      const control = this.slots.get(path.join("."));
      const msg = error.local ? error.msg : validationText(error, problem);
      if (!control || !path.length) {
        unplaced.push(t("problem.field", { field: loc.length ? termLabel(loc[loc.length - 1]) : "?", msg }));
        continue;
      }
      const rest = loc.slice(path.length).join(".");
      const text = rest ? t("problem.field", { field: rest, msg }) : msg;
      byControl.set(control, [...(byControl.get(control) || []), text]);
    }
    for (const [control, messages] of byControl) setError(control, messages.join(" · "));
    const first = byControl.keys().next().value;
    if (first) first.focus?.();
    return unplaced;
  }

  register(path, control) { this.slots.set(path.join("."), control); }

  build(raw, path, value, { required, readonly = false }) {
    const name = path[path.length - 1];
    const access = readonly ? "readonly" : this.access(path, raw);
    if (access === "hidden") return null;
    const { schema, nullable } = unwrap(raw, this.root);
    const ctx = { schema, raw, path, value, required, nullable, label: labelOf(schema, path, raw), readonly: access === "readonly" };
    if (this.widgets[name]) return this.withRegistration(this.widgets[name](ctx), path);
    if (schema.enum || schema.const !== undefined) return this.choice(ctx);
    switch (schema.type) {
      case "boolean": return this.boolean(ctx);
      case "integer": case "number": case "string": return this.scalar(ctx);
      case "object":
        if (schema.properties) return nullable ? this.optionalObject(schema, path, value, ctx) : this.object(schema, path, value ?? {}, ctx);
        if (!schema.properties && (schema.additionalProperties || schema.patternProperties)) return this.map(ctx);
        return this.json(ctx);
      case "array": return this.array(ctx);
      default: return this.json(ctx);
    }
  }

  withRegistration(node, path) {
    if (node?.control) this.register(path, node.control);
    return node;
  }

  finish(ctx, control, node) {
    if (ctx.readonly) control.disabled = true;
    if (ctx.required) control.setAttribute("aria-required", "true");
    const box = field(ctx.label, control, { hint: ctx.readonly ? t("form.rule.governed") : described(ctx.schema) });
    if (ctx.required) box.querySelector("label").classList.add("required");
    this.register(ctx.path, control);
    return { el: box, control, get: () => (ctx.readonly ? undefined : node()) };
  }

  /** create mode leaves out what the user did not set (the server applies its defaults). */
  keep(ctx, v) {
    if (v === undefined) return undefined;
    if (this.mode === "create" && !ctx.required && (v === ctx.schema.default || (v === null && ctx.schema.default === null))) return undefined;
    return v;
  }

  choice(ctx) {
    const options = ctx.schema.enum ?? [ctx.schema.const];
    const control = h("select", { name: ctx.path.join(".") });
    if (!ctx.required || ctx.nullable) control.append(h("option", { value: "" }, "—"));
    // a required choice not made yet: a prompt, never a choice of its own (the form says it is missing)
    else if (ctx.value === undefined && ctx.schema.default === undefined) {
      control.append(h("option", { value: "", disabled: true, hidden: true }, t("form.choose")));
    }
    options.forEach((option, i) => control.append(h("option", { value: String(i) }, humanize(option))));
    const initial = ctx.value !== undefined && ctx.value !== null ? ctx.value : ctx.schema.default;
    const index = options.indexOf(initial);
    control.value = index >= 0 ? String(index) : "";
    return this.finish(ctx, control, () => {
      if (control.value === "") return this.keep(ctx, ctx.nullable && this.mode === "edit" ? null : undefined);
      return this.keep(ctx, options[Number(control.value)]);
    });
  }

  boolean(ctx) {
    const control = h("input", { type: "checkbox", name: ctx.path.join(".") });
    control.checked = Boolean(ctx.value ?? ctx.schema.default ?? false);
    return this.finish(ctx, control, () => this.keep(ctx, control.checked));
  }

  scalar(ctx) {
    const numeric = ctx.schema.type !== "string";
    const long = !numeric && (ctx.schema.maxLength ?? 0) > 500;
    const control = long ? h("textarea", { rows: 3 }) : h("input", { type: numeric ? "number" : "text" });
    control.name = ctx.path.join(".");
    if (numeric) control.step = ctx.schema.type === "integer" ? "1" : "any";
    const initial = ctx.value ?? ctx.schema.default;
    if (initial !== undefined && initial !== null) control.value = String(initial);
    const node = this.finish(ctx, control, () => {
      const text = control.value.trim();
      if (text === "") return this.keep(ctx, ctx.nullable && this.mode === "edit" ? null : undefined);
      if (!numeric) return this.keep(ctx, control.value);
      const n = Number(text);
      return this.keep(ctx, Number.isFinite(n) ? n : text);  // the server names what is wrong
    });
    const known = this.suggest[ctx.path[ctx.path.length - 1]];
    if (!numeric && !long && known?.length) {  // known values (a ruleset's races) offered, others still accepted
      const list = h("datalist", { id: uid("dl") }, known.map(v => h("option", { value: v })));
      control.setAttribute("list", list.id);
      node.el.append(list);
    }
    return node;
  }


  fieldset(ctx, ...children) {
    const legend = h("legend", {}, ctx.label);
    const box = h("fieldset", { id: uid("fs"), class: "group" }, legend, ...children);
    const error = h("p", { class: "error", id: `${box.id}-error`, role: "alert", hidden: true });
    box.append(error);
    box.setAttribute("aria-describedby", error.id);
    this.register(ctx.path, box);
    return box;
  }

  object(schema, path, value, ctx = {}) {
    const children = [];
    const required = new Set(schema.required || []);
    for (const [name, raw] of Object.entries(schema.properties || {})) {
      if (ctx.top && this.omit.includes(name)) continue;
      const node = this.build(raw, [...path, name], value?.[name], { required: required.has(name), readonly: Boolean(ctx.readonly) });
      if (node) children.push([name, node]);
    }
    const els = children.map(([, node]) => node.el);
    const el = ctx.top ? h("div", { class: "schema-form" }, els)
      : this.fieldset({ ...ctx, label: ctx.label ?? labelOf(schema, path), path }, h("div", { class: "group-fields" }, els));
    return {
      el,
      get: () => {
        if (ctx.readonly) return undefined;
        const out = {};
        for (const [name, node] of children) {
          if (node.el?.hidden) continue;  // a field the form hides (its option not chosen) says nothing
          const v = node.get();
          if (v !== undefined) out[name] = v;
        }
        if (!ctx.top && !ctx.required && this.mode === "create" && !Object.keys(out).length) return undefined;
        return out;
      },
    };
  }

  /** An object that may be null (a final skill, a condition to add): its fields, and null while left as they came. */
  optionalObject(schema, path, value, ctx) {
    const node = this.object(schema, path, value ?? {}, { ...ctx, required: false });
    const pristine = JSON.stringify(node.get() ?? {});
    const absent = value === undefined || value === null;
    return {
      el: node.el,
      get: () => {
        const v = node.get();
        if (ctx.readonly) return undefined;
        if (absent && JSON.stringify(v ?? {}) === pristine) return this.mode === "edit" && value === null ? null : undefined;
        return v;
      },
    };
  }

  /** A map of named values (skills, free stats): one row per name, names from the value or suggested. */
  map(ctx) {
    const valueSchema = resolve(ctx.schema.additionalProperties && typeof ctx.schema.additionalProperties === "object"
      ? ctx.schema.additionalProperties : Object.values(ctx.schema.patternProperties || {})[0] || {}, this.root);
    const fixed = ctx.schema.propertyNames?.enum;
    const name = ctx.path[ctx.path.length - 1];
    const initial = ctx.value && typeof ctx.value === "object" ? ctx.value : {};
    let keys = fixed || Object.keys(initial);
    if (!fixed && !keys.length && this.mode === "create") keys = this.suggest[name] || [];
    const rows = h("div", { class: "map-rows" });
    const entries = [];
    const numeric = valueSchema.type === "integer" || valueSchema.type === "number";
    const addRow = (key, v) => {
      const valueInput = h("input", { type: numeric ? "number" : "text", step: numeric ? "1" : null });
      if (v !== undefined && v !== null) valueInput.value = String(v);
      valueInput.disabled = ctx.readonly;
      let keyInput = null;
      const row = h("div", { class: "map-row" });
      if (fixed) {
        valueInput.id = uid("m");
        row.append(h("label", { for: valueInput.id }, termLabel(key)), valueInput);
      } else {
        keyInput = h("input", { type: "text", value: key, "aria-label": t("form.entry.name", { name: ctx.label }), disabled: ctx.readonly });
        const relabel = () => valueInput.setAttribute("aria-label", t("form.entry.value", { name: ctx.label, key: keyInput.value ? termLabel(keyInput.value) : "?" }));
        keyInput.addEventListener("input", relabel);
        relabel();
        const remove = h("button", { type: "button", class: "small", disabled: ctx.readonly,
          "aria-label": t("form.remove.entry", { key: key || "?", name: ctx.label }),
          onclick: () => { row.remove(); entries.splice(entries.indexOf(entry), 1); } }, "×");
        row.append(keyInput, valueInput, remove);
      }
      const entry = { key: () => (keyInput ? keyInput.value.trim() : key), input: valueInput };
      entries.push(entry);
      rows.append(row);
      return valueInput;
    };
    for (const key of keys) addRow(key, initial[key]);
    const add = fixed || ctx.readonly ? null : h("button", { type: "button", class: "small",
      onclick: () => addRow("", undefined).previousSibling?.focus() }, t("form.add.to", { name: ctx.label }));
    const box = this.fieldset(ctx, rows, add, ctx.readonly ? h("p", { class: "hint" }, t("form.rule.governed")) : null);
    return {
      el: box,
      get: () => {
        if (ctx.readonly) return undefined;
        const out = {};
        for (const entry of entries) {
          const key = entry.key();
          const text = entry.input.value.trim();
          if (!key || text === "") continue;
          out[key] = numeric && Number.isFinite(Number(text)) ? Number(text) : text;
        }
        if (this.mode === "create" && !ctx.required && !Object.keys(out).length) return undefined;
        return out;
      },
    };
  }

  array(ctx) {
    const items = unwrap(ctx.schema.items || {}, this.root).schema;
    const value = Array.isArray(ctx.value) ? ctx.value : [];
    if (items.enum) return this.checkboxes(ctx, items.enum, value);
    const stringy = items.type === "string" || (items.anyOf || []).some(s => s.type === "string");
    if (stringy && value.every(v => typeof v === "string")) return this.lines(ctx, value);
    if (items.type === "object" && items.properties) return this.list(ctx, items, value);
    return this.json(ctx);
  }

  checkboxes(ctx, options, value) {
    const boxes = options.map(option => {
      const input = h("input", { type: "checkbox", id: uid("cb"), disabled: ctx.readonly });
      input.checked = value.includes(option);
      return [option, input];
    });
    const box = this.fieldset(ctx, h("div", { class: "checks" },
      boxes.map(([option, input]) => h("span", { class: "check" }, input, h("label", { for: input.id }, humanize(option))))));
    return { el: box, get: () => this.keep(ctx, ctx.readonly ? undefined : (() => {
      const picked = boxes.filter(([, input]) => input.checked).map(([option]) => option);
      return this.mode === "create" && !picked.length ? undefined : picked;
    })()) };
  }

  lines(ctx, value) {
    const control = h("textarea", { rows: 3, name: ctx.path.join(".") });
    control.value = value.join("\n");
    const node = this.finish({ ...ctx, label: t("form.one.per.line", { name: ctx.label }) }, control, () => {
      const lines = control.value.split("\n").map(s => s.trim()).filter(Boolean);
      return this.mode === "create" && !lines.length ? undefined : lines;
    });
    return node;
  }

  list(ctx, itemSchema, value) {
    const container = h("div", { class: "list-items" });
    const nodes = [];
    const itemTitle = t("form.item");
    const addItem = itemValue => {
      const index = nodes.length;
      const node = this.object(itemSchema, [...ctx.path, String(index)], itemValue || {},
                               { required: true, label: `${itemTitle} ${index + 1}` });
      const remove = h("button", { type: "button", class: "small", disabled: ctx.readonly,
        onclick: () => { node.el.remove(); nodes.splice(nodes.indexOf(node), 1); } }, `${t("form.remove")} ${itemTitle} ${index + 1}`);
      node.el.append(remove);
      nodes.push(node);
      container.append(node.el);
      return node;
    };
    value.forEach(addItem);
    const add = ctx.readonly ? null : h("button", { type: "button", class: "small",
      onclick: () => addItem({}).el.querySelector("input, select, textarea")?.focus() }, t("form.add.to", { name: ctx.label }));
    const box = this.fieldset(ctx, container, add);
    return { el: box, get: () => {
      if (ctx.readonly) return undefined;
      const out = nodes.map(node => node.get());
      return this.mode === "create" && !out.length ? undefined : out;
    } };
  }

  json(ctx) {
    const control = h("textarea", { rows: 3, class: "json", name: ctx.path.join("."), spellcheck: "false" });
    if (ctx.value !== undefined && ctx.value !== null) control.value = JSON.stringify(ctx.value, null, 1);
    const node = this.finish({ ...ctx, label: t("form.json", { name: ctx.label }) }, control, () => {
      const text = control.value.trim();
      if (!text) return this.keep(ctx, this.mode === "edit" && ctx.value !== undefined ? null : undefined);
      try {
        return JSON.parse(text);
      } catch (err) {
        throw new FormError([{ loc: ctx.path, msg: t("form.json.invalid"), local: true }]);
      }
    });
    return node;
  }
}

export class FormError extends Error {
  constructor(errors) {
    super(errors.map(e => e.msg).join("; "));
    this.errors = errors;
  }
}

/** RFC 7396 merge patch turning `before` into `after` (null removes a key; arrays replace). */
export function mergePatch(before, after) {
  const patch = {};
  for (const key of new Set([...Object.keys(before || {}), ...Object.keys(after || {})])) {
    const a = before?.[key];
    const b = after?.[key];
    if (b === undefined) continue;  // not shown in the form: left as it is
    if (isPlainObject(a) && isPlainObject(b)) {
      const inner = mergePatch(a, b);
      for (const k of Object.keys(a)) if (!(k in b)) inner[k] = null;
      if (Object.keys(inner).length) patch[key] = inner;
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      patch[key] = b;
    }
  }
  return patch;
}

const isPlainObject = v => v !== null && typeof v === "object" && !Array.isArray(v);
export { isEmpty };
