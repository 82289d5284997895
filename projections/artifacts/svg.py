"""The branch graph as an SVG drawing (``artifacts/graphs/git_graph.svg``)."""

from __future__ import annotations

from typing import Any

__all__ = ["render_graph_svg"]


def render_graph_svg(graph: dict[str, Any]) -> str:
    """A lane-per-branch drawing of ``graph`` (the shape
    :func:`ds_events.services.artifacts.checkpoints.git_graph` returns)."""
    commits = graph.get("commits", [])
    branches = [b["name"] for b in graph.get("branches", [])]
    lanes = {name: i for i, name in enumerate(branches)}
    row = {c["sha"]: i for i, c in enumerate(commits)}
    dx, dy, left, top = 140, 28, 20, 40
    width = left * 2 + dx * max(len(branches), 1) + 360
    height = top + dy * (len(commits) + 1)

    def at(c: dict[str, Any]) -> tuple[int, int]:
        return left + 10 + dx * lanes.get(c.get("lane", ""), 0), top + dy * row[c["sha"]]

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="11">'
    ]
    for name, i in lanes.items():
        out.append(f'<text x="{left + dx * i}" y="{top - 20}">{_esc(name)}</text>')
    for c in commits:
        x, y = at(c)
        for parent in c.get("parents", []):
            if parent in row:
                px, py = at(commits[row[parent]])
                out.append(f'<line x1="{x}" y1="{y}" x2="{px}" y2="{py}" stroke="#888"/>')
    for c in commits:
        x, y = at(c)
        label = f"{c['sha'][:7]} {c.get('message', '')[:48]}"
        heads = [b["name"] for b in graph.get("branches", []) if b.get("head") == c["sha"]]
        if heads:
            label += f"  [{', '.join(heads)}]"
        out.append(f'<circle cx="{x}" cy="{y}" r="5" fill="#36c"/>')
        out.append(f'<text x="{left + dx * max(len(branches), 1)}" y="{y + 4}">{_esc(label)}</text>')
    out.append("</svg>\n")
    return "\n".join(out)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
