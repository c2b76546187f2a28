"""The synth tests' library: a small real package (`shapes`) with a pytest suite that covers every function.

Every repository made here uses the same pyproject.toml and repo name, so they share one environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repogym.task import Task
from repogym.validate import ValidationRun

from .git import init_repo

REPO_NAME = "acme/shapes"
PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "shapes"
version = "0.1.0"
requires-python = ">=3.8"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["src"]
"""

GEOMETRY = '''"""Shapes and helpers."""


class Shape:
    def describe(self):
        return "%s of area %.1f" % (type(self).__name__, self.area())


class Rectangle(Shape):
    def __init__(self, width, height):
        if width < 0 or height < 0:
            raise ValueError("negative size")
        self.width = width
        self.height = height

    def area(self):
        return self.width * self.height

    def perimeter(self):
        return 2 * (self.width + self.height)

    def scaled(self, factor):
        self._check(factor)
        return Rectangle(self.width * factor, self.height * factor)

    def _check(self, factor):
        if factor <= 0:
            raise ValueError("factor must be positive")


class Square(Rectangle):
    def __init__(self, side):
        super().__init__(side, side)


def total_area(shapes):
    total = 0
    for shape in shapes:
        total += shape.area()
    return total


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def parse_size(text):
    try:
        width, height = text.split("x")
        return int(width), int(height)
    except ValueError:
        raise ValueError("bad size %r" % text) from None


def parity(n):
    if n % 2 == 0:
        kind = "even"
    else:
        kind = "odd"
    return kind


def volume(width, height, depth):
    return width * height * depth


def first_words(path, count):
    with open(path) as handle:
        words = handle.read().split()
    return words[:count]
'''

TESTS = """import pytest

from shapes.geometry import Rectangle, Square, clamp, first_words, parity, parse_size, total_area, volume


def test_area_and_perimeter():
    r = Rectangle(2, 3)
    assert r.area() == 6
    assert r.perimeter() == 10


def test_square_is_a_rectangle():
    s = Square(3)
    assert s.area() == 9
    assert isinstance(s, Rectangle)


def test_describe():
    assert Square(2).describe() == "Square of area 4.0"


def test_scaled():
    assert Rectangle(1, 2).scaled(3).area() == 18
    with pytest.raises(ValueError):
        Rectangle(1, 1).scaled(0)


def test_negative_size_is_rejected():
    with pytest.raises(ValueError):
        Rectangle(-1, 2)


def test_total_area():
    assert total_area([Rectangle(1, 2), Square(2)]) == 6


def test_clamp():
    assert clamp(5, 0, 3) == 3
    assert clamp(-1, 0, 3) == 0
    assert clamp(2, 0, 3) == 2


def test_parse_size():
    assert parse_size("3x4") == (3, 4)
    with pytest.raises(ValueError):
        parse_size("3-4")


def test_parity():
    assert parity(4) == "even"
    assert parity(7) == "odd"


def test_volume():
    assert volume(2, 3, 4) == 24


def test_first_words(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("one two three four")
    assert first_words(str(path), 2) == ["one", "two"]
"""


IMPORT_TIME_TESTS = """from shapes.geometry import parse_size

DEFAULT_SIZE = parse_size("2x5")


def test_default_size():
    assert DEFAULT_SIZE == (2, 5)


def test_parse_size_again():
    assert parse_size("1x1") == (1, 1)


def test_default_area():
    assert DEFAULT_SIZE[0] * DEFAULT_SIZE[1] == 10
"""


def make_shapes_repo(root: Path, files: dict[str, str]) -> Path:
    """A git repository at root with `files` (plus the shared pyproject.toml) in one commit."""
    root.mkdir(parents=True)
    init_repo(root, {"pyproject.toml": PYPROJECT, **files}, "shapes: first version")
    return root


def shapes_files() -> dict[str, str]:
    return {
        "src/shapes/__init__.py": '"""Shapes."""\n',
        "src/shapes/geometry.py": GEOMETRY,
        "tests/test_geometry.py": TESTS,
        # Runs library code when it is imported: a bug there breaks the module's collection.
        "tests/test_import_time.py": IMPORT_TIME_TESTS,
        "LICENSE": 'MIT License\n\nCopyright (c) 2024 Acme\n\nPermission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files (the "Software"), to deal in the Software without restriction, including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is furnished to do so, subject to the following conditions:\n\nThe above copyright notice and this permission notice shall be included in all copies or substantial portions of the Software.\n\nTHE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.\n',
    }


@dataclass(frozen=True)
class Validated:
    """One validation run of the shapes candidates: the run, the candidates, the task file it wrote."""

    run: ValidationRun
    candidates: tuple[Task, ...]
    out: Path
