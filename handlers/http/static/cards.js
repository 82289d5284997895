// What each event of the log looks like in the trace.
//
// cardKey(event) says which card an event belongs to (null: not shown). Several events
// can make one card: a tool call's start and finish, a shell session's start, progress
// and end. drawCard(events, ctx) draws a card from its events (oldest first); the trace
// redraws a card when another of its events arrives. Text from the log is always set as
// text (never parsed as HTML).

import { h } from "./dom.js";

export { cardKey, drawCard };

// The MCP namespaces the runtime serves: their calls are recorded by the servers
// themselves as tool.call_* events, which carry the structured result, so the runner's
// own view of those calls (runner.tool_call / runner.tool_result) would only repeat them.
const OUR_SERVERS = new Set(["memory", "artifact", "bash_exec"]);

// Bookkeeping with nothing to show a person.
const HIDDEN = new Set(["mailbox.delivered", "delivery.attempted", "runner.process_started", "memory.guard_configured"]);

function cardKey(e, ctx) {
  const t = e.type;
  if (HIDDEN.has(t)) return null;
  if (t === "tool.call_started" || t === "tool.call_finished") return `tool:${e.call_id}`;
  if (t === "runner.tool_call" || t === "runner.tool_result") return runnerToolKey(e, ctx);
  if (t.startsWith("bash.")) return `bash:${e.session_id}`;
  // A card written through the memory tool is shown by that tool call's card.
  if (t === "memory.card_written" && String(e.actor || "").startsWith("mcp:")) return null;
  return `e:${e.seq}`;
}

// The runner's own record of a tool call: shown for the agent's own tools (shell, file
// edits), hidden for calls to our servers. A result whose call is not in view yet (it
// is in an older page) waits in ctx.orphans until the call arrives.
function runnerToolKey(e, ctx) {
  const key = `rtool:${e.run_id || ""}:${e.call_id}`;
  if (e.type === "runner.tool_call") {
    if (isOurs(e)) {
      remember(ctx.ourCalls, key, true);
      return null;
    }
    remember(ctx.theirCalls, key, true);
    return key;
  }
  if (ctx.ourCalls.has(key)) return null;
  if (ctx.theirCalls.has(key)) return key;
  remember(ctx.orphans, key, e);
  return null;
}

// Bounded memo: the oldest entry goes when it is full.
function remember(map, key, value) {
  map.set(key, value);
  if (map.size > 2000) map.delete(map.keys().next().value);
}

function isOurs(e) {
  const server = e.server || String(e.tool || "").split(".")[0];
  return OUR_SERVERS.has(server);
}

// -- drawing ------------------------------------------------------------------------------

function drawCard(events, ctx) {
  const first = events[0];
  const t = first.type;
  if (t.startsWith("tool.")) return toolCard(events, ctx);
  if (t.startsWith("runner.tool_")) return runnerToolCard(events, ctx);
  if (t.startsWith("bash.")) return bashCard(events, ctx);
  const draw = DRAW[t];
  if (draw) return draw(first, ctx);
  if (t.startsWith("artifact.") || t.startsWith("git.") || t.startsWith("registry.")) return artifactCard(first);
  return line("event", `${t}`, summaryOf(first));
}

