// The dashboard: a client of the public API and its event stream, nothing else.
// Routes: `#/` the dashboard (GM or player, by the token), `#/table` the table screen, and
// `/join#<code>` an invitation: accepted, its new token kept as a pasted one, then the dashboard.

import { api, setToken, getAll, describe, setNamer } from "./api.js";
import { h, clear, retryDelay } from "./dom.js";
import { state, emit, on, isGm, nameOf, savedToken, saveToken, forgetToken, upsertCharacter, removeCharacter, mergeCharacters, newsMark, resetListeners, knowPlayer } from "./store.js";
import { EventStream } from "./events.js";
import { renderLogin, langButton } from "./login.js";
import { t, rulesetTitle } from "./i18n.js";
import { renderCharacters } from "./characters.js";
import { loadLuck } from "./luck.js";
import { renderPlayers } from "./players.js";
import { renderTestPanel } from "./testpanel.js";
import { RollLog } from "./log.js";
import { DicePanel } from "./epochs.js";
import { Tracker } from "./encounter.js";
import { TableScreen } from "./table.js";

const root = document.getElementById("app");
setNamer(nameOf);
let stream = null;
let syncTimer = null;

function reset() {
  stream?.close();
  stream = null;
  resetListeners();
  Object.assign(state, { me: null, campaign: null, ruleset: null, characters: new Map(), players: [],
                         combatants: new Map(), encounterId: null, stream: "offline" });
  document.body.classList.remove("table-mode", "fight");
  clearTimeout(syncTimer);
  delete document.documentElement.dataset.ready;
  delete document.documentElement.dataset.synced;
}

async function boot(message) {
  reset();
  if (location.pathname === "/join") return join();
  const token = savedToken();
  if (!token) return login(message);
  const error = await enter(token);
  if (error) {
    forgetToken();
    setToken(null);
    return login(error);
  }
}

/** An invitation link opened: the code leaves the address bar (and the history) at once, is spent
 * for a token of this device's own, kept as the login keeps a pasted one; a spent, expired or
 * unknown link says so on the first screen. */
async function join() {
  const code = decodeURIComponent(location.hash.slice(1));
  history.replaceState(null, "", "/");
  if (!code) return boot();
  clear(root, h("p", { class: "loading", role: "status" }, t("join.busy")));
  let joined;
  try {
    setToken(null);  // the invitation alone lets in, whoever this tab was
    joined = await api.post(`/v1/invites/${encodeURIComponent(code)}/accept`);
  } catch (err) {
    return login(err.status === 404 ? t("join.invalid") : describe(err));
  }
  saveToken(joined.token);
  return boot();
}

function login(message) {
  document.title = t("app.title");
  return renderLogin(root, {
    message,
    onLang: () => login(message),
    onToken: async token => {
      reset();
      saveToken(token);
      const error = await enter(token);
      if (error) { forgetToken(); setToken(null); }
      return error;
    },
  });
}

async function enter(token) {
  setToken(token);
  try {
    state.me = await api.get("/v1/me");
  } catch (err) {
    return err.status === 401 ? t("login.token.invalid") : describe(err);
  }
  const cid = state.me.campaign_id;
  const campaign = api.get(`/v1/campaigns/${cid}`);
  const [c, ruleset, characters, players] = await Promise.all([
    campaign, campaign.then(x => api.get(`/v1/rulesets/${x.ruleset}`)),
    getAll(`/v1/campaigns/${cid}/characters`), getAll(`/v1/campaigns/${cid}/players`).catch(() => [])]);
  state.campaign = c;
  state.ruleset = ruleset;
  for (const character of characters) state.characters.set(character.id, character);
  state.players = players;
  document.title = `${c.name} — JDR`;
  if (location.hash === "#/table") return table();
  return dashboard();
}

