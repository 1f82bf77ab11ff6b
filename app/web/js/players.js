// The GM's players: add one (its token shown once, to hand over), list them.

import { api, describe } from "./api.js";
import { h, clear, field, setError } from "./dom.js";
import { state, on, emit } from "./store.js";

export function renderPlayers(section) {
  const list = h("ul", { class: "players", id: "player-list" });
  const name = h("input", { type: "text", name: "player-name", maxlength: 200 });
  const reveal = h("div", { class: "reveal", role: "status" });
  const form = h("form", { class: "inline", novalidate: true }, field("Player name", name), h("button", { type: "submit" }, "Add player"));
  form.addEventListener("submit", async event => {
    event.preventDefault();
    setError(name, "");
    try {
      const player = await api.post(`/v1/campaigns/${state.campaign.id}/players`, { name: name.value });
      const { token, ...rest } = player;
      if (!state.players.some(p => p.id === rest.id)) state.players.push(rest);
      emit("players");
      name.value = "";
      clear(reveal,
        h("p", {}, `Token of ${player.name} — shown only this once, give it to the player:`),
        h("output", { class: "token" }, token), " ",
        h("button", { type: "button", class: "small secondary", onclick: () => clear(reveal) }, "Done, hide it"));
    } catch (err) {
      setError(name, (err.problem?.errors || [])[0]?.msg || describe(err));
    }
  });
  clear(section, h("h2", {}, "Players"), list, form, reveal);
  const draw = () => clear(list, state.players.length
    ? state.players.map(p => h("li", {}, p.name, " ",
        h("span", { class: "hint" }, `${[...state.characters.values()].filter(c => c.player_id === p.id).map(c => c.name).join(", ") || "no character"}`)))
    : h("li", { class: "hint" }, "No player yet."));
  draw();
  on("players", draw);
  on("characters", draw);
}