const DRAW = {
  "conversation.message": (e) =>
    bubble(e.role === "user" ? "user" : "agent", e.role === "user" ? `you${e.source ? ` · ${e.source}` : ""}` : e.role, e.content),
  "runner.agent_message": (e) => bubble("agent", "agent", e.text),
  "runner.reasoning": (e) =>
    h("details", { class: "card reasoning" }, h("summary", {}, "reasoning"), h("div", { class: "text" }, e.text)),
  "interaction.sent": interactionCard,
  "interaction.replied": (e) =>
    bubble("user", `you answered${e.source ? ` · ${e.source}` : ""}`, e.option_id ? `${e.text} (${e.option_id})` : e.text),
  "runner.turn_started": (e) =>
    divider("turn", `turn started · ${e.skill}${e.attempt > 1 ? ` · attempt ${e.attempt}` : ""} · ${e.runner}${e.model ? ` ${e.model}` : ""}`),
  "runner.turn_finished": (e) =>
    divider(`turn ${e.outcome}`, `turn ${e.outcome}${e.reason ? ` (${e.reason})` : ""} · ${e.tool_calls} tool calls · ${seconds(e.duration_ms)}`),
  "runner.turn_retry_scheduled": (e) => divider("turn retry", `retry as attempt ${e.attempt} in ${e.delay_s} s${e.reason ? `: ${e.reason}` : ""}`),
  "quest.created": (e) => divider("quest", `quest created: ${e.title}`),
  "quest.control": (e) => line(`control ${e.action}`, e.action === "pause" ? "paused" : e.action === "stop" ? "stopped" : "resumed", e.reason || `by ${e.actor}`),
  "quest.anchor_changed": (e) => divider("stage", `stage ${e.previous ? `${e.previous} → ` : "→ "}${e.anchor}`),
  "quest.completed": (e) => line("completed", "quest completed", e.summary),
  "quest.runner_set": (e) => line("event", "runner set", `${e.runner || "home default"}${e.model ? ` · ${e.model}` : ""}`),
  "memory.card_written": (e) => memoryCardWritten(e),
  "memory.card_superseded": (e) => line("memory", "memory superseded", `${e.card_id} → ${e.by_card_id}${e.reason ? ` (${e.reason})` : ""}`),
  "memory.card_promoted": (e) => line("memory", "memory promoted", `${e.card_id} → global ${e.global_card_id}`),
  "memory.card_imported": (e) => line("memory", "memory imported", `${e.card_id} · ${e.kind} · ${e.title}`),
  "log.recovered": (e) => line("warning", "log recovered", `${e.reason}: ${e.dropped_events || 0} event(s) quarantined`),
  "log.repaired": (e) => line("warning", "log repaired", `${e.removed_lines.length} line(s) quarantined`),
};

// -- tool calls ---------------------------------------------------------------------------

function toolCard(events, ctx) {
  const started = events.find((e) => e.type === "tool.call_started");
  const finished = events.find((e) => e.type === "tool.call_finished");
  const e = finished || started;
  const args = (finished && Object.keys(finished.arguments || {}).length ? finished.arguments : started?.arguments) || {};
  if (e.namespace === "memory") return memoryToolCard(e, args, finished, ctx);
  const status = finished ? finished.status : openStatus(e, ctx);
  const card = h("div", { class: `card tool compact ${status}` },
    h("span", { class: "label" }, `${e.namespace}.${e.tool}`),
    h("span", { class: `badge ${status}` }, status),
    finished && finished.duration_ms ? h("span", { class: "dim" }, ms(finished.duration_ms)) : null,
  );
  if (finished && finished.status === "error") card.append(errorLine(finished));
  else if (e.namespace === "bash_exec" && args.command) card.append(h("code", { class: "cmd" }, clip(args.command, 120)));
  return card;
}

