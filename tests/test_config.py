"""Run configurations: the seed's YAML loads as it is; every mistake names its key path, value and the fix."""

from __future__ import annotations

import pytest
import yaml

from repogym.config import (
    EnvConfig,
    RolloutSettings,
    RunConfig,
    apply_overrides,
    config_to_dict,
    load_config,
    load_yaml,
    validate_config,
)
from repogym.errors import ConfigError


@pytest.fixture
def seed_yaml(examples_dir):
    return examples_dir / "seed_grpo.yaml"


def test_seed_config_loads_as_written(seed_yaml):
    assert isinstance(load_yaml(seed_yaml)["learning_rate"], str), "PyYAML (YAML 1.1) reads 1e-6 as text"
    config = load_config(seed_yaml)
    assert config.algorithm == "grpo"
    assert config.base_model == "Qwen2.5-Coder-32B"
    assert config.learning_rate == 1e-06
    assert type(config.learning_rate) is float
    assert config.rollout == RolloutSettings(num_candidates=16, async_=True, max_steps=50)
    assert config.env == EnvConfig(type="swegym", task_set="SWE-bench-verified-train")
    assert [(c.name, c.weight, c.fn) for c in config.reward.components] == [
        ("tests_pass", 1.0, "run_pytest"),
        ("compile_pass", 0.5, "type_check"),
        ("minimal_diff", 0.1, "diff_size_penalty"),
    ]
    assert (config.batch_size, config.total_steps) == (32, 10000)


def test_resolved_config_round_trips_with_yaml_key_names(seed_yaml):
    config = load_config(seed_yaml)
    plain = config_to_dict(config)
    assert plain["rollout"]["async"] is True
    assert "async_" not in plain["rollout"]
    assert validate_config(yaml.safe_load(yaml.safe_dump(plain))) == config


def test_misspelled_key_names_path_and_suggests_the_right_one(seed_yaml, tmp_path):
    text = seed_yaml.read_text().replace("num_candidates: 16", "num_candidate: 16")
    path = tmp_path / "typo.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: 1 error(s)")
    assert "rollout.num_candidate: unknown key; did you mean 'rollout.num_candidates'?" in message
    assert "allowed here: num_candidates, async, max_steps" in message


def test_misspelled_key_inside_a_list_item():
    data = {"reward": {"components": [{"name": "t", "fn": "run_pytest", "wieght": 2}]}}
    with pytest.raises(ConfigError, match=r"reward\.components\.0\.wieght: unknown key; did you mean "):
        validate_config(data)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"rollout": {"max_steps": "many"}}, ["rollout.max_steps", "valid integer", "'many'"]),
        (
            {"rollout": {"num_candidates": 0}},
            ["rollout.num_candidates", "greater than or equal to 1", "got 0"],
        ),
        ({"learning_rate": 2}, ["learning_rate", "less than 1", "got 2"]),
        ({"learning_rate": "fast"}, ["learning_rate", "valid number", "'fast'"]),
        ({"algorithm": "ppo"}, ["algorithm", "'sft' or 'grpo'", "'ppo'"]),
        ({"rollout": {"async": "maybe"}}, ["rollout.async", "valid boolean", "'maybe'"]),
        ({"reward": {"components": [{"name": "t"}]}}, ["reward.components.0.fn", "Field required"]),
        ({"reward": {"components": []}}, ["reward.components", "at least 1 item"]),
        ({"env": "swegym"}, ["env", "valid dictionary", "'swegym'"]),
    ],
)
def test_wrong_values_name_path_value_and_what_is_allowed(data, expected):
    with pytest.raises(ConfigError) as caught:
        validate_config(data, source="run.yaml")
    message = str(caught.value)
    assert message.startswith("run.yaml: 1 error(s)")
    for part in expected:
        assert part in message


def test_every_error_is_reported_at_once():
    with pytest.raises(ConfigError, match=r"3 error\(s\)"):
        validate_config({"batch_size": 0, "total_steps": -1, "rollout": {"max_step": 3}})


def test_overrides_set_values_parsed_as_yaml(seed_yaml):
    config = load_config(
        seed_yaml,
        [
            "rollout.max_steps=20",
            "rollout.async=false",
            "learning_rate=5e-6",
            "reward.components.2.weight=0.25",
            "env.mode=agentless",
            "base_model=",
        ],
    )
    assert config.rollout.max_steps == 20
    assert config.rollout.async_ is False
    assert config.learning_rate == 5e-06
    assert config.reward.components[2].weight == 0.25
    assert config.reward.components[0].weight == 1.0
    assert config.env.mode == "agentless"
    assert config.base_model == ""


def test_overrides_without_a_file_start_from_defaults():
    config = load_config(None, ["rollout.num_candidates=4", "env.sandbox=local"])
    assert config.rollout.num_candidates == 4
    assert config.env.sandbox == "local"
    assert config.reward.components == RunConfig().reward.components


def test_overrides_do_not_change_the_input():
    data = {"rollout": {"max_steps": 50}}
    apply_overrides(data, ["rollout.max_steps=1"])
    assert data == {"rollout": {"max_steps": 50}}


def test_overridden_value_is_still_validated(seed_yaml):
    with pytest.raises(
        ConfigError, match=r"rollout\.max_steps: Input should be greater than or equal to 1 \(got 0\)"
    ):
        load_config(seed_yaml, ["rollout.max_steps=0"])
    with pytest.raises(ConfigError, match=r"did you mean 'rollout\.max_steps'\?"):
        load_config(seed_yaml, ["rollout.maxsteps=3"])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "rollout.max_steps",
            r"override 'rollout.max_steps': expected key.path=value, e.g. rollout.max_steps=20",
        ),
        ("=3", r"expected key.path=value"),
        ("rollout..max_steps=3", r"empty key between dots"),
        (
            "reward.components.7.weight=1",
            r"'reward.components' is a list of 3 item\(s\); '7' is not an index",
        ),
        ("reward.components.first.weight=1", r"'first' is not an index \(allowed: 0 to 2\)"),
        ("rollout.max_steps.limit=3", r"'rollout.max_steps' is a value \(50\), not a mapping or list"),
    ],
)
def test_bad_overrides_say_what_is_wrong(seed_yaml, override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(seed_yaml, [override])


def test_indexing_a_list_the_file_does_not_set_says_so():
    with pytest.raises(
        ConfigError, match=r"'reward.components' is not a list in the file, so it has no item 0"
    ):
        load_config(None, ["reward.components.0.weight=2"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rollout:\n  max_steps: [1\n", r"bad.yaml:\d+: not valid YAML"),
        ("- algorithm: grpo\n", r"bad.yaml: the top level must be a mapping of keys, got list"),
    ],
)
def test_bad_yaml_files(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "missing.yaml")
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing set\n")
    assert load_config(empty) == RunConfig()
