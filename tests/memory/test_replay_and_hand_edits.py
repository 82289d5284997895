"""Cards are materialised from the log: replay rebuilds them byte for byte, hand edits
are detected and taken in as events, and the CLI shows all of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ds_events.cli import main
from ds_events.home import Home, Quest
from ds_events.memory.store import MemoryContext
from ds_events.services.commands import to_builtins
from ds_events.services.memory import cards as svc
from ds_events.services.memory.audit import audit_memory, import_hand_edits
from ds_events.services.memory.commands import AppendRecord, AuditMemory, ImportHandEdits, PromoteToGlobal, ReadCard, SearchCards, WriteCard
from ds_events.services.memory.records import append_record


def _files(root: Path) -> dict[str, bytes]:
    out = {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "memory").rglob("*.md"))}
    out["MEMORY.md"] = (root / "MEMORY.md").read_bytes()
    return out


def _ds(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    return int(exc.value.code or 0), captured.out, captured.err


def _populate(mem: MemoryContext) -> dict[str, str]:
    a = svc.write(
        mem,
        WriteCard(kind="papers", title="Vision transformers need data", body="ViT underperforms ResNet below 10M images.", tags=["vit"]),
    )
    b = svc.write(
        mem, WriteCard(kind="ideas", title="Distil ViT from a CNN teacher", body="DeiT-style token", metadata={"confidence": 0.6})
    )
    c = svc.write(
        mem, WriteCard(kind="ideas", title="Distil a ViT from a CNN teacher network", body="DeiT-style distillation token", supersedes=b.id)
    )
    svc.promote_to_global(mem, PromoteToGlobal(card_id=a.id))
    append_record(
        mem,
        AppendRecord(
            record_type="mistake_fix", summary="Forgot to freeze BN stats", detail="Set model.eval() for BN layers", session_id="s1"
        ),
    )
    return {"paper": a.id, "old_idea": b.id, "idea": c.id}


def test_replay_rebuilds_identical_card_files_and_digest(home: Home, quest: Quest, mem: MemoryContext, capsys):
    ids = _populate(mem)
    before = _files(quest.root)
    assert f"memory/ideas/{ids['old_idea']}.md" in before
    shutil.rmtree(quest.root / "memory")
    (quest.root / "MEMORY.md").unlink()
    code, _, err = _ds(capsys, "replay", "q1")
    assert code == 0, err
    assert _files(quest.root) == before
    code, _, _ = _ds(capsys, "replay", "q1")
    assert code == 0 and _files(quest.root) == before


def test_a_hand_edit_is_detected_imported_and_survives_replay(home: Home, quest: Quest, mem: MemoryContext, capsys):
    ids = _populate(mem)
    path = quest.root / "memory" / "papers" / f"{ids['paper']}.md"
    edited = path.read_text().replace("below 10M images.", "below 10M images (JFT-300M fixes it).\n\nAdded by hand.")
    edited = edited.replace("tags:\n- vit\n", "tags:\n- vit\n- data\n")
    path.write_text(edited)
    report = audit_memory(mem, AuditMemory())
    assert report.drift == [{"scope": "quest", "id": ids["paper"], "path": f"memory/papers/{ids['paper']}.md", "problem": "modified"}]
    assert svc.read(mem, ReadCard(card_id=ids['paper'])).hand_edited is True
    code, out, _ = _ds(capsys, "memory", "audit", "q1")
    assert code == 0 and "drift: memory/papers/" in out and "modified" in out
    code, out, err = _ds(capsys, "memory", "import", "q1", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert [(r["id"], r["event"]) for r in result["imported"]] == [(ids["paper"], "memory.card_imported")]
    assert path.read_text() == edited  # nothing overwritten
    assert audit_memory(mem, AuditMemory()).drift == []
    card = svc.read(mem, ReadCard(card_id=ids['paper']))
    assert "JFT-300M" in card.body and card.tags == ["vit", "data"] and not card.hand_edited
    assert [r.id for r in svc.search(mem, SearchCards(query="JFT-300M")).results] == [ids["paper"]]
    shutil.rmtree(quest.root / "memory")
    assert _ds(capsys, "replay", "q1")[0] == 0
    assert path.read_text() == edited


def test_hand_made_and_deleted_card_files_are_imported_and_restored(home: Home, quest: Quest, mem: MemoryContext):
    ids = _populate(mem)
    new = quest.root / "memory" / "knowledge" / "my-note.md"
    new.parent.mkdir(parents=True, exist_ok=True)
    new.write_text("---\ntitle: Seeds matter at small scale\ntags: [eval]\n---\nVariance across 5 seeds was 1.2 points.\n")
    gone = quest.root / "memory" / "ideas" / f"{ids['idea']}.md"
    gone_bytes = gone.read_bytes()
    gone.unlink()
    problems = {d["problem"] for d in audit_memory(mem, AuditMemory()).drift}
    assert problems == {"untracked", "missing"}
    result = import_hand_edits(mem, ImportHandEdits())
    assert result.restored == [f"memory/ideas/{ids['idea']}.md"] and gone.read_bytes() == gone_bytes
    (moved,) = result.moved
    assert not new.exists() and (quest.root / moved.to).is_file()
    assert to_builtins(moved) == {"from": f"memory/knowledge/{new.name}", "to": moved.to}  # the wire names
    assert [r.title for r in svc.search(mem, SearchCards(query="seeds variance")).results] == ["Seeds matter at small scale"]
    assert audit_memory(mem, AuditMemory()).drift == []


def test_a_bad_hand_edit_is_refused_and_nothing_is_imported(quest: Quest, mem: MemoryContext):
    ids = _populate(mem)
    path = quest.root / "memory" / "papers" / f"{ids['paper']}.md"
    path.write_text(path.read_text().replace(f"id: {ids['paper']}", "id: paper-00000000"))
    before = quest.log.last_seq
    from ds_events.errors import Invalid

    with pytest.raises(Invalid) as exc:
        import_hand_edits(mem, ImportHandEdits())
    assert exc.value.code == "invalid_card_file" and quest.log.last_seq == before


def test_cli_search_show_list_and_guard(home: Home, quest: Quest, mem: MemoryContext, capsys):
    ids = _populate(mem)
    code, out, _ = _ds(capsys, "memory", "search", "q1", "how much data does a vision transformer need", "--json")
    assert code == 0 and json.loads(out)[0]["id"] == ids["paper"]
    code, out, _ = _ds(capsys, "memory", "search", "q1", "vision transformer")
    assert code == 0 and ids["paper"] in out
    code, out, _ = _ds(capsys, "memory", "show", "q1", ids["paper"])
    assert code == 0 and out.startswith("---\nid: " + ids["paper"])
    code, out, _ = _ds(capsys, "memory", "show", "q1", "mem-001", "--json")
    assert code == 0 and json.loads(out)["record_type"] == "mistake_fix"
    code, out, _ = _ds(capsys, "memory", "list", "q1", "--scope", "both", "--json")
    assert code == 0 and {r["scope"] for r in json.loads(out)} == {"quest", "global"}
    code, _, err = _ds(capsys, "memory", "show", "q1", "../../etc/passwd")
    assert code == 1 and err.startswith("error: path_outside_memory: path '../../etc/passwd' is outside the memory roots")
    code, _, err = _ds(capsys, "memory", "search", "nope", "x")
    assert code == 1 and "no quest 'nope'" in err
    code, out, _ = _ds(capsys, "memory", "guard", "q1", "--key", "lr")
    assert code == 0 and "lr" in out
    code, out, _ = _ds(capsys, "memory", "audit", "q1", "--json")
    assert code == 0 and json.loads(out)["ok"] is True


def test_every_memory_command_has_help(capsys):
    for verb in ("search", "show", "list", "audit", "import", "guard"):
        code, out, _ = _ds(capsys, "memory", verb, "--help")
        assert code == 0 and "Example: ds memory" in out
