// A compact layered ("Sugiyama-style") layout for the Canvas DAGs, written for this page:
//   1. cycles are broken by ignoring the edges a depth-first search finds going back;
//   2. each node's layer is its longest path from a source;
//   3. nodes are ordered within a layer by a few down/up sweeps of the barycenter of their
//      neighbours in the adjacent layer (fewer crossings);
//   4. layers become rows, positions become x; each row is centred on the widest.
// layout(nodes, edges, {w, h, gapX, gapY}) -> {nodes: Map(id -> {x, y}), edges: [{source,
// target, points}], width, height}. Deterministic: same input, same picture.

export function layout(nodes, edges, { w = 180, h = 48, gapX = 28, gapY = 40, margin = 16 } = {}) {
  const ids = nodes.map((n) => n.id);
  const known = new Set(ids);
  const es = edges.filter((e) => known.has(e.source) && known.has(e.target) && e.source !== e.target);
  const out = new Map(ids.map((id) => [id, []]));
  for (const e of es) out.get(e.source).push(e.target);

  // 1. back edges (cycles) are left out of the layering
  const state = new Map();
  const back = new Set();
  const visit = (start) => {
    const stack = [[start, 0]];
    state.set(start, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [v, i] = top;
      const next = out.get(v)[i];
      if (next === undefined) { state.set(v, 2); stack.pop(); continue; }
      top[1] = i + 1;
      const st = state.get(next);
      if (st === 1) back.add(`${v}\u0000${next}`);
      else if (!st) { state.set(next, 1); stack.push([next, 0]); }
    }
  };
  for (const id of ids) if (!state.get(id)) visit(id);
  const dag = es.filter((e) => !back.has(`${e.source}\u0000${e.target}`));

  // 2. longest-path layers (Kahn's order)
  const indeg = new Map(ids.map((id) => [id, 0]));
  const succ = new Map(ids.map((id) => [id, []]));
  const pred = new Map(ids.map((id) => [id, []]));
  for (const e of dag) { indeg.set(e.target, indeg.get(e.target) + 1); succ.get(e.source).push(e.target); pred.get(e.target).push(e.source); }
  const layer = new Map(ids.map((id) => [id, 0]));
  const queue = ids.filter((id) => indeg.get(id) === 0);
  for (let k = 0; k < queue.length; k++) {
    const v = queue[k];
    for (const t of succ.get(v)) {
      layer.set(t, Math.max(layer.get(t), layer.get(v) + 1));
      indeg.set(t, indeg.get(t) - 1);
      if (indeg.get(t) === 0) queue.push(t);
    }
  }
  const rows = [];
  for (const id of ids) (rows[layer.get(id)] ||= []).push(id);
  for (let r = 0; r < rows.length; r++) rows[r] ||= [];

  // 3. barycenter sweeps
  const pos = new Map();
  const index = () => rows.forEach((row) => row.forEach((id, i) => pos.set(id, i)));
  index();
  const bary = (id, nbrs) => {
    const ps = nbrs.get(id).map((n) => pos.get(n));
    return ps.length ? ps.reduce((a, b) => a + b, 0) / ps.length : pos.get(id);
  };
  for (let sweep = 0; sweep < 4; sweep++) {
    const down = sweep % 2 === 0;
    const order = down ? rows.keys() : [...rows.keys()].reverse();
    for (const r of order) {
      const nbrs = down ? pred : succ;
      const keyed = rows[r].map((id, i) => [bary(id, nbrs), i, id]);
      keyed.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      rows[r] = keyed.map((k) => k[2]);
      rows[r].forEach((id, i) => pos.set(id, i));
    }
  }

  // 4. coordinates
  const widest = Math.max(1, ...rows.map((r) => r.length));
  const width = margin * 2 + widest * w + (widest - 1) * gapX;
  const placed = new Map();
  rows.forEach((row, r) => {
    const rowWidth = row.length * w + (row.length - 1) * gapX;
    const x0 = (width - rowWidth) / 2;
    row.forEach((id, i) => placed.set(id, { x: x0 + i * (w + gapX), y: margin + r * (h + gapY), w, h }));
  });
  const height = margin * 2 + rows.length * h + Math.max(0, rows.length - 1) * gapY;
  const routed = es.map((e) => {
    const a = placed.get(e.source);
    const b = placed.get(e.target);
    const from = b.y > a.y ? [a.x + w / 2, a.y + h] : [a.x + w / 2, a.y];
    const to = b.y > a.y ? [b.x + w / 2, b.y] : [b.x + w / 2, b.y + h];
    return { ...e, points: [from, to], back: back.has(`${e.source}\u0000${e.target}`) };
  });
  return { nodes: placed, edges: routed, width, height };
}
