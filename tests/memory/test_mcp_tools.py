"""Every `memory` tool and its errors, through a real in-process MCP client."""

from __future__ import annotations

import os
from pathlib import Path

import mcp
import pytest
import yaml

from ds_events.home import Home, Quest
from ds_events.log import EventLog
from ds_events.services.memory.commands import ConfigureGuard, WriteCard
from tests.helpers import domain_events, tool_error

from .conftest import call

WARMUP = {"kind": "knowledge", "title": "AdamW needs warmup for ViT", "body": "Without warmup the loss diverges in the first 1k steps."}
WARMUP_AGAIN = {"kind": "knowledge", "title": "ViT with AdamW needs learning-rate warmup", "body": "Loss diverged early without warmup."}


def memory_events(quest: Quest) -> list[str]:
    return [e.type for e in quest.log.read() if e.type.startswith("memory.")]


async def test_a_written_card_is_materialised_and_found_by_a_natural_language_question(client, quest):
    written = await call(client, "write", **WARMUP, tags=["optim", "vit"], metadata={"stage": "experiment", "confidence": 0.8})
    assert written["status"] == "written" and written["id"].startswith("knowledge-") and len(written["id"]) == len("knowledge-") + 8
    text = (quest.root / written["path"]).read_text()
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["id"] == written["id"] and front["type"] == "knowledge" and front["tags"] == ["optim", "vit"]
    assert front["stage"] == "experiment" and front["confidence"] == 0.8 and front["quest_id"] == "q1"
    assert {"created_at", "updated_at", "scope", "title"} <= set(front)
    found = await call(client, "search", query="why does my vision transformer loss diverge without a schedule")
    assert [r["id"] for r in found["items"]] == [written["id"]]
    hit = found["items"][0]
    assert hit["score"] > 0 and "[" in hit["snippet"] and hit["scope"] == "quest" and hit["kind"] == "knowledge"
    assert "MEMORY.md" in os.listdir(quest.root)


async def test_a_near_duplicate_is_refused_with_candidates_and_nothing_is_written(client, quest):
    first = await call(client, "write", **WARMUP)
    before = domain_events(quest)
    dup = await call(client, "write", **WARMUP_AGAIN)
    assert dup["status"] == "duplicate_candidates"
    assert [c["id"] for c in dup["candidates"]] == [first["id"]]
    assert dup["candidates"][0]["similarity"] >= 0.5
    assert domain_events(quest) == before
    forced = await call(client, "write", **WARMUP_AGAIN, force=True)
    assert forced["status"] == "written" and forced["id"] != first["id"]


async def test_a_superseded_card_leaves_retrieval_but_stays_on_disk(client, quest):
    old = await call(client, "write", **WARMUP)
    new = await call(client, "write", **WARMUP_AGAIN, supersedes=old["id"])
    assert new["status"] == "written" and new["supersedes"] == old["id"]
    for query in ("warmup", "AdamW ViT diverges"):
        ids = [r["id"] for r in (await call(client, "search", query=query))["items"]]
        assert ids == [new["id"]]
    recent = await call(client, "list_recent")
    assert [r["id"] for r in recent["items"]] == [new["id"]]
    old_file = yaml.safe_load((quest.root / old["path"]).read_text().split("---\n")[1])
    assert old_file["status"] == "superseded" and old_file["superseded_by"] == new["id"]
    card = await call(client, "read", card_id=old["id"])
    assert card["status"] == "superseded"
    assert memory_events(quest)[-2:] == ["memory.card_written", "memory.card_superseded"]
    again = await client.call_tool("write", {**WARMUP_AGAIN, "force": True, "supersedes": old["id"]})
    assert tool_error(again)["error"] == "already_superseded"


