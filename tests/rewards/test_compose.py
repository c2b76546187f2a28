"""Composing rewards from the seed's config: documented default values, and errors before any episode."""

from __future__ import annotations

import dataclasses
import json
import textwrap

import hypothesis
import pytest
import yaml
from hypothesis import strategies as st

from repogym.config import RewardComponentConfig, RewardConfig
from repogym.env.base import default_reward_config
from repogym.errors import ConfigError
from repogym.grading.report import GradeResult, Outcome, ResolvedStatus, TestStatus
from repogym.patches import unified_diff
from repogym.rewards import RewardBreakdown, RewardError, compose
from repogym.task import Task

SEED_CONFIG = textwrap.dedent(
    """\
    # the seed's section 9.1, as written
    algorithm: grpo
    base_model: Qwen2.5-Coder-32B
    reward:
      type: rule_based
      components:
        - name: tests_pass
          weight: 1.0
          fn: run_pytest
        - name: compile_pass
          weight: 0.5
          fn: type_check
        - name: minimal_diff
          weight: 0.1
          fn: diff_size_penalty
    env:
      type: swegym
      task_set: SWE-bench-verified-train
    """
)
ORIGINAL = {"pkg/geo.py": "def perimeter(w, h):\n    return 2 * w + h\n"}
GOLD = unified_diff(ORIGINAL, {"pkg/geo.py": "def perimeter(w, h):\n    return 2 * (w + h)\n"})
TASK = Task("geo-1", "team/geo", "abc", patch=GOLD, FAIL_TO_PASS=["t::f"], PASS_TO_PASS=["t::p"])


def graded(resolved: bool, compile_errors: tuple[str, ...] | None = ()) -> GradeResult:
    f2p = {"t::f": TestStatus.PASSED if resolved else TestStatus.FAILED}
    outcome = Outcome.RESOLVED if resolved else Outcome.UNRESOLVED
    status = ResolvedStatus.FULL if resolved else ResolvedStatus.NO
    return GradeResult(
        "geo-1", outcome, status, f2p, {"t::p": TestStatus.PASSED}, compile_errors=compile_errors
    )


def facts(**overrides):
    base = {
        "grade": graded(True),
        "task": TASK,
        "patch": GOLD,
        "format_errors": 0,
        "response": None,
        "code_context": ORIGINAL,
        "oracle_new_content": None,
    }
    return {**base, **overrides}


@pytest.fixture(params=["model", "reward_mapping", "run_mapping"])
def default_reward(request):
    run = yaml.safe_load(SEED_CONFIG)
    return compose(
        {"model": RewardConfig(), "reward_mapping": run["reward"], "run_mapping": run}[request.param]
    )


def test_defaults_are_the_seed_components(default_reward):
    assert default_reward.names == ["tests_pass", "compile_pass", "minimal_diff"]
    assert [c.weight for c in default_reward.components] == [1.0, 0.5, 0.1]


def test_documented_value_resolved_is_one(default_reward):
    breakdown = default_reward(**facts())
    assert breakdown == RewardBreakdown(
        total=1.0,
        components={"tests_pass": 1.0, "compile_pass": 0.0, "minimal_diff": 0.0},
        raw={"tests_pass": 1.0, "compile_pass": 0.0, "minimal_diff": 0.0},
    )


def test_documented_value_empty_submit_is_zero(default_reward):
    breakdown = default_reward(**facts(grade=graded(False), patch=""))
    assert breakdown.total == 0.0
    assert breakdown.components == {"tests_pass": 0.0, "compile_pass": 0.0, "minimal_diff": 0.0}


def test_documented_value_compile_break_is_minus_half_plus_tests(default_reward):
    broken = graded(False, compile_errors=("pkg/geo.py:2: invalid syntax",))
    assert default_reward(**facts(grade=broken)).total == -0.5
    sprawling = GOLD + unified_diff({}, {"pkg/extra.py": "x = 1\n"})
    assert default_reward(**facts(grade=broken, patch=sprawling)).total == pytest.approx(-0.6)


def test_abstaining_component_adds_nothing_and_is_recorded_as_none(default_reward):
    breakdown = default_reward(**facts(grade=graded(True, compile_errors=None)))
    assert breakdown.total == 1.0
    assert breakdown.components["compile_pass"] is None and breakdown.raw["compile_pass"] is None