// A memory tool call: operation, scope, kind, title or query, and what came of it.
function memoryToolCard(e, args, finished, ctx) {
  const result = finished && typeof finished.result === "object" && finished.result !== null ? finished.result : {};
  const op = e.tool;
  let status = finished ? finished.status : openStatus(e, ctx);
  if (status === "ok" && result.status && result.status !== "written" && result.ok === false) status = result.status;
  const scope = args.scope || result.scope || "quest";
  const kind = args.kind || result.kind || args.record_type || "";
  const card = h("div", { class: `card memory ${statusClass(status)}`, "data-op": op },
    h("div", { class: "head" },
      h("span", { class: "label" }, `memory.${op}`),
      h("span", { class: `badge ${statusClass(status)}` }, status.replace(/_/g, " ")),
      h("span", { class: "dim" }, `scope ${scope}`),
      kind ? h("span", { class: "dim" }, `kind ${kind}`) : null,
    ),
  );
  const subject = args.query !== undefined ? ["query", args.query] : args.title ? ["title", args.title]
    : args.card_id ? ["card", args.card_id] : args.text ? ["text", args.text] : null;
  if (subject) card.append(h("div", { class: "field" }, h("span", { class: "dim" }, `${subject[0]} `), clip(String(subject[1]), 200)));
  if (!finished) return card;
  if (finished.status === "error") {
    card.append(errorLine(finished));
    return card;
  }
  if (finished.truncated || typeof finished.result === "string") card.append(h("div", { class: "dim" }, "result truncated in the log"));
  if (result.status === "written") {
    card.append(h("div", { class: "field saved" }, h("span", { class: "dim" }, "saved "), `${result.id}${result.title && !args.title ? ` · ${result.title}` : ""}`));
    const summary = args.body || args.summary || args.text || "";
    if (summary) card.append(h("div", { class: "summary" }, clip(summary, 240)));
  } else if (result.status === "duplicate_candidates") {
    card.append(h("div", { class: "field refused" }, "duplicate refused: nothing written; similar cards:"));
    card.append(cardList((result.candidates || []).map((c) => [c.id, c.title, c.similarity !== undefined ? `similarity ${Number(c.similarity).toFixed(2)}` : ""])));
  } else if (result.status === "config_polluted") {
    card.append(h("div", { class: "field refused" }, `refused: ${result.message || "config settings in the title"}`));
  } else if (Array.isArray(result.items)) {
    card.append(h("div", { class: "field" }, `${result.count ?? result.items.length} found`));
    if (result.items.length) card.append(cardList(result.items.map((c) => [c.id, c.title, c.score !== undefined ? relevance(c.score, result.items) : c.kind])));
  } else if (result.global_id) {
    card.append(h("div", { class: "field saved" }, `${result.id} → global ${result.global_id}`));
  } else if (result.title && result.id) {
    card.append(cardList([[result.id, result.title, result.kind]]));
  } else if (result.total_active !== undefined) {
    card.append(h("div", { class: "field" }, `${result.total_active} active cards · ${result.ok ? "healthy" : "needs attention"}`));
  } else if (result.count !== undefined) {
    card.append(h("div", { class: "field" }, `${result.count} found`));
  }
  return card;
}

function memoryCardWritten(e) {
  return h("div", { class: "card memory ok" },
    h("div", { class: "head" },
      h("span", { class: "label" }, "memory card written"),
      h("span", { class: "dim" }, `scope ${e.scope}`),
      h("span", { class: "dim" }, `kind ${e.kind}`),
      h("span", { class: "dim" }, `by ${e.actor}`),
    ),
    h("div", { class: "field saved" }, `${e.card_id} · ${e.title}`),
    e.body ? h("div", { class: "summary" }, clip(e.body, 240)) : null,
  );
}

function runnerToolCard(events, ctx) {
  const call = events.find((e) => e.type === "runner.tool_call");
  const key = call ? `rtool:${call.run_id || ""}:${call.call_id}` : "";
  const result = events.find((e) => e.type === "runner.tool_result") || ctx.orphans.get(key);
  const status = result ? result.status : openStatus(call || events[0], ctx);
  const card = h("div", { class: `card tool compact ${status}` },
    h("span", { class: "label" }, call ? call.tool : "tool"),
    h("span", { class: `badge ${status}` }, status),
  );
  if (call && call.arguments !== null && call.arguments !== undefined) {
    const a = call.arguments;
    card.append(h("code", { class: "cmd" }, clip(typeof a === "string" ? a : a.command || a.cmd || JSON.stringify(a), 160)));
  }
  if (result && result.output !== null && result.output !== undefined) {
    const text = typeof result.output === "string" ? result.output : JSON.stringify(result.output);
    card.append(h("details", {}, h("summary", {}, "output"), h("pre", { class: "output" }, clip(text, 4000))));
  }
  return card;
}

// -- shell sessions -----------------------------------------------------------------------