async def test_config_polluted_titles_are_refused_per_quest_guard(client, quest, mem):
    from ds_events.services.memory.cards import configure_guard

    configure_guard(mem, ConfigureGuard(config_keys=['lr', "batch_size"]))
    before = domain_events(quest)
    polluted = await call(client, "write", kind="knowledge", title="ViT diverges with lr=3e-3 and batch_size: 512", body="x")
    assert polluted["status"] == "config_polluted" and polluted["settings"] == ["lr=3e-3", "batch_size: 512"]
    rec = await call(client, "append_memory", record_type="working_solution", summary="use LR=1e-4", detail="d", session_id="s1")
    assert rec["status"] == "config_polluted"
    assert domain_events(quest) == before
    clean = await call(client, "write", kind="knowledge", title="ViT diverges with a high learning rate", body="lr=3e-3 diverged")
    assert clean["status"] == "written"


async def test_the_guard_also_comes_from_config_yaml(home: Home, client):
    cfg = yaml.safe_load(home.config_path.read_text())
    cfg["memory"]["config_guard_keys"] = ["dropout"]
    home.config_path.write_text(yaml.safe_dump(cfg))
    polluted = await call(client, "write", kind="decisions", title="Keep dropout=0.1", body="")
    assert polluted["status"] == "config_polluted"


async def test_read_by_id_record_id_and_path_and_paths_outside_memory_are_refused(client, quest, tmp_path):
    card = await call(client, "write", kind="papers", title="Attention is all you need: caveats", body="Needs warmup.")
    by_id = await call(client, "read", card_id=card["id"])
    by_path = await call(client, "read", path=card["path"])
    by_abs = await call(client, "read", path=str(quest.root / card["path"]))
    assert by_id["id"] == by_path["id"] == by_abs["id"] == card["id"]
    assert by_id["body"] == "Needs warmup." and by_id["hand_edited"] is False
    assert by_id["markdown"] == (quest.root / card["path"]).read_text()
    secret = tmp_path / "secret.md"
    secret.write_text("---\ntitle: s\n---\nsecret")
    link = quest.root / "memory" / "papers" / "link.md"
    link.symlink_to(secret)
    for bad in ("../../../etc/passwd", "/etc/passwd", "memory/papers/../../status.md", str(secret), "memory/papers/link.md",
                ".ds/events.jsonl", "memory/../brief.md"):
        err = tool_error(await client.call_tool("read", {"path": bad}))
        assert err["error"] == "path_outside_memory", (bad, err)


async def test_promote_copies_a_card_to_global_memory_and_both_logs_record_it(home: Home, client, quest):
    card = await call(client, "write", kind="knowledge", title="Label smoothing hurts calibration", body="ECE rose 2x.")
    promoted = await call(client, "promote_to_global", card_id=card["id"])
    gid = promoted["global_id"]
    assert promoted["status"] == "promoted" and gid.startswith("knowledge-") and gid != card["id"]
    gfile = home.global_memory_dir / "knowledge" / f"{gid}.md"
    front = yaml.safe_load(gfile.read_text().split("---\n")[1])
    assert front["promoted_from"] == f"q1:{card['id']}" and front["scope"] == "global" and front["quest_id"] == "q1"
    assert memory_events(quest)[-1] == "memory.card_promoted"
    glog = EventLog(home.global_memory_dir / ".ds" / "events.jsonl")
    try:
        assert [e.type for e in glog.read()] == ["memory.card_written", "memory.card_promoted"]
    finally:
        glog.close()
    both = await call(client, "search", query="label smoothing calibration", scope="both")
    assert {(r["scope"], r["id"]) for r in both["items"]} == {("quest", card["id"]), ("global", gid)}
    only_global = await call(client, "list_recent", scope="global")
    assert [r["id"] for r in only_global["items"]] == [gid]
    assert tool_error(await client.call_tool("promote_to_global", {"card_id": card["id"]}))["error"] == "already_promoted"
    assert tool_error(await client.call_tool("promote_to_global", {"card_id": gid}))["error"] == "not_a_quest_card"
    by_path = await call(client, "read", path=str(gfile))
    assert by_path["id"] == gid and by_path["scope"] == "global"