def test_breakdown_is_frozen_and_serialisable(default_reward):
    breakdown = default_reward(**facts())
    with pytest.raises(dataclasses.FrozenInstanceError):
        breakdown.total = 2.0  # type: ignore[misc]
    assert json.loads(json.dumps(breakdown.to_dict()))["total"] == 1.0


def test_weights_scale_raw_values_and_options_reach_the_function():
    reward = compose(
        {
            "components": [
                {"name": "tests", "weight": 2.0, "fn": "tests_pass", "kwargs": {"partial": True}},
                {"name": "sim", "weight": 0.5, "fn": "patch_similarity_diff"},
                {"name": "fmt", "weight": 0.25, "fn": "format"},
            ]
        }
    )
    half = GradeResult(
        "geo-1",
        Outcome.UNRESOLVED,
        ResolvedStatus.PARTIAL,
        {"a": TestStatus.PASSED, "b": TestStatus.FAILED},
        {"t::p": TestStatus.PASSED},
    )
    breakdown = reward(**facts(grade=half, format_errors=3))
    assert breakdown.raw == {"tests": 0.5, "sim": 1.0, "fmt": -1.0}
    assert breakdown.components == {"tests": 1.0, "sim": 0.5, "fmt": -0.25}
    assert breakdown.total == 1.25


def test_user_function_by_dotted_path(tmp_path, monkeypatch):
    (tmp_path / "team_rewards.py").write_text(
        "def short_patch(*, patch, limit=100, **_):\n    return 1.0 if len(patch) < limit else 0.0\n"
        "def broken(**_):\n    return float('nan')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reward = compose(
        {"components": [{"name": "short", "fn": "team_rewards:short_patch", "kwargs": {"limit": 5}}]}
    )
    assert reward(**facts(patch="abc")).total == 1.0
    assert reward(**facts(patch="abcdef")).total == 0.0
    nan = compose({"components": [{"name": "bad", "fn": "team_rewards.broken"}]})
    with pytest.raises(RewardError, match=r"'bad'.*finite"):
        nan(**facts())


@pytest.mark.parametrize(
    ("components", "message"),
    [
        (
            [{"name": "t", "fn": "run_pytset"}],
            r"components\.0\.fn: unknown reward function 'run_pytset' \(did you mean 'run_pytest'\?\); known: .*diff_size_penalty",
        ),
        (
            [{"name": "t", "fn": "tests_pass", "wieght": 1}],
            r"components\.0\.wieght: unknown key; did you mean 'components\.0\.weight'",
        ),
        ([{"name": "t", "fn": "tests_pass", "weight": "heavy"}], r"components\.0\.weight"),
        (
            [{"name": "t", "fn": "tests_pass", "weight": float("inf")}],
            r"components\.0\.weight: must be a finite",
        ),
        (
            [{"name": "t", "fn": "tests_pass", "kwargs": {"partal": True}}],
            r"components\.0\.kwargs\.partal: 'tests_pass' has no option 'partal'; its options: partial",
        ),
        (
            [{"name": "t", "fn": "minimal_diff", "kwargs": {"patch": ""}}],
            r"components\.0\.kwargs\.patch: 'patch' is passed by the env",
        ),
        (
            [{"name": "t", "fn": "format"}, {"name": "t", "fn": "tests_pass"}],
            r"components\.1\.name: 't' is used twice",
        ),
        (
            [{"name": "t", "fn": "repogym.rewards.nothing_here"}],
            r"components\.0\.fn: .*known reward function names: .*tests_pass",
        ),
        (
            [{"name": "t", "fn": "repogym.rewards.components:RUNTIME_KWARGS"}],
            r"components\.0\.fn: .* is not callable",
        ),
        ([], r"components: .*at least 1"),
        (
            [{"name": "forged_report", "fn": "format"}],
            r"components\.0\.name: 'forged_report' is the breakdown's term for a forged report's penalty",
        ),
    ],
    ids=[
        "unknown_fn",
        "typo_key",
        "bad_weight",
        "inf_weight",
        "typo_option",
        "runtime_option",
        "duplicate",
        "bad_dotted",
        "not_callable",
        "empty",
        "reserved_name",
    ],
)
def test_bad_config_fails_at_compose_time_naming_the_key(components, message):
    with pytest.raises(ConfigError, match=message):
        compose({"type": "rule_based", "components": components})


def test_config_model_is_accepted_as_is():
    config = RewardConfig(components=[RewardComponentConfig(name="sim", fn="patch_similarity")])
    reward = compose(config)
    assert reward(**facts()).components == {"sim": None}  # agent mode: no response, so it abstains
    assert "sim=1*patch_similarity" in repr(reward)