async function dashboard() {
  const log = new RollLog();
  const tracker = new Tracker();
  const dice = new DicePanel();
  const sections = {
    characters: h("section", { id: "characters", "aria-labelledby": "characters-title" }),
    encounter: h("section", { id: "encounter", "aria-labelledby": "encounter-title" }),
    players: isGm() ? h("section", { id: "players" }) : null,
    test: h("section", { id: "test", "aria-labelledby": "test-title" }),
    log: h("section", { id: "log", "aria-labelledby": "log-title" }),
    dice: h("section", { id: "dice-epochs", "aria-labelledby": "epochs-title" }),
  };
  const me = isGm() ? t("top.gm") : t("top.player", { name: state.players.find(p => p.id === state.me.player_id)?.name ?? "" });
  clear(root,
    h("header", { class: "top" },
      h("h1", {}, state.campaign.name),
      h("span", { class: "ruleset" }, rulesetTitle(state.ruleset)),
      h("span", { class: `badge role ${state.me.role}`, id: "role" }, me),
      h("nav", { class: "top-actions", "aria-label": t("top.session") },
        langButton(() => boot()),
        h("button", { type: "button", class: "secondary", onclick: () => window.open("/#/table", "jdr-table") }, t("top.table")),
        h("button", { type: "button", class: "secondary", id: "leave", onclick: leave }, t("top.leave")))),
    h("main", { class: "layout" },
      h("div", { class: "col-main" }, sections.characters, sections.encounter, sections.players),
      h("div", { class: "col-side" }, sections.test, sections.log, sections.dice)),
    partsBar(sections));
  renderCharacters(sections.characters);
  renderTestPanel(sections.test);
  log.mount(sections.log);
  dice.mount(sections.dice);
  tracker.mount(sections.encounter);
  if (sections.players) renderPlayers(sections.players);
  await Promise.all([log.load().catch(err => log.fail(err)), tracker.loadList().catch(err => console.warn(err)),
    dice.load().catch(err => dice.say(describe(err)))]);
  document.documentElement.dataset.ready = "dashboard";
  performance.mark("jdr:interactive");

  on("characters", id => { if (id) tracker.onCharacter(id); });  // a sheet edit reaches the tracker
  stream = new EventStream(state.campaign.id, {
    onEvent: (name, data) => dispatch(name, data, { log, tracker, dice }),
    onStatus: status => { state.stream = status; emit("stream", status); },
    onResync: () => resync({ log, tracker, dice }),
    // a gap in the ids: something this viewer may no longer see (a card, a combatant just hidden): read again
    onGap: () => {
      clearTimeout(syncTimer);
      syncTimer = setTimeout(() => {
        refreshCharacters().catch(() => {});
        tracker.refresh().catch(() => {});
        dice.refresh().catch(() => {});  // a roll hidden from this viewer moves the epoch's count all the same
      }, 150);
    },
    onUnauthorized: () => boot(t("login.token.gone")),
  });
  if (await stream.open()) await resync({ log, tracker, dice });  // what happened between the first reads and the stream
  document.documentElement.dataset.synced = "true";
}

/** On a phone (one column, ~1,500 px down to the test panel), a bar of the page's parts at the bottom of
 * the screen: one tap brings a part's heading in sight, focused. Buttons, not links: the address's
 * hash is the page's route. */
function partsBar(sections) {
  const go = (section, titleId) => {
    section.scrollIntoView({ block: "start" });
    const title = document.getElementById(titleId);
    if (!title) return;
    title.tabIndex = -1;
    title.focus({ preventScroll: true });
  };
  return h("nav", { class: "parts-bar", id: "parts-bar", "aria-label": t("nav.label") },
    [["characters", "characters-title", "nav.characters"], ["encounter", "encounter-title", "nav.encounter"],
     ["test", "test-title", "nav.test"], ["log", "log-title", "nav.log"]].map(([name, titleId, key]) =>
      h("button", { type: "button", class: "secondary small", onclick: () => go(sections[name], titleId) }, t(key))));
}

/** Read every view again (after a drop); a failed read is tried again until one succeeds, and
 * until then the live indicator says the page is not in sync. */
