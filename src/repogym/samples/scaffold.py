"""The files every sample library shares: packaging, README, changelog, licence, docs pages.

The pyproject uses setuptools with `license = {text = "<SPDX id>"}` (the
table form every setuptools since 61 reads, so the package also builds
under Python 3.8) plus the matching trove classifier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from repogym.samples.licenses import SampleLicense
from repogym.samples.spec import PKG, Change, Edit, LibrarySpec

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
description = "{summary}"
readme = "README.md"
requires-python = ">=3.8"
license = {{text = "{spdx}"}}
authors = [{{name = "{holder}"}}]
classifiers = [
    "Programming Language :: Python :: 3",
    "{classifier}",
]
dependencies = []

[project.optional-dependencies]
test = ["pytest"]

[project.urls]
Homepage = "https://github.com/{owner}/{name}"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["src"]
"""

README = """# {name}

{summary}

## Installation

    pip install {name}

## Usage

```python
{usage}
```

## Developement

    pip install -e ".[test]"
    pytest

## License

{spdx}; see LICENSE.
"""

DOCS_INDEX = """# {name}

{summary}

The README's usage section is the quickest start; the other pages here go into detail.
"""

GITIGNORE = """__pycache__/
*.py[cod]
*.egg-info/
build/
dist/
.venv/
.pytest_cache/
.coverage
"""

REQUIREMENTS_DEV = "pytest==7.4.4\npytest-cov==4.1.0\n"

#: Dependabot's bump of requirements-dev.txt: (package, old version, new version).
DEPENDABOT_BUMP = ("pytest-cov", "4.1.0", "5.0.0")

PACKAGE_INIT = '''"""{summary}"""

__version__ = "{version}"
'''


@dataclass
class Changelog:
    """CHANGELOG.md as released sections plus the entries under "Unreleased"."""

    releases: list[tuple[str, str, list[str]]] = field(default_factory=list)
    unreleased: list[str] = field(default_factory=list)

    def render(self, extra: tuple[str, ...] = ()) -> str:
        """The file's text; `extra` adds unreleased entries without recording them (for a branch)."""
        out = ["# Changelog", "", "All notable changes to this project are documented here.", ""]
        pending = [*self.unreleased, *extra]
        if pending:
            out += ["## Unreleased", "", *(f"- {entry}" for entry in pending), ""]
        for version, date, entries in reversed(self.releases):
            out += [
                f"## {version} ({date})",
                "",
                *(f"- {entry}" for entry in entries or ["Maintenance release."]),
                "",
            ]
        return "\n".join(out)

    def release(self, version: str, date: str) -> None:
        self.releases.append((version, date, self.unreleased))
        self.unreleased = []


@dataclass(frozen=True)
class SampleProject:
    """Names and metadata of one generated library."""

    name: str
    package: str
    owner: str
    holder: str
    year: int
    license: SampleLicense


def initial_files(spec: LibrarySpec, project: SampleProject, changelog: Changelog) -> dict[str, str]:
    """Path -> text of the first commit."""
    values = {
        "name": project.name,
        "summary": spec.summary,
        "spdx": project.license.spdx,
        "classifier": project.license.classifier,
        "holder": project.holder,
        "owner": project.owner,
        "version": "0.1.0",
        "usage": spec.usage.strip().replace(PKG, project.package),
    }
    src = f"src/{project.package}/"
    files = {
        ".gitignore": GITIGNORE,
        "LICENSE": project.license.text(project.year, project.holder),
        "README.md": README.format(**values),
        "CHANGELOG.md": changelog.render(),
        "pyproject.toml": PYPROJECT.format(**values),
        "requirements-dev.txt": REQUIREMENTS_DEV,
        "docs/index.md": DOCS_INDEX.format(**values),
        src + "__init__.py": PACKAGE_INIT.format(**values),
    }
    files.update(
        {src + module: source.replace(PKG, project.package) for module, source in spec.modules.items()}
    )
    files.update(
        {"tests/" + name: source.replace(PKG, project.package) for name, source in spec.tests.items()}
    )
    return files


def version_edits(package: str, old: str, new: str) -> tuple[Edit, ...]:
    return (
        Edit("pyproject.toml", f'version = "{old}"', f'version = "{new}"'),
        Edit(f"src/{package}/__init__.py", f'__version__ = "{old}"', f'__version__ = "{new}"'),
    )


def generic_docs(name: str) -> tuple[Change, ...]:
    """Docs-only changes any library can receive, in addition to its own."""
    return (
        Change("Fix typo in README", (Edit("README.md", "## Developement", "## Development"),)),
        Change(
            "docs: add a contributing guide",
            (
                Edit(
                    "docs/contributing.md",
                    "",
                    f"""# Contributing to {name}

1. Open an issue describing the bug or the feature.
2. Fork the repository and create a branch from `main`.
3. Add a test that fails without your change, then make it pass.
4. Run `pytest` and open a pull request that links the issue ("Fixes #123").""",
                ),
            ),
        ),
        Change(
            "docs: describe the release process",
            (
                Edit(
                    "docs/releasing.md",
                    "",
                    """# Releasing

Releases are cut from `main` by the release workflow: it bumps the version in
pyproject.toml and `__init__.py`, moves the "Unreleased" changelog entries
under the new version and tags the commit `vX.Y.Z`.""",
                ),
            ),
        ),
        Change(
            "docs: mention supported Python versions",
            (
                Edit(
                    "README.md",
                    f"    pip install {name}\n",
                    f"    pip install {name}\n\n{name} supports Python 3.8 and newer and has no dependencies.\n",
                ),
            ),
        ),
        Change(
            "docs: link the changelog from the README",
            (Edit("README.md", "## License\n", "## Changes\n\nSee CHANGELOG.md.\n\n## License\n"),),
        ),
    )
