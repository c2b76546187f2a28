"""`repogym eval --route small=P1,large=P2 --by difficulty`: two real policies on toy tasks graded in the real
sandbox, routed offline over their stored attempts (the world: tests/support/routing.py), and a large policy
served over HTTP on loopback by `repogym serve`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym.dataset import save_tasks
from repogym.evaluate.difficulty import difficulty
from repogym.evaluate.report import build_report
from repogym.evaluate.routing import curve_thresholds

from ..support.cli import cli
from ..support.routing import FIX, RoutingWorld, attempt_seconds, build_world, stored_rows, went

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("evaluate-routing")]

ALONE = ("resolve_rate", "tokens", "seconds", "cost")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, toy_task) -> RoutingWorld:
    return build_world(tmp_path_factory.mktemp("routing"), toy_task)


def test_by_difficulty_the_small_policy_keeps_the_easy_tasks_and_the_large_one_gets_the_rest(world, tmp_path):
    out = tmp_path / "routed"
    summary = world.route(out)
    assert summary["policy"] == f"route:small={world.small},large=scripted:gold"
    assert {t: row["route"]["risk"] for t, row in summary["per_task"].items()} == {
        "toy__calc-1": 0.2, "toy__calc-2": 0.5, "toy__calc-3": 0.8, "toy__calc-4": 0.2,
    }  # fmt: skip
    assert went(summary) == {"toy__calc-1": "small", "toy__calc-2": "large", "toy__calc-3": "large",
                             "toy__calc-4": "small"}  # fmt: skip
    # The routed run is an eval like any other: pass@1 with its interval, equal to the chosen row of the curve.
    chosen = summary["routing"]["chosen"]
    assert (chosen["threshold"], chosen["share_to_large"], chosen["resolve_rate"]) == (0.5, 0.5, 0.75)
    assert summary["pass@1"] == 0.75 and summary["intervals"]["pass@1"][0] <= 0.75
    # Each policy alone is its own eval folder, which the curve's per-policy figures agree with.
    small, large = (json.loads((out / key / "summary.json").read_text()) for key in ("small", "large"))
    assert (small["pass@1"], large["pass@1"]) == (0.5, 1.0) == (
        summary["routing"]["small"]["resolve_rate"], summary["routing"]["large"]["resolve_rate"],
    )  # fmt: skip
    # The predictions are each task's attempt by the policy it went to: calc-2 gets the gold fix, calc-4 nothing.
    predictions = {
        row["instance_id"]: row["model_patch"] for row in map(json.loads, (out / "predictions.jsonl").open())
    }
    assert predictions["toy__calc-2"] == stored_rows(out / "large")["toy__calc-2"]["final_patch"] != ""
    assert predictions["toy__calc-4"] == "" and "src/calc/__init__.py" in predictions["toy__calc-1"]


def test_the_curve_ends_are_each_policy_alone_and_cost_no_attempt_more(world, tmp_path):
    ledgers = {key: (world.routed / key / "rollout" / ".ledger").read_text() for key in ("small", "large")}
    out = tmp_path / "priced"
    summary = world.route(out, "--price", "small=0.5/1", "--price", "large=3/15")
    routing = summary["routing"]
    curve = {row["threshold"]: row for row in routing["curve"]}
    assert list(curve) == curve_thresholds(0.5) and len(curve) == 21
    assert curve[0.0]["share_to_large"] == 1.0 and curve[1.0]["share_to_large"] == 0.0
    assert {name: curve[0.0][name] for name in ALONE} == {name: routing["large"][name] for name in ALONE}
    assert {name: curve[1.0][name] for name in ALONE} == {name: routing["small"][name] for name in ALONE}
    # Seconds are the attempts' own (without the final grade), summed from the stored rows; scripted policies
    # spend no tokens, so their priced cost is 0, not unknown.
    for key in ("small", "large"):
        rows = stored_rows(out / key)
        assert (
            routing[key]["seconds"] == pytest.approx(sum(map(attempt_seconds, rows.values())))
            and routing[key]["seconds"] > 0
        )
        assert routing[key]["tokens"] == 0 and routing[key]["cost"] == 0.0
    # Fewer tasks go on as the threshold rises; routing ran nothing: both evals' ledgers are as they were.
    shares = [row["share_to_large"] for row in routing["curve"]]
    assert shares == sorted(shares, reverse=True)
    assert {key: (out / key / "rollout" / ".ledger").read_text() for key in ("small", "large")} == ledgers


@pytest.mark.parametrize("threshold", ["0.3", "0.6", "0.9", "1"])
def test_a_task_the_small_policy_solves_and_the_predictor_trusts_is_never_sent_on(world, tmp_path, threshold):
    summary = world.route(tmp_path / "routed", "--threshold", threshold)
    for task_id, row in summary["per_task"].items():
        route = row["route"]
        if route["small_resolved"] and route["risk"] < float(threshold):
            assert route["to"] == "small", (task_id, route)
    # calc-1 (easy, solved by the small policy) stays at every threshold; calc-3 (solved, but hard) only above 0.8.
    assert went(summary)["toy__calc-1"] == "small"
    assert went(summary)["toy__calc-3"] == ("small" if float(threshold) > 0.8 else "large")
    expected = {"0.3": 0.75, "0.6": 0.5, "0.9": 0.5, "1": 0.5}[threshold]
    assert summary["pass@1"] == summary["routing"]["chosen"]["resolve_rate"] == expected


def test_difficulty_reads_the_gold_patch_tests_and_statement_when_none_is_stated(toy_task):
    plain = difficulty(toy_task)
    assert plain.stated == "" and 0 < plain.score < 1
    assert plain.facts["files"] == 1 and plain.facts["fail_to_pass"] == len(toy_task.FAIL_TO_PASS)
    bigger = toy_task.replace(FAIL_TO_PASS=[*toy_task.FAIL_TO_PASS, "t2", "t3"], problem_statement="x" * 5000)
    assert difficulty(bigger).score > plain.score
    assert difficulty(toy_task.replace(metadata={"difficulty": ">4 hours"})).score == 0.9


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (["--route", "small=scripted:gold,huge=scripted:gold"], "--route 'small=scripted:gold,huge=scripted:gold': "
                                                               "unknown policy key 'huge'"),
        (["--route", "small=scripted:gold"], "no large policy"),
        (["--route", "small=scripted:gold,large=scripted:gold", "-n", "2"], "--route: routing compares one attempt"),
        (["--route", "small=scripted:gold,large=scripted:gold", "--threshold", "1.5"], "--threshold 1.5: must be within [0, 1]"),
        (["--route", "small=scripted:gold,large=scripted:gold", "--threshold", "-0.1"], "--threshold -0.1: must be within"),
        (["--route", "small=scripted:gold,large=scripted:gold", "--by", "verifier"], "--by verifier: name the verifier folder"),
        (["--route", "small=scripted:gold,large=scripted:gold", "--by", "luck"], "--by 'luck': unknown predictor"),
        (["--route", "small=scripted:gold,large=scripted:gold", "--price", "large=2.5"], "--price 'large=2.5': write KEY=IN/OUT"),
        (["--route", "small=scripted:gold,large=scripted:gold", "--policy", "scripted:gold"], "drop --policy"),
        (["--policy", "scripted:gold", "--by", "difficulty"], "--by: only with --route"),
        (["--policy", "scripted:gold", "--threshold", "0.5"], "--threshold: only with --route"),
        (["--policy", "openai:m", "--endpoint", "large=http://127.0.0.1:1/v1"], "--endpoint: only with --route"),
        (["--route", "small=scripted:gold,large=openai:m", "--endpoint", "large=127.0.0.1:8000"], "--endpoint 'large=127.0.0.1:8000': write KEY=URL"),
        (["--route", "small=scripted:gold,large=openai:m", "--endpoint", "small=http://127.0.0.1:1/v1"], "the small policy is 'scripted:gold'; only an openai: policy"),
    ],
)  # fmt: skip
def test_bad_route_input_is_one_line_naming_the_option_and_exit_2(tmp_path, more, message):
    result = cli("eval", "missing.jsonl", *more, "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and message in result.output, result.output
    assert len(" ".join(result.output.split()).splitlines()) == 1 and not (tmp_path / "out").exists()


SERVE = "from repogym.cli import main; main()"


@contextlib.contextmanager
def served(model: Path, name: str) -> Iterator[str]:
    """`repogym serve MODEL` on a free loopback port: its /v1 URL while it runs."""
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", str(model), "--port", "0", "--name", name],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    try:
        line = server.stdout.readline()  # "serving NAME at http://127.0.0.1:PORT/v1"
        assert line.startswith(f"serving {name} at http://127.0.0.1:"), line
        yield line.split(" at ", 1)[1].strip()
    finally:
        server.terminate()
        server.wait(timeout=30)


def completed(url: str) -> int:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=10) as response:
        return json.loads(response.read())["completed"]


def test_the_large_policy_may_be_an_openai_endpoint_and_its_tokens_are_priced(tmp_path, tiny_model, toy_task):
    """A random 1.4M-parameter model served on loopback resolves nothing; what matters is that its attempts ran
    through the endpoint, their tokens are counted and priced, and routing sends the hard task to it."""
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task.replace(instance_id="toy__calc-1", metadata={"difficulty": "easy"}),
                toy_task.replace(instance_id="toy__calc-2", metadata={"difficulty": "hard"})], tasks)  # fmt: skip
    script = tmp_path / "small.jsonl"
    script.write_text(json.dumps({"actions": [FIX, "submit()"]}) + "\n")
    with served(tiny_model, "tiny") as url:
        out = tmp_path / "routed"
        command = ["eval", str(tasks), "--route", f"small=scripted:{script},large=openai:tiny", "--base-url",
                   url, "--max-steps", "2", "--reply-tokens", "8", "--price",
                   "small=0/0", "--price", "large=2/8", "--bootstrap", "100", "--out", str(out)]  # fmt: skip
        result = cli(*command)
        assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    routing = summary["routing"]
    large = stored_rows(out / "large")
    assert {row["policy_id"] for row in large.values()} == {"openai:tiny"}
    prompt = sum(row["prompt_tokens"] for row in large.values())
    completion = sum(row["completion_tokens"] for row in large.values())
    assert prompt > 0 and routing["large"]["tokens"] == prompt + completion
    assert routing["large"]["cost"] == pytest.approx((prompt * 2 + completion * 8) / 1e6)
    assert routing["large"]["resolve_rate"] == 0.0 and routing["small"]["resolve_rate"] == 1.0
    assert went(summary) == {"toy__calc-1": "small", "toy__calc-2": "large"} and summary["pass@1"] == 0.5
    # The chosen row spends the small policy's attempt on calc-1 and the endpoint's on calc-2.
    hard = large["toy__calc-2"]
    assert routing["chosen"]["tokens"] == hard["prompt_tokens"] + hard["completion_tokens"]
    assert routing["chosen"]["cost"] == pytest.approx(
        (hard["prompt_tokens"] * 2 + hard["completion_tokens"] * 8) / 1e6
    )
    # Every attempt is stored: with the server gone, routing again at another threshold needs none.
    shown = cli(*command, "--threshold", "1")
    assert shown.exit_code == 0, shown.output
    assert "large alone" in shown.output and "small alone" in shown.output


def test_two_openai_policies_each_reach_their_own_endpoint(tmp_path, tiny_model, toy_task):
    """Small and large on two endpoints (a cheap model's server and a strong one's): --endpoint gives each its
    own; --base-url, a dead port here, is the fallback neither uses."""
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task.replace(instance_id="toy__calc-1", metadata={"difficulty": "easy"}),
                toy_task.replace(instance_id="toy__calc-2", metadata={"difficulty": "hard"})], tasks)  # fmt: skip
    with served(tiny_model, "cheap") as cheap, served(tiny_model, "strong") as strong:
        out = tmp_path / "routed"
        result = cli("eval", str(tasks), "--route", "small=openai:cheap,large=openai:strong", "--base-url",
                     "http://127.0.0.1:1/v1", "--endpoint", f"small={cheap}", "--endpoint", f"large={strong}",
                     "--max-steps", "2", "--reply-tokens", "8", "--bootstrap", "100", "--out", str(out))  # fmt: skip
        assert result.exit_code == 0, result.output
        served_by = {"small": completed(cheap), "large": completed(strong)}
    for key, count in served_by.items():
        rows = stored_rows(out / key)
        assert {row["policy_id"] for row in rows.values()} == {
            f"openai:{'cheap' if key == 'small' else 'strong'}"
        }
        assert all(row["prompt_tokens"] > 0 for row in rows.values())  # every attempt was answered
        assert (
            count >= len(rows) == 2
        )  # each server answered its own policy's turns (two tasks, 1-2 turns each)


def test_the_report_draws_the_routing_curve_between_each_policy_alone(world, tmp_path):
    out = tmp_path / "routed"
    world.route(out, "--price", "small=0.5/1", "--price", "large=3/15")
    result = build_report([out], tmp_path / "report.html")
    page = result.out.read_text()
    section = page[page.index('<section id="routing">') : page.index('<section id="tasks">')]
    assert section.count('<img class="plot"') == 1 and "route small=" in section
    rows = re.findall(r"<tr( style=\"font-weight: 600\")?><td>([^<]+)</td>(.*?)</tr>", section)
    labels = [label for _, label, _ in rows]
    assert labels[0] == "small alone" and labels[-1] == "large alone" and len(labels) == 23
    bold = [(label, cells) for style, label, cells in rows if style]
    assert [label for label, _ in bold] == ["0.500"]
    # At 0.5: half the tasks sent on, 75% resolved, which is 75% of the large policy's 100%.
    assert re.findall(r'<td class="num">([^<]*)</td>', bold[0][1])[:3] == ["50%", "75.0%", "75%"]
    assert any(plot.name.startswith("routing-") for plot in result.plots)
    # Each policy alone is an eval of its own, beside the routed one in the before/after table.
    stages = page[page.index('<table class="before-after">') :].split("</tr>", 1)[0]
    assert all(f"<th>{stage}</th>" in stages for stage in ("route", "route-small", "route-large"))
