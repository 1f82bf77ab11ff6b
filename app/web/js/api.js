// The one API client: JSON in and out, the token as a bearer header (never in a URL),
// problem+json errors thrown as ApiError, described by their `code` (i18n.js), never by `detail`.

import { problemMessage, validationText, termLabel, t, has } from "./i18n.js";

let token = null;

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

export function setToken(value) { token = value; }

async function request(method, path, { body, query, headers = {} } = {}) {
  let url = path;
  if (query) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") params.set(k, v);
    if ([...params].length) url += `?${params}`;
  }
  const init = { method, headers: { Accept: "application/json", ...headers } };
  if (token) init.headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    throw new ApiError(0, { code: "network" });
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = { title: response.statusText, detail: text.slice(0, 200) }; }
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export const api = {
  get: (path, query) => request("GET", path, { query }),
  post: (path, body = {}, headers) => request("POST", path, { body, headers }),
  patch: (path, body, headers) => request("PATCH", path, { body, headers }),
  del: (path, headers) => request("DELETE", path, { headers }),
};

/** Every page of a list route (`{items, next_cursor}`). */
export async function getAll(path, query = {}) {
  const items = [];
  let cursor = null;
  do {
    const page = await api.get(path, { limit: 500, ...query, cursor });
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

/** A validation error's field and message, translated: "PV max : doit être supérieur ou égal à 1". */
export function fieldError(e, problem = {}) {
  const loc = (e.loc || []).filter(x => x !== "body");
  const last = loc.length ? termLabel(loc[loc.length - 1]) : "";
  const msg = validationText(e, problem);
  return last ? t("problem.field", { field: last, msg }) : msg;
}

let namer = null;
/** How an id is named in messages (the store's characters and combatants): errors name, not ids. */
export function setNamer(fn) { namer = fn; }
const named = text => (namer && text ? String(text).replace(/\b[0-9a-f]{32}\b/g, id => {
  const name = namer(id);
  return name && name !== "?" ? `« ${name} »` : id;
}) : text);

/** The problem's message in one line, for a status area (once, in the page's language). */
export function describe(err) {
  if (!(err instanceof ApiError)) return String(err?.message || err);
  const p = { ...err.problem, detail: named(err.problem.detail) };
  // a rule's refusal (an item with no `type`) is said once, by the problem's code, when the page knows it
  const said = p.code && p.code !== "validation_failed" && has(`code.${p.code}`);
  const where = (p.errors || []).filter(e => e.type || !said).map(e => fieldError(e, p));
  return `${problemMessage(err.status, p)}${where.length ? ` ${where.join(" ; ")}` : ""}`;
}
