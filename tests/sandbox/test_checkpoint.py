"""A checkpoint pauses one jailed command for a decision of the host (sandbox/base.py `Checkpoint`): the host
sees only what came before the marker's line, answers once, and the result holds only what came after
(real bwrap episodes of the toy task)."""

from __future__ import annotations

import secrets

from repogym.sandbox.base import Checkpoint

_ASKS = 'echo before; printf "\\n%s\\n" {marker}; read -r answer; echo "answer=$answer"; '


def _checkpoint(answer: str = "go") -> tuple[Checkpoint, list[str]]:
    seen: list[str] = []
    marker = f"repogym-{secrets.token_hex(8)}"
    return Checkpoint(marker, lambda before: seen.append(before) or answer + "\n"), seen


def test_checkpoint_hands_the_output_before_it_to_the_host_and_the_answer_to_the_command(episode):
    checkpoint, seen = _checkpoint("go")
    command = _ASKS.format(marker=checkpoint.marker) + "read -r again || echo stdin-closed"
    result = episode.run(command, checkpoint=checkpoint)
    assert seen == ["before\n"]
    assert result.ok and result.output == "answer=go\nstdin-closed\n"


def test_a_command_without_a_checkpoint_reads_nothing(episode):
    assert episode.run("read -r line || echo nothing").output == "nothing\n"


def test_checkpoint_marker_that_never_comes_is_never_answered(episode):
    checkpoint, seen = _checkpoint()
    result = episode.run(f"echo only {checkpoint.marker}", checkpoint=checkpoint)  # not on a line of its own
    assert seen == [] and result.output == f"only {checkpoint.marker}\n"


def test_command_that_prints_the_marker_again_after_the_answer_is_not_answered_twice(episode):
    """What runs after the checkpoint (code under test, in a grade) may know the marker (/proc shows the
    command line): printing it again must not reach the host's decision a second time."""
    checkpoint, seen = _checkpoint("go")
    again = f'printf "\\n%s\\n" {checkpoint.marker}; read -r second || echo eof; '
    result = episode.run(_ASKS.format(marker=checkpoint.marker) + again, checkpoint=checkpoint)
    assert seen == ["before\n"]
    assert result.output.endswith(f"\n{checkpoint.marker}\neof\n")


def test_checkpoint_answer_can_stop_the_command(episode):
    checkpoint, _ = _checkpoint("stop")
    command = _ASKS.format(marker=checkpoint.marker).replace(
        'echo "answer=$answer"; ', '[ "$answer" = go ] || exit 3; echo ran; '
    )
    result = episode.run(command, checkpoint=checkpoint)
    assert result.exit_code == 3 and "ran" not in result.output


def test_checkpoint_decision_that_raises_answers_nothing_and_raises(episode):
    """The command is killed and never gets an answer (it may read EOF while it dies, never a "go")."""

    def decide(before: str) -> str:
        raise RuntimeError("the host's check failed")

    marker = f"repogym-{secrets.token_hex(8)}"
    checkpoint = Checkpoint(marker, decide)
    # The answer file appears whole or not at all: a kill between the shell opening `> /tmp/answer` and echo
    # writing left it empty, and the check read that as neither outcome (a CI run, 2026-12-04).
    command = (
        f'printf "\\n%s\\n" {marker}; read -r answer; '
        'echo "answer=[$answer]" > /tmp/answer.part && mv /tmp/answer.part /tmp/answer'
    )
    try:
        episode.run(command, checkpoint=checkpoint)
    except RuntimeError as error:
        assert "check failed" in str(error)
    else:
        raise AssertionError("the decision's error was swallowed")
    assert episode.run("cat /tmp/answer 2>/dev/null || echo killed").output in ("killed\n", "answer=[]\n")
