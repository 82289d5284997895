// Steering a quest: a message box, pause / stop / resume, and answering the agent's
// open decision requests by choosing one of its options.
//
// mountSteering(element, {questId}) -> {close()}
//
// Every action goes through the daemon's routes and nothing is shown before its event
// is in the log: the panel shows the quest's state as the routes answer it, and reads
// it again when a steering event (control, completion, request, reply) arrives on the
// quest's stream (the trace's, when it is on the page: see sse.js's relay). The trace shows the message or reply card when its event arrives. A
// refused action shows the route's error code and message.

import { api, token } from "./api.js";
import { h } from "./dom.js";
import { listenQuestEvents, openStream } from "./sse.js";

export { mountSteering };

// The events after which the panel's state may have changed.
const WATCHED = new Set([
  "quest.control", "quest.completed", "quest.anchor_changed", "quest.created",
  "interaction.sent", "interaction.replied",
]);

function mountSteering(element, { questId } = {}) {
  const q = encodeURIComponent(questId);
  const base = `/api/quests/${q}`;
  const statusEl = h("b", { class: "steer-status", "data-status": "" }, "…");
  const stageEl = h("span", { class: "dim steer-stage" }, "");
  const healthEl = h("span", { class: "badge steer-health", hidden: true }, "");
  const buttons = ["pause", "stop", "resume"].map((action) =>
    h("button", { type: "button", class: `control ${action}`, "data-action": action }, action[0].toUpperCase() + action.slice(1)));
  const requestsEl = h("div", { class: "steer-requests" });
  const text = h("textarea", { name: "text", rows: "2", placeholder: "Message the agent…", "aria-label": "Message the agent" });
  const send = h("button", { type: "submit", class: "send" }, "Send");
  const form = h("form", { class: "steer-message" }, text, send);
  const errorEl = h("div", { class: "steer-error", role: "alert", hidden: true });
  const noteEl = h("div", { class: "steer-note dim", "aria-live": "polite" }, "");
  element.classList.add("steer");
  element.replaceChildren(
    h("div", { class: "steer-head" }, h("span", {}, "Quest "), statusEl, " ", healthEl, stageEl, h("span", { class: "steer-controls" }, ...buttons)),
    requestsEl, form, noteEl, errorEl,
  );

  let closed = false;
  let stream = null;
  let refreshing = null;
  let again = false;

  function showError(err) {
    errorEl.hidden = !err;
    errorEl.textContent = err ? `${err.code || "error"}: ${err.message || String(err)}` : "";
  }

  // Do one request; say what went wrong if it was refused. The button stays disabled
  // until the daemon answers, so a double click sends once.
  async function act(button, path, body, done) {
    button.disabled = true;
    pending.add(button);
    showError(null);
    try {
      const answer = await api(path, { method: "POST", body });
      if (done) done(answer);
      return answer;
    } catch (err) {
      showError(err);
      return null;
    } finally {
      pending.delete(button);
      if (buttons.includes(button)) enableButtons();
      else button.disabled = false;
    }
  }

  for (const button of buttons) {
    button.addEventListener("click", () => {
      act(button, `${base}/control`, { action: button.dataset.action }, (a) => {
        noteEl.textContent = `${a.action} sent (event ${a.seq})`;
        // The answer says the status now: the buttons follow at once, not at the next read.
        if (a.status) { allowed = allowedActions(a.status, null); enableButtons(); }
      });
    });
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    act(send, `${base}/messages`, { text: text.value }, (a) => {
      text.value = "";
      noteEl.textContent = `message queued (event ${a.seq})`;
    });
  });
  text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) form.requestSubmit();
  });

  function drawRequests(open) {
    const items = open.filter((r) => r.kind === "decision_request" || (r.options && r.options.length));
    requestsEl.replaceChildren(...items.map((r) => {
      const opts = (r.options || []).map((o) => {
        const b = h("button", { type: "button", class: `option${o.recommended ? " recommended" : ""}`, "data-option": o.id, title: o.description || "" }, o.label);
        b.addEventListener("click", () => {
          act(b, `${base}/interactions/${encodeURIComponent(r.interaction_id)}/reply`, { option_id: o.id, text: o.label }, () => {
            noteEl.textContent = `answered: ${o.label}`;
          });
        });
        return b;
      });
      return h("div", { class: "request", "data-interaction": r.interaction_id },
        h("div", { class: "who" }, "the agent asks"), h("div", { class: "text" }, r.message),
        opts.length ? h("div", { class: "options" }, ...opts) : h("div", { class: "dim" }, "answer in the message box"));
    }));
  }

  // The actions that apply now (see allowedActions); the others are disabled. An
  // action in flight keeps its button disabled until the daemon answers (act).
  let allowed = new Set();
  const pending = new Set();
  function enableButtons() {
    for (const b of buttons) {
      const on = allowed.has(b.dataset.action) && !pending.has(b);
      b.disabled = !on;
      b.title = on ? "" : `not while the quest is ${statusEl.dataset.status || "…"}`;
    }
  }

  function drawStatus(s) {
    const health = s.health && typeof s.health === "object" ? s.health : null;
    statusEl.textContent = s.status;
    statusEl.dataset.status = s.status;
    healthEl.hidden = !(health && health.state);
    healthEl.textContent = health && health.state ? health.state.replace(/_/g, " ") : "";
    healthEl.dataset.health = health ? health.state || "" : "";
    healthEl.title = health && health.summary ? health.summary : "";
    element.dataset.status = s.status;
    element.dataset.health = health ? health.state || "" : "";
    stageEl.textContent = ` · stage ${s.anchor}`;
    const done = s.status === "completed";
    for (const b of buttons) b.hidden = done;
    allowed = allowedActions(s.status, health);
    enableButtons();
  }

  // Read the state again; calls that come while one runs fold into one more read.
  async function refresh() {
    if (refreshing) {
      again = true;
      return refreshing;
    }
    refreshing = (async () => {
      do {
        again = false;
        const [status, inbox] = await Promise.all([api(base), api(`${base}/interactions`)]);
        if (closed) return null;
        drawStatus(status);
        drawRequests(inbox.open_requests || []);
        element.dataset.seq = String(Math.min(status.last_seq, inbox.seq));
      } while (again && !closed);
      return Number(element.dataset.seq);
    })();
    try {
      return await refreshing;
    } finally {
      refreshing = null;
    }
  }

  const changed = () => { refresh().catch(showError); };
  // With the trace of this quest on the page, its stream tells us what happened (every
  // event it reads from its first page on, so nothing between our first read and its
  // stream is missed); alone, the panel follows a stream of the watched types itself.
  const shared = listenQuestEvents(questId, (events) => {
    if (events.some((e) => WATCHED.has(e.type))) changed();
  });

  (async () => {
    let seq;
    try {
      seq = await refresh();
    } catch (err) {
      showError(err);
      return;
    }
    if (closed || shared) return;
    stream = openStream(`${base}/events?types=${[...WATCHED].join(",")}`, {
      lastEventId: seq,
      onEvent: changed,
      onError: showError,
      token,
      onUnauthorized: () => api(base).catch(() => {}),
    });
  })();

  return {
    close() {
      closed = true;
      if (stream) stream.close();
      if (shared) shared.close();
    },
  };
}

/** The control actions that apply to a quest in this state: paused → resume, stop;
 * stopped → resume; completed → none; otherwise (active: running, idle, waiting,
 * retrying, failed, stalled …) → pause, stop. The quest's health, when the daemon gives
 * one, says it; its status otherwise. */
export function allowedActions(status, health) {
  const state = health && health.state ? health.state : status;
  if (status === "completed" || state === "completed") return new Set();
  if (state === "paused" || status === "paused") return new Set(["resume", "stop"]);
  if (state === "stopped" || status === "stopped") return new Set(["resume"]);
  return new Set(["pause", "stop"]);
}
