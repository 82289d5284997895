"""Confinement of paths under a root: a link may lead anywhere inside the root, never out.

``confined`` walks the directories without following links and resolves real paths only
when it meets one; both ways must give the same answers, which these cases pin down."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ds_events.errors import Invalid
from ds_events.paths import confined, read_confined, write_atomic


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    (r / "memory" / "ideas").mkdir(parents=True)
    (r / "elsewhere").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("secret")
    return r


def _code(root: Path, rel: str) -> str:
    try:
        confined(root, rel)
    except Invalid as exc:
        return exc.code
    return "ok"


def test_plain_paths_inside_the_root_are_accepted_whether_or_not_they_exist(root: Path):
    assert confined(root, "memory/ideas/idea-1.md") == root / "memory/ideas/idea-1.md"
    assert confined(root, "memory/papers/new/deeper.md") == root / "memory/papers/new/deeper.md"
    assert confined(root, "./memory//ideas/x.md") == root / "memory/ideas/x.md"
    (root / "memory/ideas/idea-1.md").write_text("x")
    assert _code(root, "memory/ideas/idea-1.md") == "ok"


def test_bad_names_are_refused_before_anything_is_looked_at(root: Path):
    for rel in ("", "/etc/passwd", "../outside/secret.md", "memory/../../outside", "a\x00b"):
        assert _code(root, rel) == "path_outside_root", rel
    assert _code(root, "memory/" + "x" * 256) == "path_too_long"
    assert _code(root, "memory/" + "é" * 128) == "path_too_long"  # 256 bytes in UTF-8
    assert _code(root, "memory/" + "é" * 127) == "ok"


def test_a_directory_link_leading_out_is_refused_and_one_staying_inside_is_followed(root: Path):
    (root / "memory" / "papers").symlink_to(root.parent / "outside")
    assert _code(root, "memory/papers/secret.md") == "path_outside_root"
    assert _code(root, "memory/papers/not/yet/there.md") == "path_outside_root"
    (root / "memory" / "decisions").symlink_to(root / "elsewhere")
    assert confined(root, "memory/decisions/d.md") == root / "memory/decisions/d.md"
    (root / "memory" / "relative").symlink_to("../elsewhere")
    assert _code(root, "memory/relative/d.md") == "ok"
    (root / "memory" / "relative_out").symlink_to("../../outside")
    assert _code(root, "memory/relative_out/d.md") == "path_outside_root"


def test_a_file_that_is_a_link_is_refused_only_when_it_points_out(root: Path):
    (root / "memory/ideas/out.md").symlink_to(root.parent / "outside" / "secret.md")
    assert _code(root, "memory/ideas/out.md") == "path_outside_root"
    (root / "elsewhere" / "in.md").write_text("in")
    (root / "memory/ideas/in.md").symlink_to(root / "elsewhere" / "in.md")
    assert _code(root, "memory/ideas/in.md") == "ok"
    # ... and a read never goes through either
    with pytest.raises(Invalid) as err:
        read_confined(root, "memory/ideas/in.md")
    assert err.value.code == "path_outside_root"


def test_a_root_reached_through_a_link_confines_to_its_real_directory(root: Path):
    alias = root.parent / "alias"
    alias.symlink_to(root)
    assert confined(alias, "memory/ideas/x.md") == alias / "memory/ideas/x.md"
    (root / "memory" / "papers").symlink_to(root.parent / "outside")
    assert _code(alias, "memory/papers/x.md") == "path_outside_root"


def test_a_dangling_link_or_a_file_on_the_way_is_never_written_through(root: Path):
    (root / "memory" / "papers").symlink_to(root.parent / "gone")  # dangling
    target = confined(root, "memory/papers/x.md")  # nothing exists to lead out through...
    with pytest.raises(OSError):
        write_atomic(target, b"x")  # ...and the write cannot create the directory either
    assert not (root.parent / "gone").exists()
    (root / "memory" / "file").write_text("not a directory")
    assert _code(root, "memory/file/x.md") == "ok"  # as before: the write itself fails
    assert not os.path.exists(root.parent / "outside" / "x.md")