// A session's card: command, status, progress, and (opened) the tail of its output,
// fetched from the daemon when the card is opened and again when the session changes.
function bashCard(events, ctx) {
  const s = bashState(events);
  const progress = Object.entries(s.progress || {}).map(([k, v]) => `${k} ${typeof v === "number" ? fmtNum(v) : v}`).join(" · ");
  const outputBox = h("pre", { class: "output" }, "");
  const details = h("details", { class: "tail" }, h("summary", {}, "output"), outputBox);
  const load = () => {
    outputBox.textContent = "loading…";
    ctx.bashLog(s.id, 20).then(
      (page) => {
        const lines = page.lines || [];
        outputBox.textContent = lines.length ? lines.map(([, text]) => text).join("\n") : "(no output)";
      },
      (err) => { outputBox.textContent = `${err.code || "error"}: ${err.message}`; },
    );
  };
  details.addEventListener("toggle", () => { if (details.open) load(); });
  if (ctx.openTails.has(s.id)) {
    details.open = true;  // it was open before this redraw: keep it open, with fresh output
  }
  details.addEventListener("toggle", () => {
    if (details.open) ctx.openTails.add(s.id);
    else ctx.openTails.delete(s.id);
  });
  return h("div", { class: `card bash ${s.status}`, "data-session": s.id },
    h("div", { class: "head" },
      h("span", { class: "label" }, `shell ${s.id}`),
      h("span", { class: `badge ${s.status}` }, s.status),
      s.exit_code !== null && s.exit_code !== undefined ? h("span", { class: "dim" }, `exit ${s.exit_code}`) : null,
      s.duration ? h("span", { class: "dim" }, `${s.duration.toFixed(1)} s`) : null,
    ),
    s.command ? h("code", { class: "cmd" }, clip(s.command, 200)) : null,
    progress ? h("div", { class: "field progress" }, h("span", { class: "dim" }, "progress "), progress) : null,
    details,
  );
}

// A session's state from its events (oldest first): the last word wins.
function bashState(events) {
  const s = { id: events[0].session_id, status: "running", progress: null, command: "", exit_code: null, duration: 0 };
  for (const e of events) {
    switch (e.type) {
      case "bash.session_started": s.command = e.command; break;
      case "bash.progress": s.progress = e.data; break;
      case "bash.kill_requested": if (s.status === "running") s.status = "stopping"; break;
      case "bash.session_exited": s.status = e.status; s.exit_code = e.exit_code; s.duration = e.duration_seconds; break;
      case "bash.session_lost": s.status = "lost"; break;
      default: break;
    }
  }
  return s;
}

// -- interactions and artifacts -----------------------------------------------------------

function interactionCard(e) {
  const card = bubble("agent", e.kind === "decision_request" ? "agent asks" : `agent · ${e.kind.replace(/_/g, " ")}`, e.message);
  card.classList.add(`interaction-${e.kind}`);
  if (e.options && e.options.length) {
    card.append(h("ul", { class: "options" }, ...e.options.map((o) =>
      h("li", {}, h("b", {}, o.label), o.recommended ? h("span", { class: "dim" }, " (recommended)") : null,
        o.description ? h("span", { class: "dim" }, ` — ${o.description}`) : null))));
  }
  return card;
}

