// The page's router and layout. Routes (hash, so back/forward and reload work):
//   #/           the quest list
//   #/q/<id>     one quest: Canvas + node details beside (or, narrow, above) the live
//                trace and the steering box.
import { api } from "./api.js";
import { mountCanvas } from "./canvas.js";
import { mountDetails } from "./details.js";
import { every, h, errorBox } from "./dom.js";
import { mountList, needsAttention } from "./list.js";
import { mountSteering } from "./steer.js";
import { mountTrace } from "./trace.js";

const root = document.getElementById("app");
const crumbs = document.getElementById("crumbs");
let current = null;

function route() {
  if (current) current.close();
  current = null;
  root.replaceChildren();
  const m = location.hash.match(/^#\/q\/([^/?]+)/);
  if (m) {
    const questId = decodeURIComponent(m[1]);
    crumbs.replaceChildren(h("a", { href: "#/" }, "Quests"), " / ", h("span.crumb-quest", {}, questId));
    document.title = `${questId} — ds-events`;
    current = mountQuest(root, questId);
  } else {
    crumbs.replaceChildren(h("span", {}, "Quests"));
    document.title = "Quests — ds-events";
    current = mountList(root);
  }
}

function mountQuest(el, questId) {
  const title = h("h1.quest-title", {}, questId);
  const status = h("span.badge", { "data-field": "status" });
  const anchor = h("span.badge.anchor", { "data-field": "anchor" });
  const health = h("span.badge.health", { "data-field": "health", hidden: true });
  const healthLine = h("p.health-summary", { "data-field": "health-summary", hidden: true });
  const problem = h("div.problem");
  const canvasEl = h("section.pane.canvas-pane", { id: "canvas", "aria-label": "Canvas" });
  const detailsEl = h("section.pane.details-pane", { id: "details", "aria-label": "Node details" });
  const traceEl = h("section.pane.trace-pane", { id: "trace", "aria-label": "Live trace" });
  const steerEl = h("section.pane.steer-pane", { id: "steer", "aria-label": "Steering" });
  el.append(
    h("section.quest", { "data-quest": questId },
      h("header.quest-head", {}, title, health, status, anchor),
      healthLine,
      problem,
      h("div.quest-body", {},
        h("div.col.col-graph", {}, canvasEl, detailsEl),
        h("div.col.col-trace", {}, traceEl, steerEl))));

  const details = mountDetails(detailsEl, { questId });
  const canvas = mountCanvas(canvasEl, { questId, onSelect: (node, view, opts) => details.show(node, view, opts) });
  const trace = mountTrace(traceEl, { questId });
  const steer = mountSteering(steerEl, { questId });

  // The header and the Canvas follow the quest by polling its small status route: one
  // request every 2 s, and the Canvas is refetched only when the log moved (last_seq).
  let seenSeq = null;
  const stop = every(2000, async () => {
    try {
      const q = await api(`/api/quests/${encodeURIComponent(questId)}`);
      problem.replaceChildren();
      title.textContent = q.title || questId;
      document.title = `${q.title || questId} — ds-events`;
      status.textContent = q.status;
      status.dataset.status = q.status;
      anchor.textContent = q.anchor;
      showHealth(q, health, healthLine);
      if (seenSeq !== null && q.last_seq !== seenSeq) canvas.refresh();
      seenSeq = q.last_seq;
    } catch (err) {
      problem.replaceChildren(errorBox(err));
    }
  });
  return {
    close() {
      stop();
      for (const part of [trace, steer, canvas, details]) part.close();
    },
  };
}

/** The quest's health (GET /api/quests/{id}'s `health`) in its badge and summary line;
 * the quest section carries data-health so a failed quest's whole header stands out. */
function showHealth(q, badge, line) {
  const hl = q.health && typeof q.health === "object" ? q.health : null;
  const state = hl && hl.state ? hl.state : "";
  badge.hidden = !state;
  badge.textContent = state.replace(/_/g, " ");
  badge.dataset.health = state;
  badge.title = hl && hl.summary ? hl.summary : "";
  const summary = hl && hl.summary ? hl.summary : "";
  line.hidden = !(summary && needsAttention(state));
  line.textContent = summary;
  line.dataset.health = state;
  const section = badge.closest("section.quest");
  if (section) section.dataset.health = state;
}

window.addEventListener("hashchange", route);
route();
