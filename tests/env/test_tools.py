"""The tools in the real bwrap sandbox: what they show and change, and every bad input the issue lists."""

from __future__ import annotations

import pytest

SOURCE = "src/calc/__init__.py"


def test_view_file_shows_numbered_lines_and_clamps_the_end(env, step_ok):
    whole = step_ok(env, f"view_file('{SOURCE}')")
    assert "lines 1-6 of 6" in whole and "     2\t    return a - b" in whole
    part = step_ok(env, f"view_file('/testbed/{SOURCE}', '5:99')")
    assert "lines 5-6 of 6 (the file ends at line 6)" in part and "return a - b" not in part
    listing = step_ok(env, "view_file('.')")
    assert "src/" in listing and "pyproject.toml" in listing and ".git" not in listing


def test_line_range_beyond_the_file_is_an_error_not_a_crash(env):
    for action in (
        f"view_file('{SOURCE}', '50:60')",
        f"edit_file('{SOURCE}', '6:9', 'x')",
        f"view_file('{SOURCE}', 'a:b')",
    ):
        observation, reward, terminated, _, info = env.step(action)
        assert observation.startswith("Error: line range") and info["tool_error"] and not info["format_error"]
        assert (reward, terminated) == (0.0, False)
    assert "return a - b" in env.step(f"view_file('{SOURCE}', '2:2')")[0]


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "src/../../x", ".git/config"])
def test_paths_outside_the_repository_are_refused(env, path):
    for action in (f"view_file({path!r})", f"create_file({path!r}, 'x')", f"str_replace({path!r}, 'a', 'b')"):
        observation, _, _, _, info = env.step(action)
        assert info["tool_error"] and (
            "outside the repository" in observation or "inside .git" in observation
        )


def test_symlinks_pointing_out_of_the_repository_are_refused(env, step_ok):
    step_ok(env, "bash('ln -s /etc/passwd passwd && ln -s /usr/lib libs && ln -s src/calc inside')")
    for action in (
        "view_file('passwd')",
        "edit_file('passwd', '1:1', 'x')",
        "view_file('libs/os.py')",
        "create_file('libs/new.py', 'x')",
    ):
        observation = env.step(action)[0]
        assert "outside the repository (through a symbolic link)" in observation, observation
    assert "def add" in step_ok(env, "view_file('inside/__init__.py')")  # a link that stays inside is fine


def test_binary_and_non_utf8_files(env, step_ok):
    step_ok(
        env, "bash(\"printf 'GIF89a\\\\000\\\\001' > logo.gif && printf 'caf\\\\351 = 1\\\\n' > latin1.py\")"
    )
    for action in (
        "view_file('logo.gif')",
        "edit_file('logo.gif', '1:1', 'x')",
        "str_replace('logo.gif', 'GIF', 'PNG')",
    ):
        observation, _, _, _, info = env.step(action)
        assert "is a binary file" in observation and info["tool_error"]
    shown = step_ok(env, "view_file('latin1.py')")
    assert "not valid UTF-8" in shown and "caf\ufffd = 1" in shown
    refused = env.step("str_replace('latin1.py', '= 1', '= 2')")[0]
    assert "is not UTF-8 text" in refused and "use bash" in refused
    assert step_ok(env, "bash('od -c latin1.py | head -1')").count("351") == 1  # the file is untouched


def test_edit_file_replaces_inserts_and_appends(env, step_ok):
    replaced = step_ok(env, f"edit_file('{SOURCE}', '1:2', 'def add(a, b):\\n    return a + b')")
    assert "replaced lines 1-2 with 2 line(s)" in replaced and "     2\t    return a + b" in replaced
    inserted = step_ok(env, f"edit_file('{SOURCE}', '1:0', '\"\"\"Arithmetic.\"\"\"\\n')")
    assert "inserted 1 line(s) before line 1" in inserted and "now has 7 lines" in inserted
    step_ok(env, f"edit_file('{SOURCE}', '8:7', '\\n\\ndef sub(a, b):\\n    return a - b\\n')")
    text = step_ok(env, f"bash('cat {SOURCE}')")
    assert text.endswith(
        '"""Arithmetic."""\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n\n\ndef sub(a, b):\n    return a - b\n'
    )


def test_str_replace_needs_exactly_one_occurrence(env, step_ok):
    missing = env.step(f"str_replace('{SOURCE}', 'return a / b', 'x')")[0]
    assert "does not occur" in missing
    twice = env.step(f"str_replace('{SOURCE}', '    return a', '    return b')")[0]
    assert "occurs 2 times" in twice and "lines 2, 6" in twice
    same = env.step(f"str_replace('{SOURCE}', 'a - b', 'a - b')")[0]
    assert "identical" in same
    assert "replaced 1 occurrence" in step_ok(env, f"str_replace('{SOURCE}', 'a - b', 'a + b')")
    assert "a + b" in step_ok(env, f"bash('cat {SOURCE}')")


