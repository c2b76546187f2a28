"""Checks run through skyrl-gym 0.4.0's own registry, in a virtual environment that has it
(tests/integrations/test_skyrl_in_skyrl.py).

Run as `SKYRL_PYTHON tests/integrations/skyrl_checks.py INPUTS.json SEEN.json` with this checkout's src/ on
PYTHONPATH; writes what the envs returned to SEEN.json. skyrl_gym is imported inside `main`, so pytest's
doctest collection imports this file without it.

Each episode is played as SkyRL's generator plays one (skyrl/train/generators/skyrl_gym_generator.py:
`skyrl_gym.make(env_class, env_config=..., extras=row)` with the dataset row less its prompt and env_class
(skyrl/train/dataset/dataset.py) and `max_turns` added, `init(prompt)`, `step(reply)` until done, `close()`),
with scripted replies for a model.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def extras_of(row: dict[str, Any], max_turns: int) -> dict[str, Any]:
    """What SkyRL hands the env: the row without prompt and env_class, plus the generator's max_turns."""
    return {key: value for key, value in row.items() if key not in ("prompt", "env_class")} | {
        "max_turns": max_turns
    }


def play(row: dict[str, Any], replies: list[str], max_turns: int) -> dict[str, Any]:
    import skyrl_gym

    from repogym.integrations.episodes import EPISODES

    env = skyrl_gym.make("repogym", env_config={}, extras=extras_of(row, max_turns))
    prompt, _ = env.init(row["prompt"])
    steps = []
    for reply in replies:
        step = env.step(reply)
        steps.append({key: step[key] for key in ("observations", "reward", "done", "metadata")})
        if step["done"]:
            break
    metrics = env.get_metrics()
    env.close()
    is_base_text_env = isinstance(env, skyrl_gym.envs.base_text_env.BaseTextEnv)
    return {
        "class": type(env).__name__,
        "is_base_text_env": is_base_text_env,
        "prompt_kept": prompt == row["prompt"],
        "steps": steps,
        "metrics": metrics,
        "episodes_open_after": len(EPISODES),
    }


def main(inputs: dict[str, Any]) -> dict[str, Any]:
    import pyarrow.parquet
    import skyrl_gym

    from repogym.integrations.skyrl import register

    register()
    register()  # a second call (each Ray task registers) is harmless: skyrl-gym would refuse a second id
    seen: dict[str, Any] = {"registered": "repogym" in skyrl_gym.registry}
    agentless = pyarrow.parquet.read_table(inputs["agentless_parquet"]).to_pylist()[0]
    for name, answer in (("gold", inputs["gold_answer"]), ("wrong", inputs["wrong_answer"])):
        seen[f"agentless_{name}"] = play(agentless, [answer], max_turns=1)
    agent = pyarrow.parquet.read_table(inputs["agent_parquet"]).to_pylist()[0]
    for name, replies in inputs["agent_replies"].items():
        seen[f"agent_{name}"] = play(agent, replies, max_turns=inputs["max_turns"])
    return seen


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        seen = main(json.load(file))
    with open(sys.argv[2], "w", encoding="utf-8") as file:
        json.dump(seen, file, default=str)
