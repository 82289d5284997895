// The quest list at "/": title, health (its state; the summary too when it needs a
// look: failed, retrying, stalled, waiting), status, active anchor, last activity, open
// decision requests; each row opens the quest (#/q/<id>).
//
// Live by polling GET /api/quests every 2 s (paused while the tab is hidden). One small
// request covers every quest; following each quest's event stream instead would hold
// one connection per quest, and a browser allows only six per host over HTTP/1.1 — the
// quest view's own trace stream needs one of them.
import { api } from "./api.js";
import { ago, every, h, errorBox } from "./dom.js";

export function mountList(el) {
  const rows = h("div.quest-list", { role: "list" });
  const problem = h("div.problem");
  const empty = h("p.muted.empty", { hidden: true }, "No quests yet. Start one with ", h("code", {}, "ds quest new"), " or ", h("code", {}, "ds demo"), ".");
  el.append(h("section.list-view", {}, h("h1", {}, "Quests"), problem, empty, rows));
  let last = "";

  const stop = every(2000, async () => {
    let data;
    try {
      data = await api("/api/quests");
    } catch (err) {
      problem.replaceChildren(errorBox(err));
      return;
    }
    problem.replaceChildren();
    const quests = [...data.quests].sort((a, b) => (b.updated_at || "").localeCompare(a.updated_at || ""));
    const key = JSON.stringify(quests);
    empty.hidden = quests.length > 0;
    if (key === last) {
      for (const t of rows.querySelectorAll("time")) t.textContent = ago(t.dateTime);  // only the "ago" moves
      return;
    }
    last = key;
    rows.replaceChildren(...quests.map(row));
  });
  return { close: stop };
}

// The health states a person should look at: their summary line is shown, not only
// the badge (a failed quest stands out in the list and its header).
const ATTENTION = new Set(["failed", "retrying", "stalled", "waiting_for_user"]);

/** Whether a quest in this health state shows its summary line. */
export function needsAttention(state) {
  return ATTENTION.has(state);
}

function row(q) {
  const href = `#/q/${encodeURIComponent(q.quest_id)}`;
  const open = q.open_requests || 0;
  const hl = q.health && typeof q.health === "object" ? q.health : null;
  const state = hl && hl.state ? hl.state : "";
  const summary = hl && hl.summary ? hl.summary : "";
  return h("a.quest-row", { href, role: "listitem", "data-quest": q.quest_id, "data-health": state || null },
    h("span.q-title", {}, q.title || q.quest_id),
    h("span.q-id.muted", {}, q.quest_id),
    state ? h("span.badge.health.q-health", { "data-health": state, title: summary }, state.replace(/_/g, " ")) : null,
    summary && needsAttention(state) ? h("span.q-health-summary", { "data-health": state }, summary) : null,
    h("span.badge.q-status", { "data-status": q.status }, q.status),
    h("span.badge.anchor.q-anchor", { title: "active anchor (stage)" }, q.anchor),
    h("span.q-activity.muted", {}, "last activity ", h("time", { datetime: q.updated_at || "", title: q.updated_at || "" }, ago(q.updated_at))),
    h("span.q-requests", { "data-open": open, title: "open decision requests" },
      open ? `${open} open request${open === 1 ? "" : "s"}` : "no open requests"));
}
