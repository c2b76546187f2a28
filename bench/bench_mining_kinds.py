"""How well `repogym.mining.kinds` tells fixes apart, on hand-labelled candidates of real histories.

The labels (tests/mining/data/real_change_kinds.jsonl: repo, commit, kind, a
one-line reason) are a fixed random sample (seed 2026, 36 candidates each)
of the candidates mined from pallets/flask and pytest-dev/pytest. Each
repository is mined with every kind kept and no privacy stage (only the
classification matters), and each labelled commit's predicted kind is compared
with its label: precision and recall of `fix`, and the confusion table.

    .venv/bin/python bench/bench_mining_kinds.py --repo pallets/flask=../repos/flask \\
        --repo pytest-dev/pytest=../repos/pytest
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from _common import markdown_table

from repogym.mining import MiningConfig, mine
from repogym.mining.kinds import ChangeKind

LABELS = Path(__file__).resolve().parent.parent / "tests/mining/data/real_change_kinds.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repo", action="append", required=True, help="owner/name=PATH of a clone (repeatable)"
    )
    parser.add_argument("--labels", type=Path, default=LABELS)
    args = parser.parse_args()
    clones = dict(item.split("=", 1) for item in args.repo)
    labels = [json.loads(line) for line in args.labels.read_text().splitlines() if line.strip()]
    predicted: dict[str, dict[str, object]] = {}
    for name, path in clones.items():
        config = MiningConfig(redact_secrets=False, kinds=[kind.value for kind in ChangeKind], repo_name=name)
        for task in mine(path, config).tasks:
            predicted[task.metadata["mining"]["commit"]] = task.metadata["mining"]
    pairs = [(row, predicted.get(row["commit"])) for row in labels if row["repo"] in clones]
    missing = [row["commit"][:10] for row, found in pairs if found is None]
    scored = [
        (row["kind"], str(found["change_kind"]), row, found) for row, found in pairs if found is not None
    ]
    confusion = collections.Counter((truth, guess) for truth, guess, _, _ in scored)
    true_fix = sum(1 for truth, guess, _, _ in scored if truth == guess == "fix")
    said_fix = sum(1 for _, guess, _, _ in scored if guess == "fix")
    are_fix = sum(1 for truth, _, _, _ in scored if truth == "fix")
    precision = true_fix / said_fix if said_fix else 0.0
    recall = true_fix / are_fix if are_fix else 0.0
    kinds = [kind.value for kind in ChangeKind]
    print(
        f"{len(scored)} labelled candidates ({are_fix} fixes); not found among the candidates: {missing or 'none'}"
    )
    print(
        f"fix: precision {precision:.2f} ({true_fix}/{said_fix}), recall {recall:.2f} ({true_fix}/{are_fix})"
    )
    agree = sum(confusion[(kind, kind)] for kind in kinds)
    print(f"all four kinds: {agree}/{len(scored)} agree ({agree / max(1, len(scored)):.0%})\n")
    rows = [[f"label {truth}", *(confusion[(truth, guess)] for guess in kinds)] for truth in kinds]
    print(markdown_table(["", *(f"said {kind}" for kind in kinds)], rows))
    print("\nwrong about fix:")
    for truth, guess, row, found in scored:
        if (truth == "fix") != (guess == "fix"):
            print(f"  {row['commit'][:10]} label {truth}, said {guess} ({found['change_kind_confidence']}): "
                  f"{row['reason']} | cues {found['change_kind_cues']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
