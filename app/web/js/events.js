// The campaign's event stream from a browser: a one-use ticket per connection
// (EventSource cannot send Authorization), ids counted per campaign, and on a drop a
// new ticket and `?after=<last id>`: the missed events come first, none twice.

import { api } from "./api.js";
import { retryDelay } from "./dom.js";

const NAMES = ["campaign.updated", "player.created", "player.deleted", "character.created", "character.updated", "character.deleted",
  "character.hidden",
  "log.created", "encounter.created", "encounter.updated", "encounter.action", "encounter.reverted",
  "webhook.disabled",  // the GM's: nothing to show, but its id is counted (no false gap)
  "dice_epoch.salted", "dice_epoch.revealed", "log.published"];

export class EventStream {
  constructor(campaignId, { onEvent, onStatus, onResync, onUnauthorized, onGap }) {
    Object.assign(this, { campaignId, onEvent, onStatus, onResync, onUnauthorized, onGap });
    this.last = null;       // the last event id handled
    this.source = null;
    this.failures = 0;
    this.closed = false;
    this.timer = null;
    this.dropped = false;   // reconnecting after a drop
  }

  async open() {
    if (this.closed) return;
    let ticket;
    try {
      ({ ticket } = await api.post(`/v1/campaigns/${this.campaignId}/events/tickets`));
    } catch (err) {
      if (err.status === 401 || err.status === 404) return this.onUnauthorized?.(err);
      return this.retry();
    }
    if (this.closed) return;
    const query = new URLSearchParams({ ticket });
    if (this.last !== null) query.set("after", String(this.last));
    const source = new EventSource(`/v1/campaigns/${this.campaignId}/events?${query}`);
    this.source = source;
    return new Promise(resolve => {
      source.onopen = () => {
        this.failures = 0;
        this.onStatus?.("live");
        // after a drop the missed events come first (`after`); the page also reads its views
        // again (a refresh that failed during the drop, a drop before any event): merged, nothing twice
        if (this.dropped) this.onResync?.();
        this.dropped = false;
        resolve(true);
      };
      for (const name of NAMES) source.addEventListener(name, e => this.receive(name, e));
      // both a connection error and the server's own `event: error` (database down)
      source.addEventListener("error", event => {
        if (this.source !== source) return;
        source.close();
        this.source = null;
        let code = null;
        try { code = JSON.parse(event.data || "null")?.code; } catch { /* a connection error has no data */ }
        if (code === "token_revoked") { this.onStatus?.("offline"); resolve(false); return this.onUnauthorized?.(); }
        this.dropped = true;
        this.onStatus?.("reconnecting");
        this.retry();
        resolve(false);
      });
    });
  }

  receive(name, event) {
    const id = Number(event.lastEventId);
    if (this.last !== null && id <= this.last) return;  // already handled
    // ids count per campaign: a gap is something this viewer may not see (a card just hidden…)
    const gap = this.last !== null && id > this.last + 1;
    this.last = id;
    let data;
    try { data = JSON.parse(event.data); } catch { return; }
    this.onEvent(name, data, id);
    if (gap) this.onGap?.();
  }

  retry() {
    if (this.closed) return;
    const delay = retryDelay(250, this.failures);
    this.failures += 1;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.open(), delay);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.source?.close();
    this.source = null;
    this.onStatus?.("offline");
  }
}