def _forged() -> GradeResult:
    return GradeResult("geo-1", Outcome.REPORT_FORGED, ResolvedStatus.NO, {"t::f": None}, {"t::p": None})


def test_a_forged_report_is_worth_the_fixed_penalty_whatever_the_components_say():
    """Was a hole at 385871c: REPORT_FORGED only zeroed tests_pass, so a forger kept its similarity and
    diff terms (reward 0.9 through submit, 1.68 as a `lines` answer). The penalty replaces every term, and
    the breakdown shows it and keeps what each term would have been."""
    similarity = RewardComponentConfig(name="patch_similarity", weight=1.0, fn="patch_similarity_diff")
    reward = compose(RewardConfig(components=[*RewardConfig().components, similarity]))
    honest_wrong = reward(**facts(grade=graded(False)))
    assert honest_wrong.components["patch_similarity"] == 1.0 and honest_wrong.total == 1.0
    forged = reward(**facts(grade=_forged()))
    assert forged.total == -1.0
    assert forged.components == {
        "tests_pass": None,
        "compile_pass": None,
        "minimal_diff": None,
        "patch_similarity": None,
        "forged_report": -1.0,
    }
    assert forged.raw["patch_similarity"] == 1.0 and forged.raw["forged_report"] == -1.0
    assert json.loads(json.dumps(forged.to_dict()))["total"] == -1.0


@pytest.mark.parametrize(
    ("mode", "worst_honest"),
    [("agent", -0.6), ("agentless", -1.0)],
)
def test_the_default_penalty_is_no_higher_than_the_worst_honest_total(mode, worst_honest):
    """The default -1.0 is at or below the lowest an honest attempt scores with each mode's defaults: a patch
    that breaks compilation and touches a file the oracle does not (agent), a format error (agentless)."""
    reward = compose(default_reward_config(mode))
    other_file = unified_diff({"pkg/other.py": "x = 1\n"}, {"pkg/other.py": "x = 2\n"})
    if mode == "agent":
        worst = reward(**facts(grade=graded(False, ("pkg/geo.py:1: invalid syntax",)), patch=other_file))
    else:
        worst = reward(**facts(grade=None, patch="", response="no answer", format_errors=1))
    assert worst.total == pytest.approx(worst_honest)
    assert reward(**facts(grade=_forged())).total == -1.0 <= worst.total


def test_the_penalty_is_configurable_and_must_be_finite():
    reward = compose({"components": [{"name": "t", "fn": "tests_pass"}], "forged_report_penalty": -3})
    assert reward(**facts(grade=_forged())).total == -3.0
    with pytest.raises(ConfigError, match="forged_report_penalty"):
        compose({"components": [{"name": "t", "fn": "tests_pass"}], "forged_report_penalty": float("nan")})


@pytest.fixture(scope="module")
def given_value_fn(tmp_path_factory):
    """A component returning its `given` option (a dotted-path user function), importable for this module."""
    folder = tmp_path_factory.mktemp("floor_rewards")
    (folder / "floor_rewards.py").write_text("def value(*, given, **_):\n    return given\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(folder))
        yield "floor_rewards:value"


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(
    weights=st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=4),
    values=st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0, None]), min_size=4, max_size=4),
    penalty=st.floats(-3, 0, allow_nan=False),
    forged=st.booleans(),
)
def test_no_attempt_totals_below_the_floor(given_value_fn, weights, values, penalty, forged):
    """`floor` is what SkyRL's bridge shifts by so that an ungraded trajectory (0.0 after the shift) earns no
    more than any graded one: it must bound every total, forged grades included, for any weights."""
    components = [
        {"name": f"c{i}", "weight": w, "fn": given_value_fn, "kwargs": {"given": values[i]}}
        for i, w in enumerate(weights)
    ]
    reward = compose({"components": components, "forged_report_penalty": penalty})
    outcome = Outcome.REPORT_FORGED if forged else Outcome.UNRESOLVED
    total = reward(**facts(grade=GradeResult("t", outcome, ResolvedStatus.NO))).total
    assert total >= reward.floor
    assert reward.floor == min(penalty, -sum(abs(w) for w in weights))


def test_the_default_floors_are_the_lowest_totals_the_defaults_can_reach():
    assert compose(default_reward_config("agent")).floor == pytest.approx(-1.6)
    assert compose(default_reward_config("agentless")).floor == pytest.approx(-2.6)
