"""Builds that keep their effects: what the install writes reaches every episode of its commit, per commit;
a packaging patch is installed before the tests; pip, the CA bundle, exclude_newer and test_env in builds."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from repogym.errors import EnvBuildError
from repogym.grading.grade import grade
from repogym.grading.report import Outcome
from repogym.sandbox.envbuild import env_key, find_interpreters, pick_interpreter
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import EnvSpec

from ..support.sandbox import HELLO_FILES

_SCM_FILES = {
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=64", "setuptools-scm>=8"]\n'
        'build-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "scmpkg"\ndynamic = ["version"]\nrequires-python = ">=3.8"\n\n'
        '[tool.setuptools_scm]\nversion_file = "src/scmpkg/_version.py"\n'
    ),
    ".gitignore": "src/scmpkg/_version.py\n*.egg-info/\n",
    "src/scmpkg/__init__.py": "from scmpkg._version import version\n\n\ndef answer():\n    return 41\n",
    "tests/test_version.py": (
        "import scmpkg\nfrom scmpkg import _version\n\n\n"
        "def test_version_file_was_generated_for_this_checkout():\n"
        "    assert _version.version == scmpkg.version and '+g' in _version.version\n"
    ),
}


@pytest.mark.slow
def test_setuptools_scm_version_file_reaches_each_commits_episodes(git_repo):
    repo = git_repo("scmpkg")
    first = repo.commit(_SCM_FILES, "scmpkg")
    second = repo.commit({"README.md": "scmpkg\n"}, "readme")  # same dependency files: the same environment
    fixed = repo.patch({"src/scmpkg/__init__.py": _SCM_FILES["src/scmpkg/__init__.py"].replace("41", "42")})
    test_patch = repo.patch(
        {"tests/test_answer.py": "import scmpkg\n\n\ndef test_answer():\n    assert scmpkg.answer() == 42\n"}
    )
    task = repo.task(
        "local__scmpkg-1",
        second,
        patch=fixed,
        test_patch=test_patch,
        FAIL_TO_PASS=["tests/test_answer.py::test_answer"],
        PASS_TO_PASS=["tests/test_version.py::test_version_file_was_generated_for_this_checkout"],
    )
    at_first = TaskRuntime.create(task.replace(base_commit=first)).prepare()  # builds the environment
    at_second = TaskRuntime.create(task).prepare()  # reuses it, runs the install step at its own commit
    assert at_first.env.key == at_second.env.key and at_second.env.build_s == 0
    # Each commit's version lives in the venv's metadata too: the second commit has a venv of its own.
    assert at_second.commit_layers().venv != (at_second.env.venv,)
    for runtime, commit in ((at_first, first), (at_second, second)):
        with runtime.episode() as episode:
            version = episode.run("python -c 'import scmpkg; print(scmpkg.version)'").output.strip()
            assert f"+g{commit[:7]}" in version, version  # this commit's file, not the other's
            assert episode.run("test -f src/scmpkg/_version.py && ls src/*.egg-info").ok
            # The generated files are the commit's installed state, not changes of the episode.
            assert episode.diff(include_ignored=True)[0] == ""
            assert episode.run("echo '# edit' >> src/scmpkg/__init__.py").ok
            assert episode.diff(include_ignored=True)[0].count("+++ b/") == 1
    result = grade(task, task.patch, runtime=at_second)
    assert result.resolved, (result.outcome, result.detail)
    assert not grade(task, "", runtime=at_second).resolved


_CLI_TEST = (
    "import shutil\nimport subprocess\n\n\ndef test_console_script_is_installed():\n"
    '    assert shutil.which("hello-cli"), "setup.py\'s console script is not installed"\n'
    '    assert subprocess.run(["hello-cli"], capture_output=True, text=True).stdout.strip() == "hi"\n'
)
_MAIN = HELLO_FILES["hello.py"] + "\n\ndef main():\n    print(greet())\n"
_ENTRY_POINT = HELLO_FILES["setup.py"].replace(
    'py_modules=["hello"])',
    'py_modules=["hello"], entry_points={"console_scripts": ["hello-cli=hello:main"]})',
)


@pytest.fixture(scope="module")
def hello_task(hello_repo):
    repo, base = hello_repo
    return repo.task(
        "local__hello-1",
        base,
        patch=repo.patch({"setup.py": _ENTRY_POINT, "hello.py": _MAIN}),
        test_patch=repo.patch({"tests/test_cli.py": _CLI_TEST}),
        FAIL_TO_PASS=["tests/test_cli.py::test_console_script_is_installed"],
        PASS_TO_PASS=["tests/test_hello.py::test_greet"],
        extra={"code_only_patch": repo.patch({"hello.py": _MAIN})},
    )


@pytest.mark.slow
def test_patch_to_setup_py_is_installed_before_the_tests(hello_task):
    runtime = TaskRuntime.create(hello_task).prepare()
    result = grade(hello_task, hello_task.patch, runtime=runtime)
    assert result.outcome is Outcome.RESOLVED, result.detail
    # Without the setup.py change there is no console script: the re-install is what resolved it.
    assert (
        grade(hello_task, hello_task.extra["code_only_patch"], runtime=runtime).outcome is Outcome.UNRESOLVED
    )
    assert not grade(hello_task, "", runtime=runtime).resolved


@pytest.mark.slow
def test_an_install_that_leaves_the_venv_as_it_was_adds_no_venv_layer(hello_repo):
    repo, base = hello_repo
    second = repo.commit({"README.md": "hello\n"}, "readme")  # a static version: the same venv metadata
    try:
        runtime = TaskRuntime.create(repo.task("local__hello-static", second)).prepare()
        layers = runtime.commit_layers()
        assert layers.venv == (runtime.env.venv,) and [layer.name for layer in layers.repo[:2]] == [
            "pyc",
            "repo",
        ]
        with runtime.episode() as episode:
            assert episode.run("python -c 'import hello; print(hello.greet())'").output.strip() == "hi"
    finally:
        repo.git("reset", "-q", "--hard", base)


_WHOLE_SECONDS = (
    "import os, sys; "
    "made = [os.path.join(d, f) for d, _, fs in os.walk('.') if '.git' not in d for f in fs if f != 'edited.c']; "
    "print(int(os.stat('edited.c').st_mtime), max(int(os.stat(p).st_mtime) for p in made))"
)


@pytest.mark.slow
def test_a_source_patched_right_after_the_install_is_newer_in_whole_seconds(hello_repo):
    """distutils and setuptools rebuild an extension only when a source's whole-second mtime is past its
    build's: a patch applied in the second the install layer was made was never compiled, and the C-extension
    gold patch of test_swebench_shapes graded UNRESOLVED about one time in two. A layer is ready only once
    that second is over."""
    repo, base = hello_repo
    second = repo.commit({"README.md": "whole seconds\n"}, "readme")
    try:
        # An install step whose last act is a write in the repo, as a compiled extension's copy is.
        task = repo.task("local__hello-seconds", second, env=EnvSpec(install=("touch made-last.so",)))
        runtime = TaskRuntime.create(task).prepare()
        with runtime.episode() as episode:
            result = episode.run(f'touch edited.c && python -c "{_WHOLE_SECONDS}"')
        edited, newest_installed = map(int, result.output.split())
        assert edited > newest_installed, result.output
    finally:
        repo.git("reset", "-q", "--hard", base)


@pytest.mark.slow
def test_packaging_patch_is_installed_with_a_copied_workspace(hello_task, monkeypatch):
    monkeypatch.setenv("REPOGYM_NO_OVERLAY", "1")
    runtime = TaskRuntime.create(hello_task).prepare()
    assert not runtime.sandbox.supports_overlay
    result = grade(hello_task, hello_task.patch, runtime=runtime)
    assert result.outcome is Outcome.RESOLVED, result.detail
    assert not grade(hello_task, hello_task.extra["code_only_patch"], runtime=runtime).resolved


def test_multiprocessing_pool_lock_and_queue_work_in_a_jailed_test_run(episode):
    episode.put_file(
        "test_mp.py",
        "import multiprocessing as mp\n\n\ndef square(x):\n    return x * x\n\n\n"
        "def test_pool():\n    with mp.Pool(2) as pool:\n        assert pool.map(square, range(5)) == [0, 1, 4, 9, 16]\n\n\n"
        "def test_lock_and_queue():\n    lock, queue = mp.Lock(), mp.Queue()\n"
        "    with lock:\n        queue.put(7)\n    assert queue.get(timeout=10) == 7\n",
    )
    result = episode.run(
        "cp /opt/repogym/in/test_mp.py tests/ && python -m pytest -q -p no:cacheprovider tests/test_mp.py"
    )
    assert result.ok and "2 passed" in result.output, result.output


def test_env_key_ignores_how_tests_run(toy_task, toy_runtime):
    interpreter = pick_interpreter("")
    key = env_key(toy_task, toy_runtime.pristine, interpreter)
    assert key == toy_runtime.env.key
    same = dataclasses.replace(toy_task.env, test_cmd="pytest -x -q", test_env={"CI": "1"})
    assert env_key(toy_task.replace(env=same), toy_runtime.pristine, interpreter) == key
    # Parsers that need nothing installed share an environment; the pytest parser adds pytest.
    unittest, django = (dataclasses.replace(toy_task.env, log_parser=name) for name in ("unittest", "django"))
    assert env_key(toy_task.replace(env=unittest), toy_runtime.pristine, interpreter) == env_key(
        toy_task.replace(env=django), toy_runtime.pristine, interpreter
    )
    for changed in (
        dataclasses.replace(toy_task.env, packages=("attrs",)),
        dataclasses.replace(toy_task.env, install=("pip install -e .",)),
        dataclasses.replace(toy_task.env, exclude_newer="2024-01-01"),
    ):
        assert env_key(toy_task.replace(env=changed), toy_runtime.pristine, interpreter) != key


def test_changing_only_the_test_command_reuses_the_environment(toy_task, toy_runtime):
    task = toy_task.replace(env=dataclasses.replace(toy_task.env, test_cmd="python -m pytest -x"))
    runtime = TaskRuntime.create(task).prepare()
    assert runtime.env.venv == toy_runtime.env.venv and runtime.env.build_s == 0


@pytest.mark.slow
def test_pip_ca_bundle_exclude_newer_and_test_env_in_builds(toy_task):
    task = toy_task.replace(
        instance_id="toy__calc-pip",
        env=EnvSpec(
            packages=("packaging",),
            install=(
                'test -z "${REPOGYM_TEST_MARK:-}"',  # test_env never reaches a build
                'test -s "$PIP_CERT" && test "$PIP_CERT" = "$SSL_CERT_FILE" && test "$REQUESTS_CA_BUNDLE" = "$PIP_CERT"',
                "python -m pip install iniconfig",
            ),
            log_parser="unittest",
            exclude_newer="2022-06-01",
            test_env={"REPOGYM_TEST_MARK": "from-test-env"},
        ),
    )
    runtime = TaskRuntime.create(task).prepare()
    site = next(runtime.env.venv.glob("lib/python3*/site-packages"))
    assert (site / "packaging-21.3.dist-info").is_dir()  # uv, as of 2022-06-01 (22.0 came in December)
    assert (site / "iniconfig-1.1.1.dist-info").is_dir()  # pip, as of 2022-06-01 (2.0.0 came in 2023)
    with runtime.episode() as episode:
        assert episode.run("echo $REPOGYM_TEST_MARK").output.strip() == "from-test-env"
        assert (
            episode.run("echo $REPOGYM_TEST_MARK", env={"REPOGYM_TEST_MARK": "call"}).output.strip() == "call"
        )


def test_env_python_takes_an_interpreter_path():
    other = find_interpreters()[0]
    picked = pick_interpreter(str(other.executable))
    assert picked.version == other.version and picked.executable == other.executable
    with pytest.raises(
        EnvBuildError, match=r"needs the Python at /no/such/python3\.9.*none installed.*3\.11"
    ):
        pick_interpreter("/no/such/python3.9")
    with pytest.raises(EnvBuildError, match=r"needs Python 3\.4, none installed"):
        pick_interpreter("3.4")


@pytest.mark.slow
def test_install_layers_are_made_again_when_the_environment_is_rebuilt(git_repo):
    repo = git_repo("hello-rebuilt")  # an environment of its own: this test deletes it
    repo.commit(HELLO_FILES, "hello")
    second = repo.commit({"README.md": "hello\n"}, "readme")
    task = repo.task("local__hello-rebuilt", second)
    first = TaskRuntime.create(task).prepare()
    done = next(first.env.venv.parent.parent.glob(f"installs/{first.env.key}-*.ok"))
    stamp = done.read_text()
    shutil.rmtree(first.env.venv)  # what `repogym cache prune --area envs` does to it
    first.env.venv.with_name(first.env.key + ".ok").unlink()
    again = TaskRuntime.create(task).prepare()
    assert again.env.build_s > 0 and done.read_text() != stamp
    with again.episode() as episode:
        assert episode.run("python -c 'import hello; print(hello.greet())'").output.strip() == "hi"