async def test_same_and_non_ascii_titles_never_collide(client, quest):
    a = await call(client, "write", kind="ideas", title="Mixup for ViT", body="alpha beta gamma")
    b = await call(client, "write", kind="ideas", title="Mixup for ViT", body="delta epsilon", force=True)
    c = await call(client, "write", kind="ideas", title="数据增强\uff1a混合", body="中文 正文")
    d = await call(client, "write", kind="ideas", title="数据增强\uff1a混合", body="另一个", force=True)
    paths = {x["path"] for x in (a, b, c, d)}
    assert len(paths) == 4 and all((quest.root / p).is_file() for p in paths)
    assert all(Path(p).name.isascii() for p in paths)
    found = await call(client, "search", query="数据增强")
    assert {r["id"] for r in found["items"]} == {c["id"], d["id"]}


async def test_diverse_search_returns_relevant_and_mutually_different_cards(client):
    a = await call(
        client, "write", kind="knowledge", title="Gradient clipping stops loss spikes", body="clip norm 1.0 fixed spikes in fp16 runs"
    )
    b = await call(
        client,
        "write",
        kind="knowledge",
        title="Gradient clipping stops loss spikes in fp16",
        body="clip norm 1.0 fixed spikes in fp16 runs too",
        force=True,
    )
    c = await call(
        client,
        "write",
        kind="knowledge",
        title="Loss spikes come from bad data shards",
        body="shard 17 had corrupted tokens causing spikes",
    )
    plain = await call(client, "search", query="loss spikes clipping", limit=2)
    assert {r["id"] for r in plain["items"]} == {a["id"], b["id"]}
    diverse = await call(client, "search", query="loss spikes clipping", limit=2, diverse=True)
    ids = [r["id"] for r in diverse["items"]]
    assert len(ids) == 2 and c["id"] in ids and len({a["id"], b["id"]} & set(ids)) == 1


async def test_search_filters_by_kind_and_tags(client):
    p = await call(client, "write", kind="papers", title="BERT pretraining recipe", body="masking rate matters", tags=["nlp", "bert"])
    await call(client, "write", kind="knowledge", title="Masking rate for BERT", body="15 percent masking", tags=["nlp"])
    assert [r["id"] for r in (await call(client, "search", query="masking", kind="papers"))["items"]] == [p["id"]]
    assert [r["id"] for r in (await call(client, "search", query="masking", tags=["nlp", "bert"]))["items"]] == [p["id"]]


async def test_a_whole_markdown_card_can_be_written(client, quest):
    md = "---\ntags: [eval]\nstage: analysis-campaign\nretrieval_hints: [calibration]\n---\n\nECE is the metric we report.\n"
    card = await call(client, "write", kind="decisions", title="Report ECE", markdown=md)
    read = await call(client, "read", card_id=card["id"])
    assert read["tags"] == ["eval"] and read["metadata"]["stage"] == "analysis-campaign"
    assert read["body"].strip() == "ECE is the metric we report."
    found = await call(client, "search", query="calibration")
    assert [r["id"] for r in found["items"]] == [card["id"]]


