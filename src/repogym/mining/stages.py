"""The stages of `repogym.mining.mine` after the walk: kinds kept, statements flagged, privacy applied."""

from __future__ import annotations

from repogym.mining.config import MiningConfig
from repogym.mining.filters import Candidate
from repogym.mining.funnel import MAX_EXAMPLES, Funnel, FunnelCounter, FunnelFlag, FunnelStep
from repogym.mining.kinds import ChangeClassification, classify_change
from repogym.mining.prs import PrExport, linked_issue_numbers
from repogym.privacy.scrub import ScrubConfig, SecretPolicy, scrub_tasks
from repogym.task import Task
from repogym.taskmeta import MiningRecord

QUOTES_FIX = "statement_quotes_fix"


def classify_and_keep(
    survivors: list[Candidate], config: MiningConfig, export: PrExport | None, counter: FunnelCounter
) -> dict[str, ChangeClassification]:
    """Classify each survivor, drop the kinds not kept (in place), return every classification by id."""
    kept_kinds = set(config.kinds)
    found: dict[str, ChangeClassification] = {}
    kept: list[Candidate] = []
    for candidate in survivors:
        found[candidate.instance_id] = result = classify_candidate(candidate, export)
        if result.kind.value in kept_kinds:
            kept.append(candidate)
        else:
            counter.drop(f"kind_{result.kind.value}", candidate.instance_id)
    survivors[:] = kept
    return found


def classify_candidate(candidate: Candidate, export: PrExport | None) -> ChangeClassification:
    """`classify_change` over what mining knows of a candidate: message, PR, labels, patches, changelog."""
    split, pull = candidate.split, candidate.pull
    labels = list(pull.labels) if pull else []
    if export is not None:
        numbers = linked_issue_numbers(*((pull.title, pull.body) if pull else ()), candidate.commit.message)
        labels += [label for n in numbers if n in export.issues for label in export.issues[n].labels]
    message = candidate.commit.message + (f"\n\n{pull.body}" if pull and pull.body else "")
    return classify_change(
        message,
        split.code_patch if split else "",
        split.test_patch if split else "",
        [(diff.path, diff.text) for diff in split.docs] if split else (),
        labels,
        pr_title=pull.title if pull else "",
    )


def quotes_fix_flag(tasks: tuple[Task, ...]) -> FunnelFlag:
    flagged = [t.instance_id for t in tasks if MiningRecord.of(t).statement_quotes_fix]
    return FunnelFlag(
        QUOTES_FIX,
        "problem statement quotes added lines of the gold patch (metadata.mining.statement_quotes_fix)",
        len(flagged),
        tuple(flagged[:MAX_EXAMPLES]),
    )


def redact(tasks: tuple[Task, ...], funnel: Funnel) -> tuple[tuple[Task, ...], Funnel]:
    """Secrets and personal data out of the candidates before they are written anywhere."""

    scrubbed = scrub_tasks(tasks, ScrubConfig(policy=SecretPolicy.REDACT, check_license=False))
    dropped = [d.instance_id for d in scrubbed.dropped]
    step = FunnelStep(
        "secret_unredactable",
        "privacy",
        "holds a secret that cannot be redacted without breaking its patch",
        len(dropped),
        tuple(dropped[:MAX_EXAMPLES]),
    )
    kept = scrubbed.tasks
    return kept, funnel.extend([step], len(kept), (t.instance_id for t in kept))
