"""Every error code the artifacts domain raises: its services (``ds_events/services/
artifacts/``) and its low helpers (``ds_events/artifacts/``: validation, metrics, git).

Status is what the daemon answers with: 400 for :class:`~ds_events.errors.Invalid`
(and a plain :class:`~ds_events.errors.ServiceError`, the arXiv fetch failures), 404 for
:class:`~ds_events.errors.NotFound`, 409 for :class:`~ds_events.errors.Conflict`. The
codes of the shared command vocabulary (``unknown_argument``, ``missing_argument``,
``invalid_argument``) are :mod:`ds_events.services.commands`'; ``path_outside_root`` is
:func:`ds_events.paths.confined`'s, which the checks here call.

One code, one entry (``tests/test_error_catalogue.py`` holds it so): a code raised here
that another catalogue holds (``invalid_action``/``invalid_anchor`` the quest domain's,
``invalid_mode``/``unexpected_argument`` the bash domain's, ``invalid_filter`` the shared
vocabulary's) is not repeated. The codes that the research domain raises through these
helpers, or raises itself (``missing_fields``, ``unknown_branch``, ``worktree_exists``
...), are catalogued here.
"""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES"]

CODES = catalogue(
    # -- what callers send (ds_events.artifacts.validate) --
    ErrorCode("invalid_id", 400, "An id is not 1-64 letters, digits, '.', '_' or '-' starting with a letter or digit."),
    ErrorCode("missing_fields", 400, "A required field is absent or empty; `missing` lists them."),
    ErrorCode("invalid_field", 400, "A field has the wrong JSON type, length or shape; `field` names it."),
    ErrorCode("unknown_kind", 400, "A record's `kind` is not one of the record kinds; `allowed` lists them."),
    ErrorCode("payload_too_large", 400, "A record's payload is over 256 KiB: keep big data in files and record their paths."),
    ErrorCode("path_outside_quest", 400, "A path leaves the quest repository (`..`, or absolute outside it)."),
    ErrorCode("path_not_allowed", 400, "A path is inside `.git/` or `.ds/`, which the runtime owns."),
    # -- metrics and metric contracts (ds_events.artifacts.metrics) --
    ErrorCode("invalid_metrics_summary", 400, "`metrics_summary` is not a non-empty flat object of metric id -> finite number."),
    ErrorCode("invalid_metric_direction", 400, "A direction is not higher/lower (or a spelling of them), or two sources disagree."),
    ErrorCode("invalid_metric_contract", 400, "The metric contract is incomplete or malformed; `problems` says where."),
    ErrorCode("unknown_primary_metric", 400, "The primary metric is not one of `metrics_summary`'s."),
    ErrorCode("invalid_primary_metric", 400, "`primary_metric` is neither a metric id nor {metric_id, value?, direction?}."),
    ErrorCode("primary_metric_mismatch", 400, "`primary_metric` and the contract's `primary_metric_id` name different metrics."),
    ErrorCode("metric_value_mismatch", 400, "Two sources (metrics_summary, metric_rows, primary_metric.value) give a metric two values."),
    ErrorCode("invalid_metric_rows", 400, "`metric_rows` is not a list of {metric_id, finite value, ...}; `problems` says which."),
    ErrorCode("duplicate_metric_rows", 400, "A metric appears in several rows: say in `metrics_summary` which value counts."),
    # -- baselines, the gate, main experiments --
    ErrorCode("artifact_exists", 409, "The id is taken by another record, baseline, run or campaign (ids share one namespace)."),
    ErrorCode("baseline_exists", 409, "The baseline id is already published in this quest."),
    ErrorCode("unknown_baseline", 404, "Neither this quest nor the home's registry has that baseline; `known_baseline_ids` lists theirs."),
    ErrorCode("unknown_variant", 404, "The baseline has no such variant; `variant_ids` lists its variants."),
    ErrorCode("baseline_not_confirmed", 409, "The baseline named for a run is not confirmed: confirm_baseline first."),
    ErrorCode("no_confirmed_baseline", 409, "The baseline gate is closed: confirm a baseline or waive the gate first."),
    ErrorCode("baseline_already_confirmed", 409, "A baseline is confirmed: there is no gate left to waive."),
    ErrorCode("baseline_mismatch", 409, "Only the confirmed baseline can be overwritten, and it changed meanwhile or is another one."),
    ErrorCode("baseline_path_changed", 409, "An overwrite names another baseline_path: allow_path_change if it is the same comparator."),
    ErrorCode("protocol_breaking_change", 409, "An overwrite would break comparability with recorded runs; `reasons` says how."),
    ErrorCode("variant_mismatch", 409, "A run names a baseline variant other than the confirmed one."),
    ErrorCode("missing_metric_ids", 400, "A run lacks metrics the baseline's contract requires; nothing was recorded."),
    ErrorCode("metric_direction_mismatch", 400, "A run gives a metric another direction than the baseline's contract."),
    ErrorCode("evaluation_protocol_mismatch", 400, "A run's evaluation protocol differs from the baseline's (see `differing_keys`)."),
    ErrorCode("run_exists", 409, "That run id is already recorded."),
    ErrorCode("unknown_run", 404, "No main experiment has that run id."),
    # -- analysis campaigns --
    ErrorCode("invalid_slices", 400, "`slices` is not a list of 1 to 32 titles or {title, slice_id?, goal?} objects."),
    ErrorCode("duplicate_slice_id", 400, "Two slices of a campaign have one id; `slice_ids` lists the repeated ones."),
    ErrorCode("campaign_ids_exhausted", 409, "No free campaign id after many tries: stale refs/ds/reserved/campaign-* refs remain."),
    ErrorCode("unknown_campaign", 404, "No analysis campaign has that id."),
    ErrorCode("unknown_slice", 404, "The campaign has no such slice; `slice_ids` lists its slices."),
    ErrorCode("slice_already_recorded", 409, "That slice's outcome is already recorded."),
    ErrorCode("invalid_slice_status", 400, "A slice's status is not completed, failed or abandoned."),
    # -- branches, worktrees, checkpoints (ds_events.artifacts.git, .checkpoints) --
    ErrorCode("invalid_branch_kind", 400, "`branch_kind` is not idea, run, analysis or paper."),
    ErrorCode("invalid_branch_name", 400, "A branch name is not <kind>/<segment>[/<segment>] of letters, digits, '.', '_', '-'."),
    ErrorCode("conflicting_arguments", 400, "create_worktree=false and create_worktree_flag=true contradict each other."),
    ErrorCode("unknown_start_point", 404, "`start_point` is not a branch or commit of the quest repository."),
    ErrorCode("branch_exists", 409, "The branch exists already, or clashes with one (run/a next to run/a/b)."),
    ErrorCode("worktree_exists", 409, "Something is already where the branch's worktree would go."),
    ErrorCode("unknown_branch", 404, "No such branch was prepared (or it is gone from the repository)."),
    ErrorCode("branch_has_no_worktree", 409, "The branch was prepared without a worktree, so there is nothing to commit there."),
    ErrorCode("worktree_missing", 404, "The branch's worktree is gone from disk."),
    ErrorCode("nothing_to_commit", 409, "The tree equals its parent's: pass allow_empty to commit anyway."),
    ErrorCode("branch_moved", 409, "The branch moved while the call was prepared: call it again."),
    # -- arXiv (.arxiv) --
    ErrorCode("invalid_paper_id", 400, "Not an arXiv id such as 2401.01234, 2401.01234v2 or hep-th/9901001."),
    ErrorCode("missing_paper_id", 400, "mode=read needs a paper_id (mode=list without one lists the library)."),
    ErrorCode("arxiv_offline", 400, "arXiv could not be reached; nothing was cached."),
    ErrorCode("arxiv_not_found", 404, "arXiv has no such paper."),
    ErrorCode("arxiv_bad_response", 400, "arXiv (or the fetcher) answered with no usable paper; nothing was cached."),
    ErrorCode("arxiv_fetch_failed", 400, "The fetcher failed unexpectedly; nothing was cached."),
)
