// The quest's Canvas: the branch, event and stage views of GET /api/quests/{id}/canvas,
// drawn as an SVG graph laid out on the page (layout.js). Nodes are focusable buttons:
// a click (or Enter) selects one and calls onSelect(node, view); a live redraw calls
// onSelect(node, view, {quiet: true}) again for the node still selected.
// mountCanvas(el, {questId, onSelect}) -> {refresh(), close()}.
import { api } from "./api.js";
import { h, s, errorBox } from "./dom.js";
import { layout } from "./layout.js";

export const VIEWS = [
  ["branch", "Branches"],
  ["event", "Events"],
  ["stage", "Stages"],
];
const NODE_W = 200;
const NODE_H = 50;
const NODE_W_WRAPPED = 228;  // an action such as launch_analysis_campaign fits one line
const NODE_H_WRAPPED = 66;
const TEXT_X = 10;
const LABEL_FONT = "600 13px";  // .node .n-label in style.css
const SUB_FONT = "11px";  // .node .n-sub

export function mountCanvas(el, { questId, onSelect }) {
  let view = "branch";
  let selected = null;
  let generation = 0;
  let controller = null;
  const tabs = h("div.tabs", { role: "tablist", "aria-label": "Canvas view" },
    VIEWS.map(([name, label]) => h("button.tab", {
      type: "button", role: "tab", "data-view": name, "aria-selected": String(name === view),
      onclick: () => { if (view !== name) { view = name; selected = null; markTabs(); load(); } },
    }, label)));
  const info = h("span.canvas-info.muted");
  const board = h("div.board", { "data-view": view });
  el.append(h("div.pane-head", {}, h("h2", {}, "Canvas"), tabs, info), board);

  function markTabs() {
    for (const b of tabs.querySelectorAll("button")) b.setAttribute("aria-selected", String(b.dataset.view === view));
  }

  async function load() {
    const mine = ++generation;
    controller?.abort();
    controller = new AbortController();
    let doc;
    try {
      doc = await api(`/api/quests/${encodeURIComponent(questId)}/canvas?view=${view}`, { signal: controller.signal });
    } catch (err) {
      if (err.name === "AbortError" || mine !== generation) return;
      board.replaceChildren(errorBox(err));
      return;
    }
    if (mine !== generation) return;  // a newer view was asked for meanwhile
    board.dataset.view = view;
    board.dataset.seq = doc.seq;
    info.textContent = `${doc.nodes.length} nodes · seq ${doc.seq}`;
    const [top, left] = [board.scrollTop, board.scrollLeft];  // a live redraw keeps the reader's place
    board.replaceChildren(doc.nodes.length ? draw(doc) : h("p.muted", {}, "Nothing here yet."));
    board.scrollTo(left, top);
    // A live redraw: the selected node's details may have changed too (new actions, a
    // commit, metrics); they are fetched again in place, without a loading flash.
    const still = selected === null ? undefined : doc.nodes.find((n) => n.id === selected);
    if (still) onSelect?.(still, doc.view, { quiet: true });
  }

  function draw(doc) {
    // The event view's titles are sentences (a decision's verdict and action, a report's
    // title): its nodes are taller and the title wraps onto a second line rather than
    // losing its end to a 23-character clip.
    const wrap = doc.view === "event";
    const g = layout(doc.nodes, doc.edges, { w: wrap ? NODE_W_WRAPPED : NODE_W, h: wrap ? NODE_H_WRAPPED : NODE_H });
    const byId = new Map(doc.nodes.map((n) => [n.id, n]));
    // Shrinks to fit its pane down to 60% (text stays legible); beyond that the pane scrolls.
    const svg = s("svg", {
      class: "graph", viewBox: `0 0 ${g.width} ${g.height}`, role: "group", "aria-label": `${doc.view} view`,
    });
    svg.style.width = "100%";
    svg.style.maxWidth = `${g.width}px`;
    svg.style.minWidth = `${Math.round(g.width * 0.6)}px`;
    svg.append(s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }))));
    for (const e of g.edges) {
      const [[x1, y1], [x2, y2]] = e.points;
      const my = (y1 + y2) / 2;
      svg.append(s("path", {
        class: `edge rel-${e.relation || "link"}${e.back ? " back" : ""}`, d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`,
        "marker-end": "url(#arrow)", "data-source": e.source, "data-target": e.target,
      }));
    }
    for (const [id, p] of g.nodes) {
      const n = byId.get(id);
      const [line1, line2, kind] = describe(doc.view, n);
      const node = s("g", {
        class: `node kind-${cssName(kind)}${n.status ? ` status-${cssName(n.status)}` : ""}${id === selected ? " selected" : ""}`,
        transform: `translate(${p.x},${p.y})`, tabindex: 0, role: "button", "data-id": id, "aria-label": `${line1}: ${line2}`,
      },
      s("title", {}, `${n.label || id}\n${line2}`),
      s("rect", { width: p.w, height: p.h, rx: 8 }),
      ...nodeText(line1, line2, p.w - 2 * TEXT_X, wrap));
      const choose = () => {
        selected = id;
        for (const other of svg.querySelectorAll(".node.selected")) other.classList.remove("selected");
        node.classList.add("selected");
        onSelect?.(n, doc.view);
      };
      node.addEventListener("click", choose);
      node.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); choose(); } });
      svg.append(node);
    }
    return svg;
  }

  load();
  return {
    refresh: load,
    close() { generation++; controller?.abort(); el.replaceChildren(); },
  };
}

/** [title line, detail line, kind] of a node in a view. */
function describe(view, n) {
  if (view === "branch") {
    const metric = n.latest_metric ? ` · ${n.latest_metric.name} ${n.latest_metric.value}` : "";
    const ab = n.ahead === null || n.ahead === undefined ? "" : ` · +${n.ahead}/−${n.behind}`;
    const title = n.run_kind === "analysis_slice" ? n.id.split("/").pop() : n.label;  // a slice shares its run's title
    return [title, `${n.branch_kind}${ab}${metric}`, n.branch_kind || "branch"];
  }
  if (view === "event") return [n.label || n.id, `${n.event_kind} · ${n.branch}${n.status ? ` · ${n.status}` : ""}`, n.event_kind || "event"];
  return [n.stage || n.label, `${n.branch} · ${n.event_count} event${n.event_count === 1 ? "" : "s"}`, "stage"];
}

/** The <text> lines of a node: its title (on up to two lines when wrapping) and its
 * detail line, each cut to what fits `width` pixels in its font. */
function nodeText(title, sub, width, wrap) {
  const titles = wrap ? fitLines(title, width, LABEL_FONT, 2) : [fit(String(title ?? ""), width, LABEL_FONT)];
  const out = titles.map((t, i) => s("text", { x: TEXT_X, y: 19 + i * 16, class: "n-label" }, t));
  out.push(s("text", { x: TEXT_X, y: 19 + titles.length * 16 + 2, class: "n-sub" }, fit(String(sub ?? ""), width, SUB_FONT)));
  return out;
}

// Text widths measured with the page's own font (a canvas context, no layout pass), so a
// line is cut where it really stops fitting, not at a guessed number of characters.
let measurer = null;
function textWidth(text, font) {
  measurer ||= document.createElement("canvas").getContext("2d");
  measurer.font = `${font} ${getComputedStyle(document.body).fontFamily}`;
  return measurer.measureText(text).width;
}

/** `text` cut with an ellipsis to fit `width` (whole when it fits). */
function fit(text, width, font) {
  if (textWidth(text, font) <= width) return text;
  let n = text.length;
  while (n > 1 && textWidth(`${text.slice(0, n - 1).trimEnd()}…`, font) > width) n--;
  return `${text.slice(0, n - 1).trimEnd()}…`;
}

/** `text` broken at spaces into at most `max` lines that fit `width`; the last is cut. */
function fitLines(text, width, font, max) {
  const words = String(text ?? "").split(/\s+/).filter(Boolean);
  const lines = [];
  let current = "";
  while (words.length && lines.length < max - 1) {
    const next = current ? `${current} ${words[0]}` : words[0];
    if (textWidth(next, font) <= width || !current) {
      current = next;
      words.shift();
      if (textWidth(current, font) > width) break;  // one word longer than the line: cut below
    } else {
      lines.push(current);
      current = "";
    }
  }
  const rest = [current, ...words].filter(Boolean).join(" ");
  if (rest) lines.push(fit(rest, width, font));
  return lines.length ? lines : [""];
}

function cssName(text) {
  return String(text).toLowerCase().replace(/[^a-z0-9_-]+/g, "-");
}
