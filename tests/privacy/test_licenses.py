"""Licence detection from real repositories (files and package metadata, at any commit) and the licence gate."""

from __future__ import annotations

import pytest

from repogym.privacy import DropCode, ScrubConfig, detect_license, scrub_tasks
from repogym.task import Task

from ..support.git import commit_files, git
from ..support.privacy import (
    AGPL3,
    APACHE,
    BSD2,
    BSD3,
    GPL2,
    GPL3,
    GPL3_NOTICE,
    ISC,
    LGPL3,
    LGPL21,
    MIT,
    MPL2,
    PSF,
    PYTHON_STACK,
    UNLICENSE,
    ZERO_BSD,
    ZLIB,
)

TEXTS = {
    "MIT": MIT,
    "Apache-2.0": APACHE,
    "BSD-2-Clause": BSD2,
    "BSD-3-Clause": BSD3,
    "ISC": ISC,
    "0BSD": ZERO_BSD,
    "PSF-2.0": PSF,
    "Python-2.0": PYTHON_STACK,
    "GPL-2.0": GPL2,
    "GPL-3.0": GPL3,
    "LGPL-2.1": LGPL21,
    "LGPL-3.0": LGPL3,
    "AGPL-3.0": AGPL3,
    "MPL-2.0": MPL2,
    "Unlicense": UNLICENSE,
    "Zlib": ZLIB,
    "GPL-3.0-or-later": GPL3_NOTICE,
}


@pytest.mark.parametrize("spdx", list(TEXTS))
def test_each_licence_is_recognised_by_its_wording(spdx, make_repo):
    repo, head = make_repo({"LICENSE": TEXTS[spdx], "pkg.py": "X = 1\n"})
    info = detect_license(repo, head)
    assert (info.spdx_id, info.source, info.conflict) == (spdx, "LICENSE", False)


@pytest.mark.parametrize(
    ("files", "spdx", "source"),
    [
        (
            {"pyproject.toml": '[project]\nname = "p"\nlicense = "Apache-2.0"\n'},
            "Apache-2.0",
            "pyproject.toml [project] license",
        ),
        (
            {"pyproject.toml": '[project]\nname = "p"\nlicense = {text = "MIT License"}\n'},
            "MIT",
            "pyproject.toml [project] license",
        ),
        (
            {
                "pyproject.toml": '[project]\nname = "p"\nclassifiers = ["License :: OSI Approved :: GNU General Public License v3 or later (GPLv3+)"]\n'
            },
            "GPL-3.0-or-later",
            "pyproject.toml classifiers",
        ),
        (
            {"pyproject.toml": '[tool.poetry]\nname = "p"\nlicense = "BSD-3-Clause"\n'},
            "BSD-3-Clause",
            "pyproject.toml [tool.poetry] license",
        ),
        ({"setup.cfg": "[metadata]\nname = p\nlicense = ISC\n"}, "ISC", "setup.cfg license"),
        (
            {
                "setup.cfg": "[metadata]\nname = p\nclassifiers =\n    Programming Language :: Python\n    License :: OSI Approved :: BSD License\n"
            },
            "LicenseRef-BSD",
            "setup.cfg classifiers",
        ),
        (
            {"setup.py": 'from setuptools import setup\nsetup(name="p", license="GPLv2")\n'},
            "GPL-2.0",
            "setup.py license=",
        ),
    ],
)
def test_package_metadata_is_read_without_a_licence_file(files, spdx, source, make_repo):
    repo, head = make_repo(files)
    info = detect_license(repo, head)
    assert (info.spdx_id, info.source) == (spdx, source)


def test_agreeing_sources_are_all_named_and_the_most_specific_id_wins(make_repo):
    pyproject = '[project]\nname = "p"\nlicense = "GPL-3.0-only"\nclassifiers = ["License :: OSI Approved :: GNU General Public License (GPL)"]\n'
    repo, head = make_repo({"COPYING": GPL3, "pyproject.toml": pyproject})
    info = detect_license(repo, head)
    assert info.spdx_id == "GPL-3.0-only"
    assert not info.conflict
    assert info.source == "COPYING + pyproject.toml [project] license + pyproject.toml classifiers"


def test_disagreeing_sources_are_a_recorded_conflict(make_repo):
    repo, head = make_repo({"LICENSE": GPL3, "setup.py": 'setup(name="p", license="MIT")\n'})
    info = detect_license(repo, head)
    assert info.conflict
    assert info.spdx_id == "GPL-3.0 AND MIT"
    assert "LICENSE says GPL-3.0; setup.py license= says MIT" in info.reason


def test_lgpl_projects_ship_the_gpl_text_beside_their_own(make_repo):
    repo, head = make_repo({"COPYING": GPL3, "COPYING.LESSER": LGPL3})
    assert detect_license(repo, head).spdx_id == "LGPL-3.0"