async function resync({ log, tracker, dice }, attempt = 0) {
  try {
    await Promise.all([log.resync(), tracker.loadList(), refreshCharacters(), refreshPlayers(), dice.load()]);
    if (attempt) emit("sync", { stale: false });
  } catch (err) {
    console.warn("resync failed, retried", err.message);
    emit("sync", { stale: true });
    clearTimeout(syncTimer);
    syncTimer = setTimeout(() => resync({ log, tracker, dice }, attempt + 1), retryDelay(500, attempt));
  }
}

/** The characters as the server shows them now: new and changed ones merged, those gone from view dropped
 * (but what events told of them while the list was read: `mergeCharacters`). */
async function refreshCharacters() {
  const mark = newsMark();
  mergeCharacters(await getAll(`/v1/campaigns/${state.campaign.id}/characters`), mark);
}

/** The players as the server lists them now (one added or removed since the first read, before the
 * stream opened, is seen: the GM's list, every page's owner names), keeping those an event added while
 * the list was read. */
async function refreshPlayers() {
  const before = new Set(state.players.map(p => p.id));
  const read = await getAll(`/v1/campaigns/${state.campaign.id}/players`);
  const listed = new Set(read.map(p => p.id));
  const heard = state.players.filter(p => !before.has(p.id) && !listed.has(p.id));
  state.players = [...read, ...heard];
  emit("players");
}

async function table() {
  const screen = new TableScreen();
  screen.mount(root);
  await screen.pick();
  document.documentElement.dataset.ready = "table";
  stream = new EventStream(state.campaign.id, {
    onEvent: (name, data) => {
      if (name.startsWith("encounter.")) screen.onEvent(name, data);
      else if (name === "log.created") screen.onRoll(data);  // the dice tray, out of a fight
      else if (name === "character.updated") screen.refresh();  // a sheet edit moves the pools shown
    },
    onResync: () => screen.pick(),
    onUnauthorized: () => boot(t("login.token.gone")),
  });
  if (await stream.open()) await screen.pick();  // what happened between the first read and the stream
}

function dispatch(name, data, { log, tracker, dice }) {
  switch (name) {
    case "log.created":
      loadLuck();  // a test moves its character's luck
      dice.onEntry(data.entry);
      if (data.entry) log.add(data.entry);
      else log.resync().catch(() => {});  // an event naming its entry only: read the newest page
      for (const ref of data.characters_changed || []) {
        if ((state.characters.get(ref.id)?.version ?? -1) !== ref.version) {  // (a partial view's has no order)
          api.get(`/v1/characters/${ref.id}`).then(upsertCharacter).catch(() => {});
        }
      }
      break;
    case "character.created":
    case "character.updated":
      upsertCharacter(data);
      break;
    case "character.hidden":  // hidden from the players who saw it: gone from their page, as a deleted one
      if (isGm() || state.characters.get(data.id)?.player_id === state.me.player_id) break;
    // falls through
    case "character.deleted":
      removeCharacter(data.id);
      break;
    case "player.created":
      knowPlayer(data);
      break;
    case "player.deleted":
      state.players = state.players.filter(p => p.id !== data.id);
      emit("players");
      break;
    case "log.published":  // a hidden roll shown to the players: in the log where it belongs, its dice checked
      log.resync().catch(() => {});
      dice.onEvent(name, data);
      if (state.encounterId) tracker.refresh().catch(() => {});  // a combat entry: in the fight's history too
      break;
    case "dice_epoch.salted":
    case "dice_epoch.revealed":
      dice.onEvent(name, data);
      break;
    case "campaign.updated":
      state.campaign = { ...state.campaign, ...data };
      break;
    default:
      if (name.startsWith("encounter.")) tracker.onEvent(name, data);
  }
}

function leave() {
  if (!window.confirm(t("top.leave.confirm"))) return;
  forgetToken();
  setToken(null);
  boot();
}

window.addEventListener("hashchange", () => boot());
boot();
