"""`repogym report` from real run folders: sections, plots, escaping, offline rendering in Chromium."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from repogym.evaluate.report.collect import FunnelFile
from repogym.evaluate.report.funnels import funnel_view
from repogym.evaluate.report.plots import metric_family

from ..support import chromium
from ..support.cli import cli

# Real sandboxed rollouts (session fixtures shared by both modules): one xdist worker builds them once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("evaluate-run-folders")]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="session")
def report_page(tmp_path_factory, report_inputs) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = cli("report", *map(str, report_inputs), "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def parsed(page: Path) -> list[tuple[str, dict[str, str | None]]]:
    collector = _Collector()
    collector.feed(page.read_text(encoding="utf-8"))
    return collector.tags


def test_every_section_is_filled_from_the_run_folders(report_page):
    html = report_page.read_text()
    for section in ("training", "before-after", "funnels", "tasks", "trajectories"):
        assert f'<section id="{section}">' in html
    assert "No training run" not in html and "No eval folder" not in html and "No funnel file" not in html
    assert (
        "train/sft: loss" in html and "train/grpo: reward" in html and "train/grpo: completion length" in html
    )
    assert "mining funnel" in html and "validation funnel" in html and "synth funnel" in html
    assert "commits scanned" in html and "candidates in" in html
    synth = html.split("<h3>synth funnel: ")[1].split("</table>")[0]  # what `repogym synth` wrote, drawn
    assert "sites in covered functions" in synth and "within --max" in synth and "written" in synth
    # before/after: one split (toy), two stages in training order
    table = html.split('<table class="before-after">')[1].split("</table>")[0]
    assert table.index("baseline") < table.index("sft") and "50.0% [0.0%, 100.0%]" in table
    tasks = html.split('<table class="tasks">')[1].split("</table>")[0]
    assert tasks.count("<tr>") == 3 and "flip_operator" in tasks and 'class="num none">0/2' in tasks
    assert html.count('<details class="attempt">') == 8  # 2 runs x 2 tasks x 2 attempts
    assert '<span class="add">+    return a + b</span>' in html  # the gold diff, coloured
    assert "tests/test_calc.py::test_add" in html  # per-attempt test results


def test_plots_are_embedded_and_written_beside_the_page(report_page):
    images = [attrs for tag, attrs in parsed(report_page) if tag == "img"]
    files = sorted((report_page.parent / "report_plots").glob("*.png"))
    assert len(images) == len(files) >= 9  # 3 sft + 4 grpo curves, before/after, 3 funnels
    assert all(f.read_bytes().startswith(PNG_MAGIC) for f in files)
    assert all((a["src"] or "").startswith("data:image/png;base64,iVBORw0KGgo") for a in images)


def test_page_references_nothing_outside_itself(report_page):
    for tag, attrs in parsed(report_page):
        for name in ("src", "href", "action", "srcset", "poster", "data"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith(("data:", "#")), (tag, name, value[:80])
        assert not (tag == "link" or (tag == "script" and attrs.get("src")))
    html = report_page.read_text()
    assert "default-src 'none'" in html and "@import" not in html and "url(" not in html


def test_report_trajectory_script_injection_is_escaped(report_page):
    html = report_page.read_text()
    assert html.count("<script") == 1  # the page's own; the hostile ones are text
    assert "&lt;script&gt;document.body.setAttribute(" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=" in html
    assert "</section><script>" not in html


def test_run_dir_with_nothing_known_is_named_in_the_error(tmp_path, eval_world):
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("hello")
    result = cli("report", str(eval_world.sft), str(stray), "--out", str(tmp_path / "r.html"))
    assert (
        result.exit_code == 2
        and str(stray) in result.output
        and "holds nothing the report knows" in result.output
    )
    assert not (tmp_path / "r.html").exists()
    missing = cli("report", str(tmp_path / "nope"), "--out", str(tmp_path / "r.html"))
    assert missing.exit_code == 2 and "nope: no such file or folder" in missing.output


def test_funnel_views_read_odd_files_defensively(tmp_path):
    def view(data, name="x.funnel.json"):
        return funnel_view(FunnelFile(tmp_path / name, name, data))

    assert view([1, 2]) is None and view({"note": "hi"}) is None
    mining = view({"scanned": 10, "candidates": 4, "written": 3,
                   "steps": [{"name": "no test", "stage": "scan", "count": 6}, {"name": "big", "count": 1}, "junk"]})  # fmt: skip
    assert [(r.label, r.count) for r in mining.rows] == [
        ("commits scanned", 10),
        ("no test", 4),
        ("big", 3),
        ("written", 3),
    ]
    generic = view(
        {"tasks": 5, "by_method": {"op_swap": 3, "off_by_one": 2}, "label": "x"}, "synth_funnel.json"
    )
    assert generic.kind == "synth" and [(r.label, r.count) for r in generic.rows] == [
        ("tasks", 5), ("by_method.op_swap", 3), ("by_method.off_by_one", 2)]  # fmt: skip


def test_the_synth_funnel_repogym_synth_writes_is_drawn_summed_over_repositories(tmp_path):
    columns = ("sites", "uncovered", "not_drawn", "over_max", "written")

    def record(repo, swap, change):
        return {"repo": repo, "written": swap[-1] + change[-1], "by_method": {
            "op_swap": dict(zip(columns, swap, strict=True)), "op_change": dict(zip(columns, change, strict=True))}}  # fmt: skip

    data = [
        record("acme/b", (10, 1, 2, 0, 7), (4, 0, 0, 1, 3)),
        record("acme/a", (6, 0, 1, 0, 5), (0, 0, 0, 0, 0)),
    ]
    view = funnel_view(FunnelFile(tmp_path / "c.jsonl.funnel.json", "c.jsonl.funnel.json", data))
    assert view.kind == "synth" and [(r.label, r.count, r.note) for r in view.rows] == [
        ("sites in covered functions of 2 repositories", 20, ""),
        ("on a line a passing test runs", 19, "dropped 1 (op_swap 1)"),
        ("drawn (per-function limit)", 16, "dropped 3 (op_swap 3)"),
        ("within --max", 15, "dropped 1 (op_change 1)"),
        ("written", 15, ""),
    ]


def test_training_columns_fall_into_families():
    assert [metric_family(c) for c in ("loss", "train_loss", "reward", "rewards/tests_pass/std", "resolve_rate",
                                       "completions/mean_length", "completions/clipped_ratio", "learning_rate")] == [
        "loss", "loss", "reward", "reward", "resolve rate", "completion length", "clipping", "learning rate"]  # fmt: skip


def test_a_running_token_total_is_not_drawn_as_a_completion_length():
    """TRL's SFT logs `num_tokens`, every token trained on so far: it was drawn in a plot titled "completion
    length", a line that only rises."""
    assert metric_family("num_tokens") == "tokens seen"
    assert (
        metric_family("completions/mean_length")
        == metric_family("completions/max_length")
        == "completion length"
    )