async def test_record_tools_append_read_and_audit_typed_records(client, quest):
    fix = await call(client, "append_memory", record_type="mistake_fix", summary="Tokenizer cache stale after vocab change",
                     detail="Delete ~/.cache/tok before rerunning the ablation", session_id="s-1", tags=["tokenizer"])
    assert fix["record_id"] == "mem-001" and fix["message"] == f"appended mem-001 -> {fix['path']}"
    sol = await call(client, "append_memory", record_type="working_solution", summary="Bucket batches by length",
                     detail="Sorting by length cut padding by 40 percent", session_id="s-1")
    con = await call(client, "append_memory", record_type="pipeline_constraint", summary="Eval must use the frozen test split",
                     detail="Never re-split the tokenizer ablation test data", session_id="s-2")
    assert (sol["record_id"], con["record_id"]) == ("mem-002", "mem-003")
    digest = await call(client, "read_memory")
    lines = digest["text"].splitlines()
    assert [ln.split()[1] for ln in lines] == ["mem-001", "mem-003", "mem-002"]  # failures and constraints first
    relevant = await call(client, "read_memory", task_description="rerun the tokenizer ablation", top_k=2)
    assert list(relevant["groups"]) == ["mistake_fix", "pipeline_constraint"]
    dup = await call(client, "append_memory", record_type="mistake_fix", summary="Tokenizer cache is stale after a vocab change",
                     detail="Delete ~/.cache/tok before rerunning", session_id="s-3")
    assert dup["status"] == "duplicate_candidates" and dup["candidates"][0]["record_id"] == "mem-001"
    newer = await call(client, "append_memory", record_type="mistake_fix", summary="Tokenizer cache is stale after a vocab change",
                       detail="Delete ~/.cache/tok and ~/.cache/bpe before rerunning", session_id="s-3", supersedes="mem-001")
    assert newer["record_id"] == "mem-004" and newer["supersedes"] == fix["id"]
    assert "mem-001" not in (await call(client, "read_memory"))["text"]
    report = await call(client, "audit_memory")
    assert report["counts"]["quest"]["mistake_fix"] == {"active": 1, "superseded": 1} and report["ok"]
    md = (quest.root / "MEMORY.md").read_text()
    assert "mem-004 [mistake_fix]" in md and "mem-001" not in md


async def test_audit_reports_counts_clusters_pollution_broken_links_and_drift(client, quest, mem):
    from ds_events.events.memory import CardWritten
    from ds_events.services.memory.cards import configure_guard

    a = await call(client, "write", **WARMUP)
    b = await call(client, "write", **WARMUP_AGAIN, force=True)
    await call(client, "write", kind="decisions", title="Use lr=1e-4 for fine-tuning", body="")
    configure_guard(mem, ConfigureGuard(config_keys=['lr']))
    quest.emit(CardWritten(card_id="idea-00000000", kind="ideas", title="Orphan", supersedes="idea-deadbeef"))
    (quest.root / a["path"]).write_text((quest.root / a["path"]).read_text() + "\nEdited by hand.\n")
    report = await call(client, "audit")
    assert report["ok"] is False
    assert report["counts"]["quest"]["knowledge"] == {"active": 2, "superseded": 0}
    assert [{m["id"] for m in c["cards"]} for c in report["duplicate_clusters"]] == [{a["id"], b["id"]}]
    assert [p["settings"] for p in report["config_polluted"]] == [["lr=1e-4"]]
    assert report["broken_links"] == [{"scope": "quest", "id": "idea-00000000", "problem": "supersedes_unknown", "target": "idea-deadbeef"}]
    assert report["drift"] == [{"scope": "quest", "id": a["id"], "path": a["path"], "problem": "modified"}]
    err = tool_error(await client.call_tool("write", {**WARMUP_AGAIN, "supersedes": a["id"]}))
    assert err["error"] == "hand_edited"


