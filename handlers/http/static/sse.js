// A Server-Sent Events reader over fetch: EventSource cannot send the Authorization
// header a token-protected daemon needs, so the stream is read with a ReadableStream
// reader and parsed here, and the resume point travels as a Last-Event-ID header.
//
// openStream(path, {lastEventId, onEvent, onState, onError, token, onUnauthorized})
// reads `path` until close(): each `event: event` frame goes to onEvent(parsed data,
// seq); the frame's `id:` (the event's seq) becomes the resume point. When the stream
// ends (the daemon restarted, the network dropped, the daemon dropped a slow reader)
// it reconnects after the server's `retry:` delay, sending Last-Event-ID, so the daemon
// resumes exactly after the last event handled: no gap, no duplicate.

export { openStream, parseFrames, shareQuestEvents, listenQuestEvents };

const DEFAULT_RETRY_MS = 2000;
const MAX_RETRY_MS = 10000;

function openStream(path, options) {
  const { onEvent, onState = () => {}, onError = () => {}, token = () => null, onUnauthorized = null } = options;
  let lastEventId = options.lastEventId ?? null;
  let retryMs = DEFAULT_RETRY_MS;
  let failures = 0;
  let closed = false;
  let controller = null;
  let wake = null;

  function sleep(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => { clearTimeout(timer); resolve(); };
    });
  }

  async function connectOnce() {
    controller = new AbortController();
    const headers = { Accept: "text/event-stream" };
    const t = token();
    if (t) headers.Authorization = `Bearer ${t}`;
    if (lastEventId !== null) headers["Last-Event-ID"] = String(lastEventId);
    const resp = await fetch(path, { headers, signal: controller.signal, cache: "no-store" });
    if (resp.status === 401 && onUnauthorized) {
      await onUnauthorized();  // asks for the token once; the next attempt sends it
      return "retry";
    }
    if (!resp.ok) {
      const body = await resp.json().catch(() => ({}));
      const err = { code: body.error || `http_${resp.status}`, message: body.message || resp.statusText, status: resp.status };
      onError(err);
      // A refusal of the request itself (unknown quest, bad cursor) will not change by
      // asking again; anything else (a daemon restarting behind a proxy) may.
      return resp.status >= 400 && resp.status < 500 && resp.status !== 429 ? "stop" : "retry";
    }
    onState("live");
    failures = 0;
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let pending = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return "retry";
      pending += value;
      const { frames, rest } = parseFrames(pending);
      pending = rest;
      for (const frame of frames) {
        if (frame.retry !== undefined) retryMs = Math.min(frame.retry, MAX_RETRY_MS);
        if (frame.data === undefined) continue;  // a keep-alive comment or a retry line
        const data = JSON.parse(frame.data);
        if (frame.event === "dropped") {
          // The daemon dropped this reader (too slow, or it stopped following the
          // log): resume from where it says, at once.
          lastEventId = data.resume_after;
          await reader.cancel().catch(() => {});
          return "now";
        }
        if (frame.event === "end") {
          await reader.cancel().catch(() => {});
          return "retry";
        }
        if (frame.id !== undefined && frame.id !== "") lastEventId = Number(frame.id);
        onEvent(data, lastEventId);
      }
    }
  }

  (async () => {
    while (!closed) {
      let next = "retry";
      try {
        next = await connectOnce();
      } catch (exc) {
        if (closed) break;
        next = "retry";  // the connection broke (daemon gone, network down)
      }
      if (closed) break;
      if (next === "stop") {
        onState("failed");
        break;
      }
      if (next === "now") continue;
      failures += 1;
      onState("reconnecting");
      // The server's retry delay, stretched a little while the daemon stays away.
      await sleep(Math.min(retryMs * Math.min(failures, 4), MAX_RETRY_MS));
    }
  })();

  return {
    close() {
      closed = true;
      if (controller) controller.abort();
      if (wake) wake();
      onState("closed");
    },
    get lastEventId() {
      return lastEventId;
    },
  };
}

// Split SSE text into complete frames (each ends with a blank line); `rest` is the
// incomplete tail to prepend to the next chunk. Fields per the SSE format: data lines
// join with "\n", a line starting with ":" is a comment, one optional space after ":".
function parseFrames(text) {
  const frames = [];
  // A chunk may end between the "\r" and "\n" of one line end: keep that "\r" for later.
  const held = text.endsWith("\r") ? "\r" : "";
  const normalised = text.slice(0, text.length - held.length).replace(/\r\n?/g, "\n");
  const blocks = normalised.split("\n\n");
  const rest = blocks.pop() + held;
  for (const block of blocks) {
    const frame = {};
    const data = [];
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") data.push(value);
      else if (field === "id") frame.id = value;
      else if (field === "event") frame.event = value;
      else if (field === "retry" && /^\d+$/.test(value)) frame.retry = Number(value);
    }
    if (data.length) frame.data = data.join("\n");
    frames.push(frame);
  }
  return { frames, rest };
}

// A page-wide relay of a quest's events. A browser opens at most six connections to one
// host over HTTP/1.1 and every open stream holds one, so the panels of one quest share
// the stream one of them reads: the trace publishes every event it reads (its first
// page and then the stream); the steering panel listens when a trace of the same quest
// is mounted, and opens a stream of its own only when none is.
const relays = new Map();  // quest id -> {publishers, listeners}

function shareQuestEvents(questId) {
  const r = relayOf(questId);
  r.publishers += 1;
  return {
    publish(events) {
      for (const fn of r.listeners) fn(events);
    },
    close() {
      r.publishers -= 1;
      forget(questId, r);
    },
  };
}

// Calls fn(events) with what the quest's publisher reads; null when nothing publishes.
function listenQuestEvents(questId, fn) {
  const r = relays.get(questId);
  if (!r || !r.publishers) return null;
  r.listeners.add(fn);
  return {
    close() {
      r.listeners.delete(fn);
      forget(questId, r);
    },
  };
}

function relayOf(questId) {
  let r = relays.get(questId);
  if (!r) {
    r = { publishers: 0, listeners: new Set() };
    relays.set(questId, r);
  }
  return r;
}

function forget(questId, r) {
  if (!r.publishers && !r.listeners.size && relays.get(questId) === r) relays.delete(questId);
}