function artifactCard(e) {
  const t = e.type;
  const metrics = (m, cmp) => h("div", { class: "metrics" }, ...Object.entries(m || {}).map(([k, v]) => {
    const c = cmp && cmp[k];
    const delta = c && typeof c.delta === "number" ? ` (${c.delta >= 0 ? "+" : ""}${fmtNum(c.delta)} vs ${fmtNum(c.baseline)})` : "";
    return h("span", { class: `metric ${c ? (c.better ? "better" : "worse") : ""}` }, `${k} ${fmtNum(v)}${delta}`);
  }));
  const compact = (label, text, ...extra) => h("div", { class: "card artifact compact" },
    h("div", { class: "head" }, h("span", { class: "label" }, label), text ? h("span", {}, text) : null), ...extra);
  switch (t) {
    case "artifact.recorded": {
      const p = e.payload || {};
      const gist = p.title || p.verdict || p.summary || p.message || p.reason || "";
      return compact(`${e.kind} ${e.artifact_id}`, clip(String(gist), 160), p.reason && p.reason !== gist ? h("div", { class: "dim" }, clip(String(p.reason), 200)) : null);
    }
    case "artifact.main_experiment_recorded":
      return compact(`main run ${e.run}`, e.title, metrics(e.metrics_summary, e.comparisons), e.summary ? h("div", { class: "dim" }, e.summary) : null);
    case "artifact.baseline_confirmed":
      return compact(`baseline ${e.baseline_id} confirmed`, `primary ${e.primary_metric}`, metrics(e.metrics_summary));
    case "artifact.analysis_slice_recorded":
      return compact(`slice ${e.slice_id} ${e.status}`, e.summary, metrics(e.metrics_summary));
    case "artifact.analysis_campaign_created":
      return compact(`campaign ${e.campaign_id}`, e.title, h("div", { class: "dim" }, `${e.slices.length} slice(s) from ${e.parent_branch}`));
    case "artifact.baseline_published": return compact(`baseline ${e.baseline_id} published`, (e.payload || {}).title || "");
    case "artifact.baseline_attached": return compact(`baseline ${e.baseline_id} attached`, e.variant_id || "");
    case "artifact.baseline_waived": return compact("baseline waived", e.reason);
    case "git.checkpointed": return compact(`commit ${String(e.sha).slice(0, 8)}`, `${e.branch}: ${e.message}`);
    case "git.branch_prepared": return compact(`branch ${e.branch_kind}`, e.branch);
    default: return compact(t, summaryOf(e));
  }
}

// -- small pieces -------------------------------------------------------------------------

// A call with no result yet: running while its turn runs; "interrupted" once its turn
// ended without it (a pause or stop cut the turn off mid-call, or the agent died).
function openStatus(e, ctx) {
  const ended = e && e.run_id && ctx && ctx.endedRuns ? ctx.endedRuns.get(e.run_id) : undefined;
  return ended === undefined ? "running" : "interrupted";
}

// A search hit's score relative to the best hit of the search (BM25 scores are tiny
// and unitless: printed with two decimals they all read 0.00).
function relevance(score, items) {
  const top = Math.max(...items.map((c) => Number(c.score) || 0));
  const raw = Number(score);
  if (!(top > 0) || !Number.isFinite(raw)) return `score ${raw}`;
  return `relevance ${Math.round((100 * raw) / top)}% (score ${raw.toPrecision(3)})`;
}

function bubble(side, who, text) {
  return h("div", { class: `card bubble ${side}` }, h("div", { class: "who" }, who), h("div", { class: "text" }, text));
}

function divider(cls, text) {
  return h("div", { class: `card divider ${cls}` }, h("span", {}, text));
}

function line(cls, label, text) {
  return h("div", { class: `card line ${cls}` }, h("span", { class: "label" }, label), text ? h("span", { class: "dim" }, ` ${text}`) : null);
}

function errorLine(finished) {
  return h("div", { class: "failure" }, h("code", {}, finished.error_code || "error"), ` ${finished.error_message || ""}`);
}

function cardList(rows) {
  if (!rows.length) return h("div", { class: "dim" }, "none");
  return h("ul", { class: "cards-found" }, ...rows.map(([id, title, extra]) =>
    h("li", {}, h("code", {}, id || ""), ` ${title || ""}`, extra ? h("span", { class: "dim" }, ` · ${extra}`) : null)));
}

function summaryOf(e) {
  for (const k of ["title", "summary", "message", "reason", "text", "content"]) if (typeof e[k] === "string" && e[k]) return clip(e[k], 160);
  return "";
}

function statusClass(s) {
  return s === "ok" || s === "written" ? "ok" : s === "running" ? "running" : s === "error" ? "error" : "refused";
}

function clip(text, n) {
  const s = String(text ?? "");
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

function fmtNum(v) {
  return typeof v === "number" ? String(Math.round(v * 10000) / 10000) : String(v);
}

function seconds(msValue) {
  return `${((msValue || 0) / 1000).toFixed(1)} s`;
}

function ms(v) {
  return v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`;
}
