// The one store: what the page knows, and who wants to hear when a part of it changes.

const TOKEN_KEY = "jdr.token";

export const state = {
  token: null,
  me: null,            // {campaign_id, role, player_id}
  campaign: null,
  ruleset: null,       // GET /v1/rulesets/{id}
  characters: new Map(),
  players: [],
  combatants: new Map(), // combatant id → name, from the encounters read
  encounterId: null,
  stream: "offline",   // offline | live | reconnecting
  revealedEpochs: new Set(), // ids of the dice epochs whose seed is out: a hidden roll of theirs may be published
};

const listeners = new Map();

export function on(topic, fn) {
  if (!listeners.has(topic)) listeners.set(topic, new Set());
  listeners.get(topic).add(fn);
  return () => listeners.get(topic).delete(fn);
}

export function emit(topic, detail) {
  for (const fn of listeners.get(topic) || []) {
    try { fn(detail); } catch (err) { console.warn(`listener of ${topic} failed`, err); }
  }
}

export function resetListeners() { listeners.clear(); }

export const isGm = () => state.me?.role === "gm";

/** Whether this caller may enter table dice: the GM always, a player when the campaign allows it. */
export const mayEnterDice = () => isGm() || Boolean(state.campaign?.options?.players_may_enter_dice);

/** A character the caller controls (the GM controls all). */
export function controls(character) {
  return isGm() || (character && character.player_id && character.player_id === state.me?.player_id);
}

/** A character's or a combatant's name. */
export function nameOf(id) {
  return state.characters.get(id)?.name ?? state.combatants.get(id) ?? "?";
}

/** A player the page learns of (its creation answered, or its event heard): listed once, whichever comes first. */
export function knowPlayer(player) {
  if (!state.players.some(p => p.id === player.id)) state.players.push(player);
  emit("players");
}

export function rememberCombatants(encounter) {
  for (const c of encounter?.combatants || []) state.combatants.set(c.id, c.name);
}

export function savedToken() { return sessionStorage.getItem(TOKEN_KEY); }
export function saveToken(token) { sessionStorage.setItem(TOKEN_KEY, token); }
export function forgetToken() { sessionStorage.removeItem(TOKEN_KEY); }

// The news of each character: the page's count of news (an event, a read of that character alone)
// when it last came. A list read that began before newer news of a character says nothing of it
// (created, changed or removed while the list was on its way): `mergeCharacters` leaves it as the
// news has it, so a stale list neither drops a character just created nor brings back one just deleted.
let news = 0;
const heardAt = new Map();

/** The count of news so far: pass it to `mergeCharacters` with a list read begun now. */
export function newsMark() { return news; }

// A whole sheet's version counts its changes; a partial view's (no `sheet`: a `limited` character) is
// computed from what it shows, a number with no order: any other one is news.
function setIfNewer(character) {
  const known = state.characters.get(character.id);
  const ordered = known && "sheet" in known && "sheet" in character;
  if (ordered && known.version > character.version) return false;
  state.characters.set(character.id, character);
  emit("characters", character.id);
  return true;
}

/** News of one character (an event, a read of it alone): kept unless an older version than the page's. */
export function upsertCharacter(character) {
  heardAt.set(character.id, ++news);
  return setIfNewer(character);
}

function forget(id) {
  state.characters.delete(id);
  emit("characters", id);
}

/** News that a character is gone from this viewer's sight (deleted, hidden). */
export function removeCharacter(id) {
  heardAt.set(id, ++news);
  forget(id);
}

/** The characters as a list read begun at `mark` (`newsMark()`) shows them: new and changed ones merged,
 * those not in it forgotten (no longer visible to this caller: `player_access: none`, hidden), except
 * the characters with news since `mark`. */
export function mergeCharacters(characters, mark) {
  const listed = new Set();
  for (const character of characters) {
    listed.add(character.id);
    if ((heardAt.get(character.id) ?? 0) <= mark) setIfNewer(character);
  }
  for (const id of [...state.characters.keys()]) {
    if (!listed.has(id) && (heardAt.get(id) ?? 0) <= mark) forget(id);
  }
}
