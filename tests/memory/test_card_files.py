"""Card files an agent can tamper with: links out of the home and bytes that are not
UTF-8 are refused with structured errors, never followed, and never written through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ds_events.errors import Invalid, ServiceError
from ds_events.home import Home, Quest
from ds_events.memory.store import MemoryContext
from ds_events.services.memory import cards as svc
from ds_events.services.memory.audit import audit_memory, import_hand_edits
from ds_events.services.memory.commands import AuditMemory, ImportHandEdits, ReadCard, WriteCard

SECRET = "TOP-SECRET-7f3a"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside DS_HOME holding a file nobody should read through memory."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.md").write_text(f"---\ntitle: stolen\n---\n{SECRET}\n")
    return d


def _card_file(quest: Quest, card: dict) -> Path:
    return quest.root / card.path


def _link(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target)


def test_reading_a_card_whose_file_is_a_link_out_of_the_home_is_refused(quest: Quest, mem: MemoryContext, outside: Path):
    card = svc.write(mem, WriteCard(kind="knowledge", title="Warmup matters for ViT", body="loss diverged without it"))
    _link(_card_file(quest, card), outside / "secret.md")
    with pytest.raises(Invalid) as err:
        svc.read(mem, ReadCard(card_id=card.id))
    assert err.value.code == "path_outside_root"
    assert SECRET not in str(err.value.to_dict())


def test_reading_a_card_through_a_linked_kind_directory_is_refused(quest: Quest, mem: MemoryContext, outside: Path):
    card = svc.write(mem, WriteCard(kind="knowledge", title="Warmup matters for ViT", body="loss diverged without it"))
    kind_dir = quest.root / "memory" / "knowledge"
    (outside / f"{card.id}.md").write_text(f"---\nid: {card.id}\ntitle: x\n---\n{SECRET}\n")
    for f in kind_dir.iterdir():
        f.unlink()
    kind_dir.rmdir()
    kind_dir.symlink_to(outside)
    with pytest.raises(Invalid) as err:
        svc.read(mem, ReadCard(card_id=card.id))
    assert err.value.code == "path_outside_root" and SECRET not in str(err.value.to_dict())


def test_a_write_into_a_linked_kind_directory_is_refused_before_anything_is_appended(quest: Quest, mem: MemoryContext, outside: Path):
    (quest.root / "memory" / "ideas").mkdir(parents=True, exist_ok=True)
    (quest.root / "memory" / "ideas").rmdir()
    (quest.root / "memory" / "ideas").symlink_to(outside, target_is_directory=True)
    before, listing = quest.log.last_seq, sorted(os.listdir(outside))
    with pytest.raises(Invalid) as err:
        svc.write(mem, WriteCard(kind="ideas", title="Distil from a CNN teacher", body="DeiT token"))
    assert err.value.code == "path_outside_root" and "memory/ideas" in err.value.message
    assert quest.log.last_seq == before  # nothing appended
    assert sorted(os.listdir(outside)) == listing  # nothing written outside
    # Other kinds are unaffected, and once the link is gone the write goes through.
    assert svc.write(mem, WriteCard(kind="papers", title="ResNet paper", body="Section 4.2")).status == "written"
    (quest.root / "memory" / "ideas").unlink()
    assert svc.write(mem, WriteCard(kind="ideas", title="Distil from a CNN teacher", body="DeiT token")).status == "written"


def test_a_global_write_into_a_linked_kind_directory_is_refused(home: Home, quest: Quest, mem: MemoryContext, outside: Path):
    gdir = home.global_memory_dir
    (gdir / "knowledge").symlink_to(outside, target_is_directory=True)
    glog = mem.store("global").log
    before = glog.last_seq
    with pytest.raises(Invalid) as err:
        svc.write(mem, WriteCard(kind="knowledge", title="Seeds matter", body="5 seeds", scope="global"))
    assert err.value.code == "path_outside_root"
    assert glog.last_seq == before and not list(outside.glob("knowledge-*.md"))


def test_a_linked_digest_refuses_the_write_instead_of_appending_a_card_it_cannot_render(quest: Quest, mem: MemoryContext, outside: Path):
    svc.write(mem, WriteCard(kind="knowledge", title="Seeds matter", body="5 seeds"))
    _link(quest.root / "MEMORY.md", outside / "secret.md")
    before = quest.log.last_seq
    with pytest.raises(Invalid) as err:
        svc.write(mem, WriteCard(kind="knowledge", title="Label smoothing hurts calibration", body="ECE doubled"))
    assert err.value.code == "path_outside_root" and "MEMORY.md" in err.value.message
    assert quest.log.last_seq == before
    assert SECRET in (outside / "secret.md").read_text()  # untouched


def test_a_card_file_that_is_not_utf8_gets_a_structured_error(quest: Quest, mem: MemoryContext):
    card = svc.write(mem, WriteCard(kind="knowledge", title="Warmup matters for ViT", body="loss diverged without it"))
    _card_file(quest, card).write_bytes(b"---\ntitle: \xff\xfe broken\n---\nbody \xc3\x28\n")
    with pytest.raises(Invalid) as err:
        svc.read(mem, ReadCard(card_id=card.id))
    assert err.value.code == "invalid_card_file" and card.path in err.value.message
    before = quest.log.last_seq
    with pytest.raises(Invalid) as err:
        import_hand_edits(mem, ImportHandEdits())
    assert err.value.code == "invalid_card_file" and quest.log.last_seq == before


def test_a_hand_made_card_file_that_is_not_utf8_is_refused_on_import(quest: Quest, mem: MemoryContext):
    svc.write(mem, WriteCard(kind="knowledge", title="Seeds matter", body="5 seeds"))
    (quest.root / "memory" / "knowledge" / "mine.md").write_bytes(b"# Title \xff\n\nbody\n")
    before = quest.log.last_seq
    with pytest.raises(Invalid) as err:
        import_hand_edits(mem, ImportHandEdits())
    assert err.value.code == "invalid_card_file" and "mine.md" in err.value.message
    assert quest.log.last_seq == before


def test_importing_hand_edits_never_takes_in_a_file_behind_a_link(quest: Quest, mem: MemoryContext, outside: Path):
    card = svc.write(mem, WriteCard(kind="knowledge", title="Warmup matters for ViT", body="loss diverged without it"))
    # A well-formed card text outside the home, linked in place of the card's file.
    (outside / "forged.md").write_text(f"---\nid: {card.id}\ntitle: Forged\n---\n{SECRET}\n")
    _link(_card_file(quest, card), outside / "forged.md")
    # And a hand-made-looking file planted as a link in a kind directory.
    (quest.root / "memory" / "knowledge" / "planted.md").symlink_to(outside / "secret.md")
    before = quest.log.last_seq
    with pytest.raises(Invalid) as err:
        import_hand_edits(mem, ImportHandEdits())
    assert err.value.code == "invalid_card_file" and "symbolic link" in err.value.message
    assert quest.log.last_seq == before
    assert all(SECRET not in line.decode() for _seq, line in quest.log.iter_lines())
    # The audit names both links without reading them.
    drift = {d["path"]: d["problem"] for d in audit_memory(mem, AuditMemory()).drift}
    assert drift == {card.path: "link", "memory/knowledge/planted.md": "link"}


def test_superseding_a_card_whose_file_is_a_link_is_refused(quest: Quest, mem: MemoryContext, outside: Path):
    card = svc.write(mem, WriteCard(kind="knowledge", title="Warmup matters for ViT", body="loss diverged without it"))
    _link(_card_file(quest, card), outside / "secret.md")
    before = quest.log.last_seq
    with pytest.raises(ServiceError) as err:
        svc.write(mem, WriteCard(kind="knowledge", title="Warmup matters for ViT and DeiT", body="still diverges", supersedes=card.id))
    assert err.value.code == "path_outside_root" and quest.log.last_seq == before  # not a "hand_edited" conflict