@pytest.mark.skipif(chromium.executable() is None, reason="chromium is not installed (apt-get install -y chromium; "
                    "scripts/setup.sh installs it)")  # fmt: skip
def test_report_renders_in_headless_chromium_offline(report_page, tmp_path):
    from PIL import Image

    dom = chromium.run(report_page, tmp_path / "profile-dom", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout).group(0)
    total = int(re.search(r'data-images-total="(\d+)"', body).group(1))
    loaded = int(re.search(r'data-images-loaded="(\d+)"', body).group(1))
    assert total >= 9 and loaded == total  # every embedded plot decoded (naturalWidth > 0)
    assert int(re.search(r'data-tables="(\d+)"', body).group(1)) >= 5
    assert "data-pwned" not in body  # no hostile script or handler ran (they would set it on <body>)
    assert "&lt;script&gt;document.body.setAttribute('data-pwned'" in dom.stdout  # shown as text
    shot = tmp_path / "shot.png"
    taken = chromium.run(
        report_page, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2000"
    )
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, plot lines and bars: not a blank page
    most_common = max(colours)[0] / (1280 * 2000)
    assert most_common < 0.97


def test_report_json_side_files_match_the_page(report_inputs, report_page):
    summary = json.loads((report_inputs[1] / "summary.json").read_text())
    assert f"{summary['pass@1']:.1%}" in report_page.read_text()


