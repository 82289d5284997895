// The live trace of a quest: what its agent said, thought and did, as cards, fed by the
// daemon's event stream.
//
// mountTrace(element, {questId}) -> {close()}
//
// Only a window of cards is in the DOM (windowSize, the newest by default). The window
// covers the events with seq in [low, high]; `latest` is the last seq the stream
// delivered. Scrolling to the top pages older events in (`before=low`) and drops cards
// at the bottom; scrolling back down pages newer ones in (`after=high`) and drops cards
// at the top. While the window reaches the live end and the reader sits at the bottom,
// new events are appended as they arrive and the oldest cards leave.
//
// No duplicates: the stream resumes after `latest` (Last-Event-ID), an event at or below
// `latest` or inside the window is skipped, and every card remembers the seqs it holds.

import { api, token } from "./api.js";
import { cardKey, drawCard } from "./cards.js";
import { h } from "./dom.js";
import { openStream, shareQuestEvents } from "./sse.js";

export { mountTrace };

const NEAR_EDGE_PX = 120;

function mountTrace(element, { questId, windowSize = 200, pageSize = 100 } = {}) {
  const q = encodeURIComponent(questId);
  const eventsPath = `/api/quests/${q}/events`;
  const stateEl = h("span", { class: "trace-state", "data-state": "connecting" }, "connecting…");
  const jump = h("button", { type: "button", class: "trace-jump", hidden: true }, "newer events ↓");
  const errorEl = h("div", { class: "trace-error", role: "alert", hidden: true });
  const older = h("div", { class: "trace-older" }, "");
  const list = h("div", { class: "trace-list", role: "log", "aria-label": "Events of the quest" });
  const scroller = h("div", { class: "trace-scroll" }, older, list);
  element.classList.add("trace");
  element.replaceChildren(h("div", { class: "trace-bar" }, h("span", { class: "trace-title" }, "Live trace"), stateEl, jump), errorEl, scroller);

  const cards = new Map();  // key -> {key, events, seqs, el}
  const evicted = new Map();  // key -> events of a multi-event card that left the window
  const ctx = {
    ourCalls: new Map(), theirCalls: new Map(), orphans: new Map(), openTails: new Set(),
    endedRuns: new Map(),  // run_id -> how its turn ended: a call of it still open was cut off
    bashLog: (bid, tail) => api(`/api/quests/${q}/bash/sessions/${encodeURIComponent(bid)}/log?tail=${tail}`),
  };
  let low = 0;  // the window holds events with low <= seq <= high
  let high = 0;
  let latest = 0;  // the last seq the stream delivered (or the initial page ended at)
  let hasOlder = false;
  let busy = false;
  let closed = false;
  let stream = null;
  const relay = shareQuestEvents(questId);  // the steering panel reads this stream too

  // -- cards ------------------------------------------------------------------------------

  function apply(e, into) {
    if (e.type === "runner.turn_finished" && e.run_id) endRun(e);
    const key = cardKey(e, ctx);
    if (key === null) return;
    let card = cards.get(key);
    if (card) {
      if (card.seqs.has(e.seq)) return;
      card.events.push(e);
      card.seqs.add(e.seq);
      card.events.sort((a, b) => a.seq - b.seq);
      redraw(card);
      return;
    }
    const events = [e, ...(evicted.get(key) || []).filter((x) => x.seq !== e.seq)].sort((a, b) => a.seq - b.seq);
    evicted.delete(key);
    card = { key, events, seqs: new Set(events.map((x) => x.seq)), el: null };
    cards.set(key, card);
    redraw(card);
    into.append(card.el);
  }

  // A turn ended (finished, failed, or interrupted by a pause or stop): a tool call of
  // it that never finished will not finish now; its card is redrawn to say so rather
  // than stay "running" for good.
  function endRun(e) {
    if (ctx.endedRuns.has(e.run_id)) return;
    ctx.endedRuns.set(e.run_id, e.outcome || "ended");
    if (ctx.endedRuns.size > 2000) ctx.endedRuns.delete(ctx.endedRuns.keys().next().value);
    for (const card of cards.values()) {
      if (!card.key.startsWith("tool:") && !card.key.startsWith("rtool:")) continue;
      if (card.events.some((x) => x.run_id === e.run_id) && card.el) redraw(card);
    }
  }

  function redraw(card) {
    const el = drawCard(card.events, ctx);
    el.dataset.key = card.key;
    el.dataset.seq = String(card.events[0].seq);
    if (card.el) card.el.replaceWith(el);
    card.el = el;
  }

  function evict(el) {
    const card = cards.get(el.dataset.key);
    if (card) {
      cards.delete(card.key);
      if (card.events.length > 1 || !card.key.startsWith("e:")) {
        evicted.set(card.key, card.events);  // later events it merged, should it come back
        if (evicted.size > 2000) evicted.delete(evicted.keys().next().value);
      }
    }
    el.remove();
  }

  function trimTop() {
    let trimmed = false;
    while (list.childElementCount > windowSize) {
      evict(list.firstElementChild);
      trimmed = true;
    }
    if (trimmed) {
      low = Number(list.firstElementChild.dataset.seq);
      hasOlder = true;
    }
  }

  function trimBottom() {
    let cut = null;
    while (list.childElementCount > windowSize) {
      const el = list.lastElementChild;
      cut = Number(el.dataset.seq);
      evict(el);
    }
    if (cut !== null) high = Math.min(high, cut - 1);
  }

  // -- scrolling --------------------------------------------------------------------------

  const nearBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < NEAR_EDGE_PX;
  const toBottom = () => { scroller.scrollTop = scroller.scrollHeight; };

  // Run `change` keeping `anchor` where the reader sees it.
  function keeping(anchor, change) {
    if (!anchor) return change();
    const y = anchor.offsetTop - scroller.scrollTop;
    change();
    if (anchor.isConnected) scroller.scrollTop = anchor.offsetTop - y;
  }

  function showEdges() {
    const atLive = high >= latest;
    jump.hidden = atLive;
    older.textContent = hasOlder ? "scroll up for older events" : "the beginning of the quest";
    element.dataset.low = String(low);
    element.dataset.high = String(high);
    element.dataset.lastSeq = String(latest);
  }

  async function page(params) {
    return api(`${eventsPath}?${new URLSearchParams(params)}`);
  }

  async function loadOlder() {
    const got = await page({ before: low, limit: pageSize });
    if (closed) return;
    keeping(list.firstElementChild, () => {
      const frag = document.createDocumentFragment();
      for (const e of got.events) apply(e, frag);
      list.prepend(frag);
    });
    if (got.events.length) low = got.events[0].seq;
    hasOlder = got.has_more;
    trimBottom();
  }

  async function loadNewer() {
    const got = await page({ after: high, limit: pageSize });
    if (closed) return;
    keeping(list.lastElementChild, () => {
      for (const e of got.events) apply(e, list);
      if (got.events.length) high = Math.max(high, got.events[got.events.length - 1].seq);
      trimTop();
    });
  }

  async function onScroll() {
    if (busy || closed) return;
    let work = null;
    if (scroller.scrollTop < NEAR_EDGE_PX && hasOlder) work = loadOlder;
    else if (nearBottom() && high < latest) work = loadNewer;
    if (!work) return;
    busy = true;
    try {
      await work();
      showError(null);
    } catch (err) {
      showError(err);
    } finally {
      busy = false;
      showEdges();
    }
    requestAnimationFrame(onScroll);  // still at an edge: the next page
  }

  // -- live -------------------------------------------------------------------------------

  // Live events are taken in as they are read and drawn in one batch per chunk the
  // stream delivers (a microtask after the reader's loop), so a burst, such as the
  // catch-up after a reconnect, costs one layout rather than one per event.
  let queue = [];

  function onEvent(e) {
    if (e.seq <= latest) return;  // already handled (a resumed stream never sends these)
    queue.push([e, latest]);
    latest = e.seq;
    if (queue.length === 1) queueMicrotask(flush);
  }

  function flush() {
    const batch = queue;
    queue = [];
    relay.publish(batch.map(([e]) => e));
    const follow = nearBottom();
    for (const [e, previous] of batch) {
      if (e.seq <= high) continue;  // a page brought it already
      if (high < previous) continue;  // the window is away from the live end
      if (!follow && list.childElementCount >= windowSize) continue;  // the reader reads above
      apply(e, list);
      high = e.seq;
      if (follow) trimTop();  // no layout read: cheap per event
    }
    if (follow) toBottom();
    showEdges();
  }

  function setState(state) {
    stateEl.dataset.state = state;
    stateEl.textContent = { live: "live", reconnecting: "reconnecting…", failed: "not following", closed: "closed", connecting: "connecting…" }[state] || state;
  }

  function showError(err) {
    errorEl.hidden = !err;
    errorEl.textContent = err ? `${err.code || "error"}: ${err.message}` : "";
  }

  async function reload() {
    busy = true;
    try {
      const got = await page({ tail: 1, limit: pageSize });
      if (closed) return;
      for (const el of [...list.children]) evict(el);
      for (const e of got.events) apply(e, list);
      const last = got.events.length ? got.events[got.events.length - 1].seq : 0;
      low = got.events.length ? got.events[0].seq : 1;
      // The page ends at `last`; events the stream brought meanwhile (above it) come in
      // as newer pages when the reader is at the bottom.
      high = last;
      latest = Math.max(latest, last);
      hasOlder = got.has_more;
      relay.publish(got.events);
      trimTop();
      toBottom();
      showError(null);
    } finally {
      busy = false;
      showEdges();
    }
    requestAnimationFrame(onScroll);  // at the bottom with newer events waiting: page them in
  }

  jump.addEventListener("click", () => { reload().catch(showError); });
  scroller.addEventListener("scroll", () => { onScroll(); }, { passive: true });

  (async () => {
    try {
      await reload();
    } catch (err) {
      setState("failed");
      showError(err);
      return;
    }
    if (closed) return;
    stream = openStream(eventsPath, {
      lastEventId: latest,
      onEvent,
      onState: setState,
      onError: showError,
      token,
      onUnauthorized: () => api(`/api/quests/${q}`).catch(() => {}),
    });
  })();

  return {
    close() {
      closed = true;
      if (stream) stream.close();
      relay.close();
    },
  };
}
