"""``complete_quest`` of the `artifact` namespace: the quest ends only after the user
approved it explicitly, answering a blocking decision request whose ``reply_schema``
names ``decision_type: quest_completion_approval``; it emits ``quest.completed``
through :func:`ds_events.services.quest.lifecycle.complete`.

Error codes: ``approval_required`` (no such request yet), ``waiting_for_user`` (not
answered yet), ``approval_not_explicit`` (the answer is not a yes), plus
``quest_completed`` of the quest domain.
"""

from __future__ import annotations

import re

from ds_events.artifacts.validate import check_text
from ds_events.errors import Conflict
from ds_events.home import Quest
from ds_events.services import quest as quests
from ds_events.services.research.commands import CompleteQuest, CompleteQuestResult
from projections.interactions import InboundItem, InteractionRecord, State as InteractionsState

__all__ = ["complete_quest", "completion_approval", "COMPLETION_DECISION_TYPE"]

COMPLETION_DECISION_TYPE = "quest_completion_approval"

_YES = re.compile(r"\b(yes|yep|approve|approved|agree|agreed|confirm|confirmed|accept|accepted|ok|okay|complete it|go ahead|lgtm)\b")
_NO = re.compile(r"\b(no|not|don't|dont|do not|reject|rejected|deny|denied|wait|later|continue|keep going|hold)\b")
_YES_CJK = ("同意", "确认", "批准", "可以结束", "完成吧")
_NO_CJK = ("不同意", "不要", "不行", "别", "暂不", "继续")
_YES_OPTIONS = {"yes", "approve", "approved", "complete", "confirm", "accept", "agree", "done", "finish", "end"}


def complete_quest(quest: Quest, cmd: CompleteQuest) -> CompleteQuestResult:
    """Mark the quest completed, only after an explicit user approval."""
    summary = check_text(cmd.summary, "summary", required=False, max_chars=20_000).strip()
    status = quest.state("status")
    if status.status == "completed":
        return CompleteQuestResult(ok=True, status="already_completed", quest_id=quest.id, interaction_id=None,
                                   approval_message_id=None, message="the quest is already completed", seq=None)  # fmt: skip
    request, reply = completion_approval(quest.state("interactions"))
    summary = summary or "The research line is complete and the user approved ending the quest."
    stored = quests.complete(quest, quests.Complete(summary=f"{summary} (approved by the user in {request.interaction_id})"))
    return CompleteQuestResult(
        ok=True, status="completed", quest_id=quest.id, interaction_id=request.interaction_id,
        approval_message_id=reply.id, message=summary, seq=stored.seq,
    )  # fmt: skip


def completion_approval(interactions: InteractionsState) -> tuple[InteractionRecord, InboundItem]:
    """The completion request and the user's reply approving it, or the refusal that says
    what is missing (``approval_required``, ``waiting_for_user``, ``approval_not_explicit``)."""
    ask = (
        "ask first: interact(kind=\"decision_request\", reply_mode=\"blocking\", "
        f"reply_schema={{\"decision_type\": \"{COMPLETION_DECISION_TYPE}\"}}, message=\"May I end the quest?\")"
    )
    requests = [r for r in interactions.interactions.values() if _is_completion_request(r)]
    if not requests:
        raise Conflict(f"completing the quest needs the user's explicit approval: {ask}", code="approval_required",
                       status="approval_required", decision_type=COMPLETION_DECISION_TYPE)  # fmt: skip
    request = requests[-1]
    replies = [interactions.inbound[i] for i in request.replies if i in interactions.inbound]
    if not replies:
        raise Conflict(f"the completion request {request.interaction_id} waits for the user's answer",
                       code="waiting_for_user", status="waiting_for_user", interaction_id=request.interaction_id)  # fmt: skip
    reply = replies[-1]
    if not _approves(reply.text, reply.option_id):
        raise Conflict(
            f"the user's answer to {request.interaction_id} is not an explicit approval ({reply.text[:120]!r}): "
            f"continue the work, or {ask}",
            code="approval_not_explicit", status="approval_not_explicit", interaction_id=request.interaction_id,
            approval_message_id=reply.id,
        )  # fmt: skip
    return request, reply


def _is_completion_request(record: InteractionRecord) -> bool:
    if record.kind != "decision_request" or record.reply_mode != "blocking":
        return False
    schema = record.reply_schema or {}
    if schema.get("decision_type") == COMPLETION_DECISION_TYPE:
        return True
    prop = (schema.get("properties") or {}).get("decision_type") if isinstance(schema.get("properties"), dict) else None
    return isinstance(prop, dict) and (prop.get("const") == COMPLETION_DECISION_TYPE or prop.get("enum") == [COMPLETION_DECISION_TYPE])


def _approves(text: str, option_id: str | None) -> bool:
    if option_id is not None:
        return option_id.strip().lower() in _YES_OPTIONS
    said = text.strip().lower()
    if any(w in said for w in _NO_CJK) or _NO.search(said):
        return False
    return any(w in said for w in _YES_CJK) or bool(_YES.search(said))
