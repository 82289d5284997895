// Node details beside the Canvas: what the selected node is, and what is known about it.
// mountDetails(el, {questId}) -> {show(node, view), close()}.
import { api } from "./api.js";
import { h, errorBox } from "./dom.js";

export function mountDetails(el, { questId }) {
  let generation = 0;
  const body = h("div.details-body", {}, h("p.muted", {}, "Click a node to see its details."));
  el.append(h("div.pane-head", {}, h("h2", {}, "Details")), body);

  async function show(node, view) {
    const mine = ++generation;
    body.replaceChildren(h("p.muted", {}, `Loading ${node.id}…`));
    const ref = view === "branch" ? `branch:${node.id}` : node.id;
    let trace = null;
    let problem = null;
    try {
      trace = await api(`/api/quests/${encodeURIComponent(questId)}/node-traces/${encodeURIComponent(ref)}`);
    } catch (err) {
      problem = err;
    }
    if (mine !== generation) return;
    body.replaceChildren(
      h("h3.node-title", { "data-node": node.id }, node.label || node.id),
      facts(node),
      problem ? errorBox(problem) : related(trace));
  }

  return { show, close() { generation++; el.replaceChildren(); } };
}

function facts(node) {
  const rows = Object.entries(node).filter(([k, v]) => !["actions", "event_refs", "label", "recent_artifacts"].includes(k) && v !== null && v !== "" && typeof v !== "object");
  return h("dl.facts", {}, rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))]));
}

function related(trace) {
  const items = [...(trace.actions || []), ...(trace.related || [])];
  if (!items.length) return h("p.muted", {}, "No related actions.");
  return h("section.related", {}, h("h4", {}, "Related actions"),
    h("ul", {}, items.map((a) => h("li", {}, h("code", {}, a.type || a.node_kind || ""), " ", a.title || a.ref || "", a.seq ? h("span.muted", {}, ` #${a.seq}`) : null))));
}
