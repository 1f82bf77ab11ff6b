// Luck against the exact odds: each character's successes beside the number
// its tests' odds expected, from GET /v1/campaigns/{cid}/stats, read again as tests are logged.

import { api } from "./api.js";
import { state, emit } from "./store.js";
import { t, lang } from "./i18n.js";

export const luck = new Map(); // character id → its figures (the stats' `characters` item)

let pending = null;

/** Read the campaign's statistics (one request at a time; a call during one reads once more after). */
export async function loadLuck() {
  if (!state.me?.campaign_id) return;
  if (pending) { pending.again = true; return; }
  pending = { again: false };
  try {
    const stats = await api.get(`/v1/campaigns/${state.me.campaign_id}/stats`);
    luck.clear();
    for (const c of stats.characters || []) if (c.character_id) luck.set(c.character_id, c);
    emit("luck");
  } catch { /* the cards stay as they are */ } finally {
    const again = pending.again;
    pending = null;
    if (again) loadLuck();
  }
}

const one = n => new Intl.NumberFormat(lang, { minimumFractionDigits: 1, maximumFractionDigits: 1 }).format(n);

/** "Aiko : 12 réussites pour 9,4 attendues", or null before any test with odds. */
export function luckLine(character) {
  const figures = luck.get(character.id);
  if (!figures || figures.tests - figures.tests_without_odds <= 0) return null;
  const { observed, expected } = figures.successes;
  return t(observed === 1 ? "luck.line.one" : "luck.line", { name: character.name, observed, expected: one(expected) });
}