def test_str_replace_keeps_windows_line_endings(env, step_ok):
    step_ok(env, "bash(\"printf 'x = 1\\\\r\\\\ny = 2\\\\r\\\\n' > crlf.py\")")
    step_ok(env, "str_replace('crlf.py', 'x = 1\\ny = 2', 'x = 3\\ny = 4')")
    assert step_ok(env, "bash('od -c crlf.py')").count("\\r  \\n") == 2


def test_create_file_makes_folders_and_replaces(env, step_ok):
    assert "Created src/calc/extra/util.py (2 lines)" in step_ok(
        env, "create_file('src/calc/extra/util.py', 'a = 1\\nb = 2\\n')"
    )
    assert "Replaced" in step_ok(env, "create_file('src/calc/extra/util.py', 'a = 3\\n')")
    assert step_ok(env, "bash('cat src/calc/extra/util.py')").endswith("a = 3\n")


def test_huge_edits_are_refused_and_change_nothing(make_env, step_ok):
    env = make_env(max_edit_chars=1_000)
    env.reset()
    for action in (
        {"name": "create_file", "arguments": {"path": "big.py", "text": "x" * 1_001}},
        {"name": "edit_file", "arguments": {"path": SOURCE, "lines": "1:1", "text": "y" * 5_000}},
        {"name": "str_replace", "arguments": {"path": SOURCE, "old": "a - b", "new": "z" * 2_000}},
    ):
        observation, _, _, _, info = env.step(action)
        assert "over the limit of 1,000" in observation and info["tool_error"]
    assert step_ok(env, "bash('git status --porcelain')").strip() == "[exit code 0]"


def test_search_regex_literal_fallback_and_scope(env, step_ok):
    found = step_ok(env, r"search('def (add|mul)')")
    assert "2 matches for 'def (add|mul)' in 1 file(s)" in found and f"{SOURCE}:1: def add(a, b):" in found
    literal = step_ok(env, "search('mul(', 'tests')")
    assert (
        "not a valid regular expression" in literal
        and "tests/test_calc.py:1: from calc import mul" not in literal
    )
    assert "tests/test_calc.py:5:     assert mul(2, 3) == 6" in literal
    assert "No matches" in step_ok(env, "search('zebra')")


def test_search_caps_the_listing_but_counts_everything(make_env, step_ok):
    env = make_env(max_search_matches=3)
    env.reset()
    found = step_ok(env, "search('a')")
    assert (
        "(showing the first 3)" in found and len([line for line in found.splitlines() if ": " in line]) == 3
    )


def test_model_text_never_reaches_a_shell_command_line(env, step_ok):
    hostile = "x'; touch /testbed/pwned; echo '$(touch /testbed/pwned2)"
    for action in (
        {"name": "view_file", "arguments": {"path": hostile}},
        {"name": "search", "arguments": {"pattern": hostile}},
        {"name": "create_file", "arguments": {"path": "notes.txt", "text": hostile}},
    ):
        env.step(action)
    listing = step_ok(env, "bash('ls')")
    assert "pwned" not in listing and "notes.txt" in listing


def test_bash_reports_exit_codes_and_times_out(make_env):
    env = make_env(bash_timeout_s=1)
    env.reset()
    observation, _, _, _, info = env.step("bash('echo out; echo err >&2; exit 3')")
    assert observation.startswith("[exit code 3]") and "out" in observation and "err" in observation
    assert info["tool_error"] and not info["format_error"]
    observation, *_ = env.step("bash('sleep 5; echo never')")
    assert observation.startswith("[timed out after 1 s") and "never" not in observation


def test_long_observations_are_truncated_with_a_marker(make_env):
    env = make_env(observation_chars=2_000)
    env.reset()
    observation, *_ = env.step("bash('seq 1 100000')")
    assert len(observation) <= 2_000 and "characters omitted" in observation
    assert observation.startswith("[exit code 0]\n1\n2\n") and observation.endswith("99999\n100000\n")


def test_run_tests_without_the_hidden_tests(env):
    observation, _, _, _, info = env.step("run_tests()")
    assert "ran tests/test_calc.py: 2 passed" in observation
    assert "test_mul_zero" in observation and "test_add" not in observation  # the hidden FAIL_TO_PASS test
    assert not info["tool_error"]
    observation, *_ = env.step("run_tests(['tests/test_calc.py::test_mul'])")
    assert "1 passed" in observation and "test_mul_zero" not in observation
    refused, _, _, _, info = env.step("run_tests(['-p', 'evil'])")
    assert "not options" in refused and info["tool_error"]


@pytest.mark.filterwarnings("ignore:sandbox 'local' runs model-written code")
def test_file_tools_under_the_local_backend(toy_task, step_ok):
    """Without a jail the repository is not at /testbed: paths written as /testbed/... still resolve."""
    import repogym.env

    env = repogym.env.make(toy_task.instance_id, toy_task, sandbox="local")
    try:
        env.reset()
        assert "return a - b" in step_ok(env, f"view_file('/testbed/{SOURCE}', '2:2')")
        step_ok(env, "create_file('/testbed/notes/todo.txt', 'fix add\\n')")
        assert (env.episode.layer.workspace / "notes" / "todo.txt").read_text() == "fix add\n"
        assert "outside the repository" in env.step("view_file('/etc/passwd')")[0]
    finally:
        env.close()
