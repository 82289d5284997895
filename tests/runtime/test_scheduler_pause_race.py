"""A pause or stop sent by another process signals the agent's group itself
(``quests.control`` calls ``stop_runner``): the agent can die, and its runner return,
before the scheduler's next poll sees the request. The request is still why the turn
ended — interrupted (pause) or cancelled (stop), never "failed" with a retry."""

from __future__ import annotations

import pytest

from ds_events.config import RunnerConfig
from ds_events.home import Quest
from ds_events.services import quest as quest_service
from ds_events.services.runtime import steering
from ds_events.services.runtime.commands import PromptRequest, RunResult, TurnSpec
from ds_events.services.runtime.scheduler import QuestScheduler
from ds_events.services.runtime.turns import TurnRecorder


class DiesOnControl:
    """Stands in for an agent killed by the control's signal: the control event is in the
    log, and the runner returns at once with the signal's exit code — before any poll."""

    name = "scripted"

    def __init__(self, action: str) -> None:
        self.action = action

    async def run(self, spec: TurnSpec, recorder: TurnRecorder) -> RunResult:
        steering.control(recorder.quest, quest_service.Control(action=self.action, reason="from elsewhere"))
        return RunResult(ok=False, exit_code=-15, error="")

    async def interrupt(self) -> None:
        return None


@pytest.mark.parametrize(("action", "outcome", "reason"), [("pause", "interrupted", "paused"), ("stop", "cancelled", "stopped")])
async def test_an_agent_killed_by_a_control_before_the_poll_ends_its_turn_for_that_reason(
    quest: Quest, action: str, outcome: str, reason: str
) -> None:
    quest_service.post_message(quest, quest_service.PostMessage(text="go"), source="cli")
    cfg = RunnerConfig(name="scripted", max_attempts=3, backoff_seconds=0.0)

    def prompt(q: Quest, request: PromptRequest) -> str:
        return "go\n"

    sched = QuestScheduler(quest, make_runner=lambda n: DiesOnControl(action), runner="scripted", model="",
                           config=cfg, build_prompt=prompt)  # fmt: skip
    finished = await sched.run_until_idle()
    assert [(f.outcome, f.reason) for f in finished] == [(outcome, reason)]
    assert quest.state("turns").retry is None