def test_the_licence_is_read_at_the_commit_asked_for_even_in_a_bare_repository(make_repo, tmp_path):
    repo, gpl_commit = make_repo({"LICENSE": GPL3, "m.py": "X = 1\n"})
    mit_commit = commit_files(repo, {"LICENSE": MIT}, "relicense under MIT")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert detect_license(bare, gpl_commit).spdx_id == "GPL-3.0"
    assert detect_license(bare, mit_commit).spdx_id == "MIT"
    assert detect_license(bare).spdx_id == "MIT"


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"m.py": "X = 1\n"}, "no LICENSE/COPYING file"),
        (
            {"LICENSE": "Copyright 2024 Corp. All rights reserved.\n"},
            "licence text not recognised in LICENSE",
        ),
    ],
)
def test_unknown_licences_say_why(files, reason, make_repo):
    repo, head = make_repo(files)
    info = detect_license(repo, head)
    assert not info.known
    assert reason in info.reason


def test_no_repository_or_no_commit_is_unknown(make_repo, tmp_path):
    (tmp_path / "plain").mkdir()
    assert "not a local directory" in detect_license(tmp_path / "missing").reason
    assert "cannot read the tree" in detect_license(tmp_path / "plain").reason
    repo, _ = make_repo({"LICENSE": MIT})
    assert "cannot read the tree of 0123abc" in detect_license(repo, "0123abc").reason


# -- the gate ---------------------------------------------------------------------------------------


def _task(repo, commit, instance_id="t-1") -> Task:
    return Task(instance_id=instance_id, repo="corp/lib", base_commit=commit, patch="", repo_source=str(repo))


def test_a_gpl_repository_is_refused_by_default_and_accepted_when_allowed(make_repo):
    repo, head = make_repo({"LICENSE": GPL3})
    refused = scrub_tasks([_task(repo, head)])
    assert refused.tasks == ()
    (reason,) = refused.dropped[0].reasons
    assert reason.code is DropCode.LICENSE_NOT_ALLOWED
    assert "licence GPL-3.0 from LICENSE is not allowed" in reason.message
    assert "--allow-license" in reason.message

    config = ScrubConfig(license_allowlist=(*ScrubConfig().license_allowlist, "GPL-3.0"))
    (kept,) = scrub_tasks([_task(repo, head)], config).tasks
    assert kept.license == "GPL-3.0"
    assert kept.metadata["privacy"]["license_source"] == "LICENSE"


def test_or_later_and_only_variants_follow_their_licence_in_the_allowlist(make_repo):
    repo, head = make_repo({"LICENSE": GPL3_NOTICE})
    assert (
        scrub_tasks([_task(repo, head)], ScrubConfig(license_allowlist=("GPL-3.0",))).tasks[0].license
        == "GPL-3.0-or-later"
    )


def test_a_conflict_is_refused_unless_every_licence_is_allowed(make_repo):
    repo, head = make_repo({"LICENSE": GPL3, "setup.py": 'setup(license="MIT")\n'})
    (reason,) = scrub_tasks([_task(repo, head)]).dropped[0].reasons
    assert reason.code is DropCode.LICENSE_NOT_ALLOWED
    assert "licence sources disagree" in reason.message


def test_unknown_licences_are_refused_by_default_and_kept_when_asked(make_repo):
    repo, head = make_repo({"m.py": "X = 1\n"})
    no_repo = _task("", head, "t-2")
    result = scrub_tasks([_task(repo, head), no_repo])
    assert [r.reasons[0].code for r in result.dropped] == [DropCode.LICENSE_UNKNOWN] * 2
    assert "the task has no repo_source" in result.dropped[1].reasons[0].message
    kept = scrub_tasks([_task(repo, head), no_repo], ScrubConfig(allow_unknown_license=True)).tasks
    assert [t.license for t in kept] == ["", ""]


def test_vague_bsd_metadata_is_allowed_only_when_both_bsd_variants_are(make_repo):
    repo, head = make_repo({"setup.py": 'setup(classifiers=["License :: OSI Approved :: BSD License"])\n'})
    assert scrub_tasks([_task(repo, head)]).tasks[0].license == "LicenseRef-BSD"
    only_three = ScrubConfig(license_allowlist=("BSD-3-Clause",))
    assert (
        scrub_tasks([_task(repo, head)], only_three).dropped[0].reasons[0].code
        is DropCode.LICENSE_NOT_ALLOWED
    )


def test_a_misspelt_allowlist_id_is_an_error_not_a_silent_refusal():
    with pytest.raises(ValueError, match=r"'MTI' \(did you mean 'MIT'\?\)"):
        ScrubConfig(license_allowlist=("MTI",))
    assert (
        ScrubConfig(license_allowlist=("LicenseRef-corp-internal", "gpl-3.0")).license_allowlist[0]
        == "LicenseRef-corp-internal"
    )
