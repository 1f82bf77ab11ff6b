// First screen: paste a token (GM or player), or create a campaign (its GM token is shown once).

import { api, ApiError, describe, fieldError } from "./api.js";
import { h, clear, field, setError, select } from "./dom.js";
import { t, lang, setLang, rulesetTitle } from "./i18n.js";

export async function renderLogin(root, { onToken, message, onLang }) {
  const tokenInput = h("input", { type: "password", autocomplete: "off", spellcheck: "false", name: "token" });
  const open = h("form", { class: "card", "aria-labelledby": "open-title", novalidate: true },
    h("h2", { id: "open-title" }, t("login.open.title")),
    field(t("login.token"), tokenInput, { hint: t("login.token.hint") }),
    h("button", { type: "submit" }, t("login.open")));
  open.addEventListener("submit", async event => {
    event.preventDefault();
    const token = tokenInput.value.trim();
    if (!token) return setError(tokenInput, t("login.token.missing"));
    const error = await onToken(token);
    setError(tokenInput, error || "");
  });

  const name = h("input", { type: "text", name: "campaign-name", maxlength: 200 });
  const ruleset = select([], {});
  const admin = h("input", { type: "password", autocomplete: "off", name: "admin-token" });
  const adminField = field(t("login.admin"), admin);
  adminField.hidden = true;
  const status = h("p", { class: "status", role: "status" });
  const create = h("form", { class: "card", "aria-labelledby": "create-title", novalidate: true },
    h("h2", { id: "create-title" }, t("login.create.title")),
    field(t("login.campaign.name"), name), field(t("login.ruleset"), ruleset), adminField,
    h("button", { type: "submit" }, t("login.create")), status);
  const reveal = h("div", { class: "reveal", hidden: true });

  create.addEventListener("submit", async event => {
    event.preventDefault();
    setError(name, "");
    status.textContent = "";
    const headers = admin.value.trim() ? { Authorization: `Bearer ${admin.value.trim()}` } : undefined;
    try {
      const campaign = await createCampaign({ name: name.value, ruleset: ruleset.value }, headers);
      showToken(reveal, campaign, () => onToken(campaign.gm_token));
      create.hidden = true;
      open.hidden = true;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        adminField.hidden = false;
        setError(admin, t("login.admin.needed"));
        return admin.focus();
      }
      const placed = (err.problem?.errors || []).find(e => (e.loc || [])[1] === "name");
      if (placed) return setError(name, fieldError({ ...placed, loc: [] }, err.problem));
      status.textContent = describe(err);
    }
  });

  clear(root,
    h("header", { class: "top" }, h("h1", {}, t("app.title")),
      h("nav", { class: "top-actions", "aria-label": t("top.session") }, langButton(onLang))),
    h("main", { class: "login" },
      message ? h("p", { class: "notice", role: "alert" }, message) : null,
      open, create, reveal));

  try {
    const { items } = await api.get("/v1/rulesets");
    clear(ruleset, ...items.map(r => h("option", { value: r.id }, rulesetTitle(r))));
  } catch (err) {
    status.textContent = describe(err);
  }
  tokenInput.focus();
}

async function createCampaign(body, headers) {
  // the admin token, when given, replaces the (absent) session token for this one call
  const response = await fetch("/v1/campaigns", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json", ...(headers || {}) },
    body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

function showToken(box, campaign, proceed) {
  const output = h("output", { class: "token", id: "gm-token-value" }, campaign.gm_token);
  const copy = h("button", { type: "button", class: "secondary", onclick: async () => {
    try { await navigator.clipboard.writeText(campaign.gm_token); copy.textContent = t("login.copied"); } catch { copy.textContent = t("login.copy.manual"); }
  } }, t("login.copy"));
  clear(box,
    h("h2", {}, t("login.ready", { name: campaign.name })),
    h("p", {}, t("login.gm.token")),
    h("p", {}, output, " ", copy),
    h("button", { type: "button", onclick: proceed }, t("login.proceed")));
  box.hidden = false;
  box.querySelector("button:last-child").focus();
}

/** The language toggle (French by default, English as a choice kept in localStorage). */
export function langButton(onLang) {
  const other = lang === "fr" ? "en" : "fr";
  return h("button", { type: "button", class: "secondary lang", id: "lang-toggle", lang: other,
                       "aria-label": t("lang.toggle.label"),
                       onclick: () => { setLang(other); onLang?.(); } }, t("lang.toggle"));
}
