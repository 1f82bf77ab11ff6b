// The GM's players: add one (its token shown once, to hand over), list them, invite one by a
// single-use link (a new device joins as that player: the link, a copy button, its QR code).

import { api, describe, fieldError } from "./api.js";
import { h, clear, patch, field, setError } from "./dom.js";
import { state, on, knowPlayer } from "./store.js";
import { t, timeText } from "./i18n.js";

export function renderPlayers(section) {
  const list = h("ul", { class: "players", id: "player-list" });
  const name = h("input", { type: "text", name: "player-name", maxlength: 200 });
  const reveal = h("div", { class: "reveal", role: "status" });
  const invitation = h("div", { class: "reveal invite", id: "invite" });
  const form = h("form", { class: "inline", novalidate: true }, field(t("players.name"), name), h("button", { type: "submit" }, t("players.add")));
  form.addEventListener("submit", async event => {
    event.preventDefault();
    setError(name, "");
    try {
      const player = await api.post(`/v1/campaigns/${state.campaign.id}/players`, { name: name.value });
      const { token, ...rest } = player;
      knowPlayer(rest);
      name.value = "";
      clear(reveal,
        h("p", {}, t("players.token", { name: player.name })),
        h("output", { class: "token" }, token), " ",
        h("button", { type: "button", class: "small secondary", onclick: () => clear(reveal) }, t("players.hide")));
    } catch (err) {
      const first = (err.problem?.errors || [])[0];
      setError(name, first ? fieldError({ ...first, loc: [] }, err.problem) : describe(err));
    }
  });
  const status = h("p", { class: "status", role: "status" });
  const invite = async player => {
    status.textContent = "";
    try {
      const made = await api.post(`/v1/campaigns/${state.campaign.id}/players/${player.id}/invites`, {});
      showInvitation(invitation, player, made);
    } catch (err) {
      status.textContent = describe(err);
    }
  };
  clear(section, h("h2", {}, t("players.title")), list, status, invitation, form, reveal);
  // patched in place (a character's event must not take the focus off an Invite button)
  const draw = () => patch(list, state.players.length
    ? state.players.map(p => h("li", { dataset: { key: p.id } }, h("span", { class: "player-name" }, p.name), " ",
        h("span", { class: "hint" }, `${[...state.characters.values()].filter(c => c.player_id === p.id).map(c => c.name).join(", ") || t("players.no.character")}`),
        " ",
        h("button", { type: "button", class: "small secondary", "aria-label": t("players.invite.label", { name: p.name }),
                      onclick: () => invite(p) }, t("players.invite"))))
    : h("li", { class: "hint" }, t("players.none")));
  draw();
  on("players", () => {
    draw();
    // a removed player's pending link is dead: its panel goes too
    if (invitation.dataset.playerId && !state.players.some(p => p.id === invitation.dataset.playerId)) clear(invitation);
  });
  on("characters", draw);
}

/** The invitation just made: its link (to read out, copy or scan), valid once until its expiry. The QR
 * code is the server's SVG shown as an image (an <img> runs no script, and the page's CSP allows data:). */
function showInvitation(box, player, made) {
  const link = h("input", { type: "text", readonly: true, value: made.url, id: "invite-url", class: "invite-url",
                            spellcheck: "false", autocomplete: "off" });
  const copy = h("button", { type: "button", class: "secondary", id: "invite-copy", onclick: async () => {
    try {
      await navigator.clipboard.writeText(made.url);
      copy.textContent = t("login.copied");
    } catch {
      link.select();
      copy.textContent = t("login.copy.manual");
    }
  } }, t("players.invite.copy"));
  const qr = h("img", { class: "qr", id: "invite-qr", alt: t("players.invite.qr", { name: player.name }),
                        src: `data:image/svg+xml,${encodeURIComponent(made.qr_svg)}` });
  box.dataset.playerId = player.id;
  clear(box,
    h("h3", {}, t("players.invite.title", { name: player.name })),
    h("p", {}, t("players.invite.help", { name: player.name, time: timeText(made.expires_at) })),
    field(t("players.invite.link"), link),
    h("p", { class: "invite-actions" }, copy, " ",
      h("button", { type: "button", class: "small secondary", onclick: () => { clear(box); delete box.dataset.playerId; } }, t("players.hide"))),
    qr);
  link.focus();
  link.select();
}
