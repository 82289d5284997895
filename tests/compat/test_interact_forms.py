"""DeepScientist's remaining `interact` arguments, through a real stdio `artifact` server.

The call forms are the ones its connector prompts and tests send (written from the public
facts): `attachments=[{"kind": "path", "path": ..., "label": ..., "content_type": ...,
"connector_delivery": {"qq": {...}}}]`, `connector_hints={"qq": {"render_mode":
"markdown"}}`, `surface_actions=[{"type": "send_notification", ...}]`, `importance`,
`response_phase`, `summary_preview`, `interaction_id`, `expects_reply`,
`allow_free_text=False`, `supersede_open_requests`, `min_interval_seconds`. Each test
asserts the fields its callers read, the events that landed in the log and, where files
change, that replay rebuilds them byte for byte; each refusal writes nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ds_events.errors import Conflict, Invalid
from ds_events.events.interaction import InteractionSent
from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from ds_events.services import interactions as service
from tests.helpers import domain_events

from .research_support import LogWatch, artifact_client, ok, refused

pytestmark = pytest.mark.slow

OPTIONS = [{"id": "a", "label": "Route A"}, {"id": "b", "label": "Route B"}]


def _record(quest: Quest, iid: str) -> dict[str, Any]:
    return json.loads((quest.root / "interactions" / "records" / f"{iid}.json").read_text())


def _interaction_files(quest: Quest) -> dict[str, bytes]:
    root = quest.root / "interactions"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_delivery_arguments_are_kept_in_the_event_the_record_and_the_result(home: Home, quest: Quest) -> None:
    figure = quest.root / "figs" / "summary.png"
    figure.parent.mkdir()
    figure.write_bytes(b"\x89PNG fake")
    watch = LogWatch(quest)
    async with artifact_client(home) as c:
        sent = await ok(c, "interact", {
            "kind": "milestone", "message": "## Main run done\n- top1 0.921 vs 0.912", "reply_mode": "threaded",
            "interaction_id": "ms-main-001", "importance": "warning", "response_phase": "final",
            "summary_preview": "Main run beats the baseline",
            "attachments": [
                {"kind": "path", "path": str(figure), "label": "main-summary", "content_type": "image/png",
                 "connector_delivery": {"QQ": {"media_kind": "image"}}},
                {"url": "https://example.org/report.pdf", "name": "report.pdf"},
            ],
            "connector_hints": {"qq": {"render_mode": "markdown"}},
            "surface_actions": [{"type": "send_notification", "text": "Run finished"}],
            "expects_reply": True,
        })  # fmt: skip
    assert sent["status"] == "ok" and sent["interaction_id"] == "ms-main-001"
    assert (sent["reply_mode"], sent["expects_reply"]) == ("threaded", True)
    assert sent["normalized_attachments"][0]["path"] == "figs/summary.png"  # stored relative to the quest
    assert sent["normalized_attachments"][0]["connector_delivery"] == {"qq": {"media_kind": "image"}}
    assert sent["connector_hints"] == {"qq": {"render_mode": "markdown"}}
    assert (sent["importance"], sent["response_phase"], sent["summary_preview"]) == ("warning", "final", "Main run beats the baseline")
    [event] = [e for e in watch.since() if e["type"] == "interaction.sent"]
    options = event["delivery_options"]
    assert event["interaction_id"] == "ms-main-001" and options["attachments"] == sent["normalized_attachments"]
    assert options["surface_actions"] == [{"type": "send_notification", "text": "Run finished"}]
    assert (options["importance"], options["response_phase"], event["expects_reply"]) == ("warning", "final", True)
    record = _record(quest, "ms-main-001")
    kept = record["delivery_options"]
    assert kept["attachments"] == sent["normalized_attachments"] and kept["connector_hints"] == sent["connector_hints"]
    assert kept["summary_preview"] == "Main run beats the baseline" and record["expects_reply"] is True
    # Without a preview, the message's first line-folded 220 characters are the preview.
    async with artifact_client(home) as c:
        plain = await ok(c, "interact", {"message": "word " * 100})
    assert len(plain["summary_preview"]) == 220 and plain["summary_preview"].endswith("…")
    before = _interaction_files(quest)
    for name in before:
        (quest.root / "interactions" / name).unlink()
    replay_quest(quest.root, quest_id=quest.id)
    assert _interaction_files(quest) == before


async def test_a_new_blocking_request_supersedes_the_open_ones_with_an_event(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        first = await ok(c, "interact", {"kind": "decision_request", "message": "A or B?", "options": OPTIONS})
        kept = await ok(c, "interact", {"kind": "decision_request", "message": "GPU budget?", "options": OPTIONS,
                                        "supersede_open_requests": False})  # fmt: skip
        assert kept["open_request_count"] == 2 and kept["superseded_interaction_ids"] == []
        watch = LogWatch(quest)
        newest = await ok(c, "interact", {"kind": "decision_request", "message": "A, B or C now?", "options": OPTIONS})
    assert newest["superseded_interaction_ids"] == [first["interaction_id"], kept["interaction_id"]]
    assert newest["open_request_count"] == 1 and newest["interaction_status"] == "waiting"
    superseded = [e for e in watch.since() if e["type"] == "interaction.superseded"]
    assert [(e["interaction_id"], e["superseded_by"]) for e in superseded] == [
        (first["interaction_id"], newest["interaction_id"]), (kept["interaction_id"], newest["interaction_id"])]  # fmt: skip
    assert _record(quest, first["interaction_id"])["status"] == "superseded"
    assert _record(quest, first["interaction_id"])["superseded_by"] == newest["interaction_id"]
    assert quest.state("interactions").open_requests == [newest["interaction_id"]]
    # A late answer to a replaced request is refused and writes nothing; the newest takes it.
    before = domain_events(quest)
    with pytest.raises(Conflict) as err:
        service.reply(quest, service.Reply(interaction_id=first["interaction_id"], text="A"))
    assert err.value.code == "request_superseded" and domain_events(quest) == before
    service.reply(quest, service.Reply(interaction_id=newest["interaction_id"], text="C", option_id="a"))


async def test_allow_free_text_false_makes_a_reply_choose_an_option(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        strict = await ok(c, "interact", {"kind": "decision_request", "message": "A or B?", "options": OPTIONS,
                                          "allow_free_text": False})  # fmt: skip
        assert strict["allow_free_text"] is False
        before = domain_events(quest)
        with pytest.raises(Invalid) as err:
            service.reply(quest, service.Reply(interaction_id=strict["interaction_id"], text="I choose A"))
        assert err.value.code == "free_text_not_allowed" and err.value.to_dict()["options"] == ["a", "b"]
        assert domain_events(quest) == before
        service.reply(quest, service.Reply(interaction_id=strict["interaction_id"], text="A", option_id="a"))
        taken = await ok(c, "interact", {"message": "Going with A."})
    assert [(m["text"], m["option_id"]) for m in taken["recent_inbound_messages"]] == [("A", "a")]
    assert _record(quest, strict["interaction_id"])["delivery_options"]["allow_free_text"] is False


async def test_expects_reply_overrides_the_default_reply_mode(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        fyi = await ok(c, "interact", {"kind": "decision_request", "message": "I will take A unless you object.",
                                       "options": OPTIONS, "expects_reply": False})  # fmt: skip
        question = await ok(c, "interact", {"kind": "answer", "message": "Which seed range?", "expects_reply": True})
        closed = await ok(c, "interact", {"kind": "approval_result", "message": "Approved: A.", "expects_reply": True})
        default = await ok(c, "interact", {"kind": "decision_request", "message": "A or B?", "options": OPTIONS})
    assert (fyi["reply_mode"], fyi["expects_reply"], fyi["interaction_status"]) == ("threaded", False, "sent")
    assert (question["reply_mode"], question["expects_reply"]) == ("threaded", True)
    assert (closed["reply_mode"], closed["expects_reply"]) == ("threaded", True)
    assert (default["reply_mode"], default["expects_reply"]) == ("blocking", True)
    assert default["open_request_count"] == 1  # the threaded ones wait for nothing
    sent = {e.interaction_id: e for e in quest.log.read() if isinstance(e, InteractionSent)}
    assert [sent[r["interaction_id"]].expects_reply for r in (fyi, question, closed, default)] == [False, True, True, True]


async def test_min_interval_seconds_holds_back_progress_sent_too_soon(home: Home, quest: Quest) -> None:
    # The previous progress update, an hour old (its ts set as the log would have then).
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    quest.emit(InteractionSent(interaction_id="ia-older", kind="progress", message="Epoch 4 of 10.", reply_mode="threaded",
                               fingerprint="f0", ts=hour_ago))  # fmt: skip
    async with artifact_client(home) as c:
        # An hour is past the interval: even a repeat of the last text goes out (a heartbeat).
        beat = await ok(c, "interact", {"message": "Epoch 4 of 10.", "min_interval_seconds": 600})
        assert beat["status"] == "ok" and beat["interaction_id"]
        watch = LogWatch(quest)
        held = await ok(c, "interact", {"message": "Epoch 5 of 10.", "min_interval_seconds": 600})
        assert (held["status"], held["suppressed"], held["suppressed_reason"]) == ("suppressed_min_interval", True, "min_interval")
        assert held["interaction_id"] is None and 0 < held["retry_after_seconds"] <= 600
        assert watch.types() == []  # nothing sent (no message was queued, so nothing consumed)
        # Without the limit the same update is sent as usual; a repeat is still suppressed.
        sent = await ok(c, "interact", {"message": "Epoch 5 of 10."})
        again = await ok(c, "interact", {"message": "epoch 5  of 10."})
    assert sent["status"] == "ok"
    assert (again["status"], again["suppressed_reason"]) == ("suppressed_duplicate", "unchanged")
    assert again["duplicate_of"] == sent["interaction_id"]


BAD = [
    ({"message": "hi", "attachments": [{"path": "figs/missing.png"}]}, "attachment_not_found"),
    ({"message": "hi", "attachments": [{"path": "../outside.txt"}]}, "invalid_attachments"),
    ({"message": "hi", "connector_hints": {"qq": "markdown"}}, "invalid_connector_hints"),
    ({"message": "hi", "surface_actions": [{"text": "no type"}]}, "invalid_surface_actions"),
    ({"message": "hi", "importance": "urgent"}, "invalid_importance"),
    ({"message": "hi", "response_phase": "later"}, "invalid_response_phase"),
    ({"message": "hi", "summary_preview": ""}, "invalid_summary_preview"),
    ({"message": "hi", "reply_mode": "none", "expects_reply": True}, "invalid_expects_reply"),
    ({"kind": "milestone", "message": "hi", "min_interval_seconds": 30}, "invalid_min_interval"),
    ({"message": "hi", "interaction_id": "has space"}, "invalid_interaction_id"),
    ({"kind": "answer", "message": "hi", "allow_free_text": False}, "invalid_allow_free_text"),
    ({"message": "hi", "interaction_id": "ia-taken"}, "interaction_exists"),
    ({"message": "hi", "attachment": []}, "unknown_argument"),
]


async def test_a_bad_delivery_argument_is_refused_with_its_code_and_writes_nothing(home: Home, quest: Quest) -> None:
    service.interact(quest, service.Interact(message="first", interaction_id="ia-taken"))
    files = _interaction_files(quest)
    async with artifact_client(home) as c:
        for args, code in BAD:
            before = domain_events(quest)
            error = await refused(c, "interact", args)
            assert error["error"] == code, (args, error)
            assert domain_events(quest) == before and _interaction_files(quest) == files, args
