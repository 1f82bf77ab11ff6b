// First screen: paste a token (GM or player), or create a campaign (its GM token is shown once).

import { api, ApiError, describe } from "./api.js";
import { h, clear, field, setError, select } from "./dom.js";

export async function renderLogin(root, { onToken, message }) {
  const tokenInput = h("input", { type: "password", autocomplete: "off", spellcheck: "false", name: "token" });
  const open = h("form", { class: "card", "aria-labelledby": "open-title", novalidate: true },
    h("h2", { id: "open-title" }, "Open a campaign"),
    field("Token (GM or player)", tokenInput, { hint: "Kept in this tab only (session storage), never in the address." }),
    h("button", { type: "submit" }, "Open"));
  open.addEventListener("submit", async event => {
    event.preventDefault();
    const token = tokenInput.value.trim();
    if (!token) return setError(tokenInput, "paste the token the GM gave you");
    const error = await onToken(token);
    setError(tokenInput, error || "");
  });

  const name = h("input", { type: "text", name: "campaign-name", maxlength: 200 });
  const ruleset = select([], {});
  const admin = h("input", { type: "password", autocomplete: "off", name: "admin-token" });
  const adminField = field("Admin token (only if this server requires one)", admin);
  adminField.hidden = true;
  const status = h("p", { class: "status", role: "status" });
  const create = h("form", { class: "card", "aria-labelledby": "create-title", novalidate: true },
    h("h2", { id: "create-title" }, "New campaign"),
    field("Campaign name", name), field("Ruleset", ruleset), adminField,
    h("button", { type: "submit" }, "Create campaign"), status);
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
        setError(admin, "this server needs its admin token to create a campaign");
        return admin.focus();
      }
      const placed = (err.problem?.errors || []).find(e => (e.loc || [])[1] === "name");
      if (placed) return setError(name, placed.msg);
      status.textContent = describe(err);
    }
  });

  clear(root,
    h("header", { class: "top" }, h("h1", {}, "JDR — table de jeu")),
    h("main", { class: "login" },
      message ? h("p", { class: "notice", role: "alert" }, message) : null,
      open, create, reveal));

  try {
    const { items } = await api.get("/v1/rulesets");
    clear(ruleset, ...items.map(r => h("option", { value: r.id }, r.title)));
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
    try { await navigator.clipboard.writeText(campaign.gm_token); copy.textContent = "Copied"; } catch { copy.textContent = "Select and copy it"; }
  } }, "Copy");
  clear(box,
    h("h2", {}, `“${campaign.name}” is ready`),
    h("p", {}, "Your GM token, shown only this once — keep it somewhere safe:"),
    h("p", {}, output, " ", copy),
    h("button", { type: "button", onclick: proceed }, "Open the campaign"));
  box.hidden = false;
  box.querySelector("button:last-child").focus();
}
