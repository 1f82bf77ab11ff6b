// The GM's players: add one (its token shown once, to hand over), list them.

import { api, describe, fieldError } from "./api.js";
import { h, clear, field, setError } from "./dom.js";
import { state, on, knowPlayer } from "./store.js";
import { t } from "./i18n.js";

export function renderPlayers(section) {
  const list = h("ul", { class: "players", id: "player-list" });
  const name = h("input", { type: "text", name: "player-name", maxlength: 200 });
  const reveal = h("div", { class: "reveal", role: "status" });
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
      setError(name, first ? fieldError({ msg: first.msg }) : describe(err));
    }
  });
  clear(section, h("h2", {}, t("players.title")), list, form, reveal);
  const draw = () => clear(list, state.players.length
    ? state.players.map(p => h("li", {}, p.name, " ",
        h("span", { class: "hint" }, `${[...state.characters.values()].filter(c => c.player_id === p.id).map(c => c.name).join(", ") || t("players.no.character")}`)))
    : h("li", { class: "hint" }, t("players.none")));
  draw();
  on("players", draw);
  on("characters", draw);
}
