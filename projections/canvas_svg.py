"""Render any canvas graph (``{"nodes": [...], "edges": [...]}``) as an SVG document.

Layered layout: a node's layer is the length of the longest edge path reaching it (a
cycle, which canvases do not make, is cut at the first revisit), so edges point down;
within a layer nodes keep their order in ``nodes``. Pure and deterministic: the same
graph always gives the same bytes. Labels are XML-escaped and shortened.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

__all__ = ["render_svg"]

_BOX_W, _BOX_H = 180, 36
_GAP_X, _GAP_Y = 24, 48
_MARGIN = 16
_LABEL_CHARS = 26


def render_svg(canvas: dict[str, Any]) -> str:
    nodes: list[dict[str, Any]] = canvas.get("nodes", [])
    ids = [str(n.get("id", n.get("ref"))) for n in nodes]
    known = set(ids)
    edges = [(str(e["source"]), str(e["target"]), str(e.get("relation", ""))) for e in canvas.get("edges", [])]
    edges = [(s, t, r) for s, t, r in edges if s in known and t in known and s != t]
    layer = _layers(ids, edges)
    rows: dict[int, list[str]] = {}
    for node_id in ids:
        rows.setdefault(layer[node_id], []).append(node_id)
    pos: dict[str, tuple[int, int]] = {}
    for depth, row in rows.items():
        for i, node_id in enumerate(row):
            pos[node_id] = (_MARGIN + i * (_BOX_W + _GAP_X), _MARGIN + depth * (_BOX_H + _GAP_Y))
    width = _MARGIN * 2 + max((len(r) for r in rows.values()), default=0) * (_BOX_W + _GAP_X)
    height = _MARGIN * 2 + (max(rows, default=-1) + 1) * (_BOX_H + _GAP_Y)
    title = escape(f"{canvas.get('view', '')} view of {canvas.get('quest_id', '')} at seq {canvas.get('seq', '')}")
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="sans-serif" font-size="11">',
        f"<title>{title}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#666"/></marker></defs>',
    ]
    for source, target, relation in edges:
        (x1, y1), (x2, y2) = pos[source], pos[target]
        out.append(
            f'<line x1="{x1 + _BOX_W // 2}" y1="{y1 + _BOX_H}" x2="{x2 + _BOX_W // 2}" y2="{y2}" '
            f'stroke="#666" marker-end="url(#arrow)" class="{escape(relation, {chr(34): "&quot;"})}"/>'
        )
    for node, node_id in zip(nodes, ids, strict=True):
        x, y = pos[node_id]
        label = str(node.get("label", node_id))
        short = label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "…"
        out.append(
            f'<g><title>{escape(label)}</title><rect x="{x}" y="{y}" width="{_BOX_W}" height="{_BOX_H}" rx="4" '
            f'fill="{"#e8f0fe" if node.get("current") else "#f8f8f8"}" stroke="#333"/>'
            f'<text x="{x + 6}" y="{y + 22}">{escape(short)}</text></g>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _layers(ids: list[str], edges: list[tuple[str, str, str]]) -> dict[str, int]:
    """Longest-path depth of each node; nodes in ``ids`` order are settled one at a time."""
    incoming: dict[str, list[str]] = {i: [] for i in ids}
    for source, target, _r in edges:
        incoming[target].append(source)
    depth: dict[str, int] = {}

    def visit(node: str, stack: set[str]) -> int:
        if node in depth:
            return depth[node]
        stack.add(node)
        best = 0
        for parent in incoming[node]:
            if parent not in stack:
                best = max(best, visit(parent, stack) + 1)
        stack.discard(node)
        depth[node] = best
        return best

    for node_id in ids:
        visit(node_id, set())
    return depth