ERROR_CASES = [
    ("write", {"kind": "notes", "title": "t"}, "invalid_kind"),
    ("write", {"kind": "ideas", "title": "  "}, "missing_title"),
    ("write", {"kind": "ideas", "title": "two\nlines"}, "invalid_title"),
    ("write", {"kind": "ideas", "title": "t", "scope": "both"}, "invalid_scope"),
    ("write", {"kind": "ideas", "title": "t", "tags": ["x" * 65]}, "invalid_tags"),
    ("write", {"kind": "ideas", "title": "t", "metadata": {"id": "idea-00000000"}}, "invalid_metadata"),
    ("write", {"kind": "ideas", "title": "t", "supersedes": "idea-12345678"}, "unknown_card"),
    ("write", {"kind": "ideas", "title": "t", "markdown": "---\n: [bad\n---\nbody"}, "invalid_markdown"),
    ("read", {}, "invalid_arguments"),
    ("read", {"card_id": "idea-12345678"}, "unknown_card"),
    ("read", {"card_id": "idea-12345678", "scope": "nowhere"}, "invalid_scope"),
    ("read", {"path": "memory/ideas/idea-12345678.md"}, "unknown_card"),
    ("search", {"query": "   "}, "empty_query"),
    ("search", {"query": "x", "limit": 0}, "invalid_limit"),
    ("search", {"query": "x", "kind": "notes"}, "invalid_kind"),
    ("list_recent", {"limit": 101}, "invalid_limit"),
    ("list_recent", {"scope": "everywhere"}, "invalid_scope"),
    ("promote_to_global", {}, "invalid_arguments"),
    ("promote_to_global", {"card_id": "idea-12345678"}, "unknown_card"),
    ("promote_to_global", {"path": "/etc/passwd"}, "path_outside_memory"),
    ("audit", {"scope": "elsewhere"}, "invalid_scope"),
    ("append_memory", {"record_type": "gossip", "summary": "s", "detail": "d", "session_id": "s1"}, "invalid_record_type"),
    ("append_memory", {"record_type": "mistake_fix", "summary": "s", "detail": "d", "session_id": " "}, "missing_session_id"),
    (
        "append_memory",
        {"record_type": "mistake_fix", "summary": "s", "detail": "d", "session_id": "s", "supersedes": "mem-999"},
        "unknown_card",
    ),
    ("read_memory", {"task_description": "x", "top_k": 0}, "invalid_limit"),
]


@pytest.mark.parametrize(("tool", "args", "code"), ERROR_CASES, ids=[f"{t}-{c}" for t, _, c in ERROR_CASES])
async def test_every_bad_input_gets_a_structured_error_and_changes_nothing(client, quest, tool, args, code):
    before = domain_events(quest)
    err = tool_error(await client.call_tool(tool, args))
    assert err["error"] == code and err["message"]
    assert domain_events(quest) == before


async def test_state_errors_for_superseding_and_promoting(client):
    idea = await call(client, "write", kind="ideas", title="Try cosine decay", body="one two three")
    err = tool_error(await client.call_tool("write", {"kind": "knowledge", "title": "x", "supersedes": idea["id"]}))
    assert err["error"] == "kind_mismatch"
    newer = await call(client, "write", kind="ideas", title="Try cosine decay with restarts", body="four five", supersedes=idea["id"])
    assert tool_error(await client.call_tool("promote_to_global", {"card_id": idea["id"]}))["error"] == "card_superseded"
    assert (await call(client, "promote_to_global", card_id=newer["id"]))["status"] == "promoted"


async def test_shared_across_quests_shows_other_quests_cards_read_only(home: Home, quest, client):
    other = home.create_quest("Other", quest_id="q2")
    try:
        from ds_events.memory.store import MemoryContext
        from ds_events.services.memory.cards import write

        m2 = MemoryContext(other)
        theirs = write(m2, WriteCard(kind="knowledge", title="Flash attention needs fp16 or bf16", body="fp32 falls back silently"))
        m2.close()
    finally:
        other.close()
    assert (await call(client, "search", query="flash attention"))["count"] == 0
    cfg = yaml.safe_load(home.config_path.read_text())
    cfg["memory"]["shared_across_quests"] = True
    home.config_path.write_text(yaml.safe_dump(cfg))
    found = (await call(client, "search", query="flash attention"))["items"]
    assert [(r["id"], r["quest_id"], r.get("read_only")) for r in found] == [(theirs.id, "q2", True)]
    # The hit says it is another quest's card, and which quest's.
    assert [(r["scope"], r["source_quest_id"], r["shared"]) for r in found] == [("shared_quest", "q2", True)]
    assert (await call(client, "read", card_id=theirs.id))["read_only"] is True
    err = tool_error(await client.call_tool("promote_to_global", {"card_id": theirs.id}))
    assert err["error"] == "not_a_quest_card"


async def test_the_server_lists_every_tool_with_a_docstring(client: mcp.Client):
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"write", "read", "search", "list_recent", "promote_to_global", "audit", "read_memory",
                          "append_memory", "audit_memory"}  # fmt: skip
    assert all(len(t.description or "") > 40 for t in tools.values())
