"""`repogym report` on a `repogym verify --out` folder: the verifier's reliability diagram (predicted p(YES) against
the observed resolve rate per bin, the diagonal, each bin's count) with AUC and ECE and their intervals beside it.

The verify folder is real: the suite's tiny model (a causal LM with a chat template is a verifier) scores the graded
rollouts of the verifier tests' eleven tasks."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import pytest

from ..support.cli import cli

pytestmark = pytest.mark.slow

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def verify_folder(tmp_path_factory: pytest.TempPathFactory, tiny_model, graded_rollouts) -> Path:
    out = tmp_path_factory.mktemp("verify-report") / "verify"
    result = cli(
        "verify", *graded_rollouts.all, "--verifier", str(tiny_model), "--out", str(out), "--bins", "5"
    )
    assert result.exit_code == 0, result.output
    return out


def test_the_report_draws_a_verify_folders_reliability_diagram_with_auc_and_ece(verify_folder, tmp_path):
    page = tmp_path / "report.html"
    result = cli("report", str(verify_folder), "--out", str(page), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["verifiers"] == 1
    summary = json.loads((verify_folder / "summary.json").read_text())
    html = page.read_text(encoding="utf-8")
    section = html.split('<section id="verifiers">')[1].split("</section>")[0]
    assert "No verify folder" not in section
    # The plot, titled with what it shows, embedded as a PNG and written beside the page.
    image = re.search(r'<img class="plot" alt="([^"]*)" src="data:image/png;base64,([^"]+)"', section)
    assert image is not None
    assert "verifier reliability, predicted p(YES) vs observed resolve rate (33 attempts)" in image[1]
    assert base64.b64decode(image[2]).startswith(PNG_MAGIC)
    written = list((tmp_path / "report_plots").glob("reliability-*.png"))
    assert len(written) == 1 and written[0].read_bytes() == base64.b64decode(image[2])
    # AUC and ECE as the summary has them, each with its interval, beside the plot.
    for name in ("auc", "ece"):
        low, high = summary["intervals"][name]
        assert f"{summary[name]:.3f} [{low:.3f}, {high:.3f}]" in section, name
    # Every bin that holds attempts: its count, mean p(YES) and resolve rate; the counts add up to the attempts.
    rows = re.findall(
        r"<tr><td>([\d.]+-[\d.]+)</td><td class=\"num\">(\d+)</td><td class=\"num\">([\d.]+)</td>"
        r"<td class=\"num\">([\d.]+)</td></tr>",
        section,
    )
    filled = [b for b in summary["reliability"] if b["count"]]
    assert [(int(count), float(rate)) for _, count, _, rate in rows] == [
        (b["count"], pytest.approx(b["resolved_rate"], abs=5e-4)) for b in filled
    ]
    assert sum(int(count) for _, count, _, _ in rows) == summary["attempts"] == 33


def test_a_verify_summary_without_bins_is_named_in_a_warning(verify_folder, tmp_path):
    shutil.copytree(verify_folder, tmp_path / "runs" / "verify")
    broken = tmp_path / "runs" / "broken"
    broken.mkdir()
    summary = json.loads((verify_folder / "summary.json").read_text())
    del summary["reliability"]
    (broken / "summary.json").write_text(json.dumps(summary))
    result = cli("report", str(tmp_path / "runs"), "--out", str(tmp_path / "report.html"), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["verifiers"] == 1
    assert report["warnings"] == [
        f"{broken / 'summary.json'}: a verify summary without reliability bins; skipped"
    ]
