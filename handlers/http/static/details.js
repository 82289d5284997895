// Node details beside the Canvas, from GET /api/quests/{id}/nodes/{ref}: the branch's git
// state (head commit, ahead/behind its parent), metrics against the baseline, the
// artifact payload, the changed files and the related actions.
// mountDetails(el, {questId}) -> {show(node, view, {quiet}), close()}.
import { api } from "./api.js";
import { h, errorBox } from "./dom.js";

export function mountDetails(el, { questId }) {
  let generation = 0;
  let controller = null;
  const body = h("div.details-body", {}, h("p.muted", {}, "Click a node to see its details."));
  el.append(h("div.pane-head", {}, h("h2", {}, "Details")), body);

  // quiet: a refresh of the node shown (the Canvas redrew): no loading text, and a
  // failed refresh keeps what is shown.
  async function show(node, view, { quiet = false } = {}) {
    const mine = ++generation;
    controller?.abort();
    controller = new AbortController();
    const ref = view === "branch" ? `branch:${node.id}` : node.id;
    if (!quiet) body.replaceChildren(h("p.muted", {}, `Loading ${node.label || node.id}…`));
    let d;
    try {
      d = await api(`/api/quests/${encodeURIComponent(questId)}/nodes/${encodeURIComponent(ref)}`, { signal: controller.signal });
    } catch (err) {
      if (err.name === "AbortError" || mine !== generation || quiet) return;
      body.replaceChildren(h("h3.node-title", {}, node.label || node.id), errorBox(err));
      return;
    }
    if (mine !== generation) return;
    body.dataset.ref = d.ref;
    // A section with nothing to show is null: left out (replaceChildren would write
    // each null as the text "null").
    body.replaceChildren(...[
      h("h3.node-title", { "data-node": d.ref }, titleOf(d, node), " ", h("span.badge", {}, kindOf(d))),
      gitSection(d.git),
      metricsSection(d.metrics),
      artifactSection(d.artifact),
      filesSection(d.changed_files),
      relatedSection(d.node),
    ].filter((part) => part !== null && part !== undefined));
  }

  return { show, close() { generation++; controller?.abort(); el.replaceChildren(); } };
}

// The node's own title: an artifact's (an analysis slice's branch is labelled on the
// Canvas with the title of the run it branched from, which names the idea, not the slice),
// else the Canvas label.
function titleOf(d, node) {
  const p = d.artifact && d.artifact.payload;
  const own = p && typeof p.title === "string" && p.title ? p.title : null;
  return own || node.label || node.id;
}

function kindOf(d) {
  if (d.artifact) return d.artifact.kind;
  return { branch_node: "branch", stage_node: "stage", event_node: "event" }[d.node_kind] || d.node_kind;
}

function section(name, title, ...content) {
  return h(`section.d-${name}`, { "data-section": name }, h("h4", {}, title), ...content);
}

function gitSection(git) {
  if (!git) return null;
  const rows = [
    ["branch", git.branch],
    ["head commit", h("code", { title: git.head_commit }, (git.head_commit || "").slice(0, 12))],
    ["subject", git.subject],
  ];
  if (git.parent_ref) rows.push(["vs parent", h("span.ahead-behind", {}, `${git.ahead} ahead, ${git.behind} behind `, h("code", {}, git.parent_ref))]);
  rows.push(["commits", String(git.commit_count)]);
  if (git.is_current) rows.push(["workspace", "current"]);
  return section("git", "Branch", facts(rows));
}

function metricsSection(m) {
  if (!m) return null;
  const names = Object.keys(m.metrics_summary || {}).sort();
  if (!names.length) return null;
  const rows = names.map((name) => {
    const c = (m.comparisons || {})[name];
    const delta = c ? `${c.delta >= 0 ? "+" : "−"}${fmt(Math.abs(c.delta))}` : "";
    return h("tr", { "data-metric": name },
      h("th", {}, name, name === m.primary_metric ? " ★" : ""),
      h("td", {}, fmt(m.metrics_summary[name])),
      h("td", {}, c ? fmt(c.baseline) : "—"),
      h(`td${c ? (c.better ? ".delta-up" : ".delta-down") : ""}`, {}, delta));
  });
  const verdict = m.progress && m.progress.reason ? h("p.muted", {}, m.progress.reason) : null;
  return section("metrics", `Metrics${m.baseline_id ? ` vs baseline ${m.baseline_id}` : ""}`,
    h("table.metrics", {}, h("thead", {}, h("tr", {}, h("th", {}, "metric"), h("th", {}, "value"), h("th", {}, "baseline"), h("th", {}, "Δ"))), h("tbody", {}, rows)),
    verdict);
}

function artifactSection(a) {
  if (!a) return null;
  return section("artifact", `Artifact ${a.id}`,
    h("details", { open: true }, h("summary", {}, `${a.kind} payload`), h("pre.payload", {}, JSON.stringify(a.payload, null, 2))));
}

function filesSection(c) {
  if (!c) return null;
  const list = c.files.length
    ? h("ul.files", {}, c.files.map((f) => h("li", {}, h("code", {}, f.path), h("span.muted", {}, ` ${f.status} +${f.additions} −${f.deletions}`))))
    : h("p.muted", {}, "No files changed.");
  const what = c.scope === "head_commit" ? "Changed by its head commit" : "Changed files";
  return section("files", `${what} (${c.file_count}${c.truncated ? "+" : ""})`, list);
}

function relatedSection(node) {
  if (!node) return null;
  const items = [...(node.actions || []), ...(node.related || [])];
  const list = items.length
    ? h("ul.related", {}, items.map((a) => h("li", {}, h("code", {}, a.type || a.node_kind || ""), " ", a.title || a.stage || a.ref || "", a.seq ? h("span.muted", {}, ` #${a.seq}`) : null)))
    : h("p.muted", {}, "No related actions.");
  return section("related", "Related actions", list);
}

function facts(rows) {
  return h("dl.facts", {}, rows.filter(([, v]) => v !== null && v !== undefined && v !== "").flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function fmt(x) {
  if (typeof x !== "number") return String(x ?? "");
  return Number.isInteger(x) ? String(x) : String(Number(x.toPrecision(6)));
}
