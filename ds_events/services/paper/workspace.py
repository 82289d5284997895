"""Where the paper's files are and how they are read: the paper workspace (the paper
branch's worktree, else the quest root), caller paths resolved there and confined to the
quest, files hashed and manuscript text read (bounded) for the checks.

A relative path is looked up in the paper workspace first, then at the quest root (as
DeepScientist does); an absolute one must lie inside the quest. Inside ``.ds/`` only the
paper worktree is allowed; ``.git`` never. Error codes: ``invalid_field``,
``path_outside_quest``, ``path_outside_root``, ``path_not_allowed``,
``paper_file_missing``, ``manuscript_outside_paper``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath

from ds_events.errors import Invalid, NotFound
from ds_events.events.paper import BundleFile, FileRole
from ds_events.home import Quest
from ds_events.paths import confined
from projections.manuscript import State

__all__ = ["Workspace", "paper_workspace", "MANUSCRIPT_SUFFIXES", "MAX_TEXT_BYTES"]

MANUSCRIPT_SUFFIXES = (".md", ".markdown", ".tex", ".ltx")
MAX_TEXT_BYTES = 2 * 1024 * 1024  # a manuscript file's text read for the checks
_MAX_TEX_FILES = 100


class Workspace:
    """The paper workspace of a quest: ``root`` (absolute) and ``rel`` (relative to the
    quest root, "" for the quest root itself)."""

    def __init__(self, quest_root: Path, rel: str) -> None:
        self.quest_root = quest_root
        self.rel = rel
        self.root = quest_root / rel if rel else quest_root

    def resolve(self, value: object, field: str) -> Path:
        """The existing regular file (or directory) ``value`` names, inside the quest."""
        if not isinstance(value, str) or not value.strip() or "\x00" in value:
            raise Invalid(f"{field} must be a non-empty path", code="invalid_field", field=field, expected="path")
        raw = Path(value.strip())
        if ".." in raw.parts:
            raise Invalid(f"{field} {value!r} uses '..': give a path inside the quest", code="path_outside_quest", field=field)
        if raw.is_absolute():
            base = self.quest_root.resolve()
            real = raw.resolve()
            if base not in real.parents:
                raise Invalid(f"{field} {value!r} is outside the quest repository", code="path_outside_quest", field=field)
            target = self.quest_root / real.relative_to(base)
        else:
            base = self.root if (self.root / raw).exists() else self.quest_root
            target = confined(base, str(raw), field=field)
        self.quest_rel(target, field)  # refuses .git, the rest of .ds, and links out of the quest
        if not (target.is_file() or target.is_dir()):
            raise NotFound(f"{field}: no file {value!r} in the paper workspace or the quest", code="paper_file_missing",
                           field=field, path=value[:300])  # fmt: skip
        return target

    def quest_rel(self, target: Path, field: str) -> str:
        """``target`` relative to the quest root, refusing ``.git``, the rest of ``.ds`` and
        anything a link leads out of the quest."""
        base = self.quest_root.resolve()
        real = target.resolve()
        if real != base and base not in real.parents:
            raise Invalid(f"{field} {str(target)!r} leads outside the quest", code="path_outside_quest", field=field)
        parts = PurePosixPath(*real.relative_to(base).parts)
        text = str(parts)
        if parts.parts and parts.parts[0] == ".git":
            raise Invalid(f"{field} {text!r} is inside .git/", code="path_not_allowed", field=field)
        if parts.parts and parts.parts[0] == ".ds" and not (self.rel and text.startswith(self.rel + "/")):
            raise Invalid(f"{field} {text!r} is inside .ds/, which the runtime owns", code="path_not_allowed", field=field)
        return text

    def under_paper(self, target: Path, field: str) -> None:
        """Refuse (``manuscript_outside_paper``) a manuscript file outside ``paper/`` of the workspace."""
        try:
            inside = target.resolve().relative_to(self.root.resolve()).parts[:1] == ("paper",)
        except ValueError:
            inside = False
        if not inside:
            raise Invalid(f"{field}: the manuscript lives under paper/ of the paper workspace ({self.rel or 'the quest root'})",
                          code="manuscript_outside_paper", field=field)  # fmt: skip

    def default(self, rel: str) -> Path | None:
        """``rel`` in the workspace, if it is a file there."""
        target = self.root / rel
        return target if target.is_file() and not target.is_symlink() else None

    def bundle_file(self, role: FileRole, target: Path, field: str) -> BundleFile:
        if not target.is_file():
            raise NotFound(f"{field}: {self.quest_rel(target, field)!r} is not a regular file", code="paper_file_missing",
                           field=field)  # fmt: skip
        digest = hashlib.sha256()
        size = 0
        with open(target, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
                size += len(block)
        return BundleFile(role=role, path=self.quest_rel(target, field), sha256=digest.hexdigest(), bytes=size)

    def tex_files(self, target: Path, field: str) -> list[Path]:
        """A LaTeX root: the file itself, or a directory's ``.tex`` files (sorted, at most 100)."""
        if target.is_file():
            return [target]
        found = sorted(p for p in target.rglob("*.tex") if p.is_file() and not p.is_symlink())[:_MAX_TEX_FILES]
        if not found:
            raise NotFound(f"{field}: no .tex file under {self.quest_rel(target, field)!r}", code="paper_file_missing", field=field)
        return found

    def text(self, rel: str) -> str:
        """The text of a file named relative to the quest root (at most MAX_TEXT_BYTES)."""
        with open(self.quest_root / rel, "rb") as f:
            return f.read(MAX_TEXT_BYTES).decode("utf-8", errors="replace")


def paper_workspace(quest: Quest, paper: State) -> Workspace:
    """The paper branch's worktree when it has one on disk, else the quest root."""
    if paper.worktree:
        path = confined(quest.root, paper.worktree, field="worktree")
        if (path / ".git").is_file() and not path.is_symlink():
            return Workspace(quest.root, paper.worktree)
    return Workspace(quest.root, "")