def test_a_plain_rollout_folder_fills_the_viewer_and_the_rest_says_what_is_missing(eval_world, tmp_path):
    out = tmp_path / "only-rollout.html"
    result = cli("report", str(eval_world.sft / "rollout"), "--out", str(out), "--max-attempts", "3")
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert html.count('<details class="attempt">') == 3 and "(3 of 4 attempt(s) shown)" in html
    assert "toy__calc-1</b> attempt 0" in html and "toy__calc-2</b> attempt 0" in html  # first attempts first
    for missing in ("No training run", "No eval folder", "No funnel file", "No per-task results"):
        assert missing in html


def test_seeds_sharing_a_stage_are_all_drawn_not_only_the_first():
    """Three seeds' "sft heldout" evals: the bar is their mean with their range, not the first seed's
    figure shown as if it were the result (the learning benchmark's report did that)."""
    from repogym.evaluate.report.build import stage_bars
    from repogym.evaluate.report.collect import EvalRun

    def run(seed: int, value: float, stage: str = "sft") -> EvalRun:
        summary = {
            "stage": stage,
            "split": "heldout",
            "pass@1": value,
            "intervals": {"pass@1": [value / 2, value]},
        }
        return EvalRun(Path(f"seed-{seed}") / "eval" / stage, summary, f"{stage} heldout")

    bars = stage_bars([run(0, 0.195), run(1, 0.390), run(2, 0.293), run(0, 0.0, "baseline")])
    sft = bars[("heldout", "sft")]
    assert sft.value == pytest.approx((0.195 + 0.390 + 0.293) / 3)
    assert (sft.low, sft.high) == (0.195, 0.390) and sft.points == [0.195, 0.390, 0.293]
    alone = bars[("heldout", "baseline")]
    assert (alone.value, alone.low, alone.high) == (0.0, 0.0, 0.0)  # one run: its own bootstrap interval

    from repogym.evaluate.report.build import ReportResult, _before_after_section
    from repogym.evaluate.report.collect import ReportInputs

    runs = [run(0, 0.195), run(1, 0.390), run(2, 0.293), run(0, 0.0, "baseline")]
    cells = _before_after_section(ReportInputs(evals=runs), ReportResult(Path("r.html"), Path("p")))["cells"]
    assert cells[("heldout", "sft")].startswith("mean 29.3% of 3 runs: 19.5%")  # the table says it too
    assert cells[("heldout", "baseline")].startswith("0.0%")


def test_checkpoint_evals_draw_a_held_out_curve_and_stay_out_of_the_before_after_table(eval_world, tmp_path):
    """Evals of a run's checkpoints (stages `grpo-step-N`, the quickstart's) are one curve over the steps, not a
    column per checkpoint in the before/after table."""
    folders = []
    for step, value in ((4, 0.0), (8, 0.5), (12, 1.0)):
        folder = tmp_path / f"grpo-step-{step}"
        shutil.copytree(eval_world.sft, folder)
        summary = json.loads((folder / "summary.json").read_text())
        summary.update({"stage": f"grpo-step-{step}", "split": "heldout-functions", "pass@1": value})
        (folder / "summary.json").write_text(json.dumps(summary))
        folders.append(folder)
    out = tmp_path / "report.html"
    result = cli("report", str(eval_world.sft), *map(str, folders), "--out", str(out))
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert 'alt="grpo: held-out pass@1 at each checkpoint"' in page
    table = page[page.index('<table class="before-after">') :]
    table = table[: table.index("</table>")]
    assert "<th>sft</th>" in table and "grpo-step" not in table
