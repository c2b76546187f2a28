"""A commit's packaging files (pyproject.toml, setup.cfg, tox.ini) read leniently, for the env recipe.

A file that does not parse at some old commit reads as empty: the recipe then falls back to its
other sources (dates, other files) instead of failing the candidate on a file its tests never read.
"""

from __future__ import annotations

import configparser
import contextlib
import tomllib
from typing import Any


def read_toml(text: str) -> dict[str, Any]:
    """The TOML document in `text`; {} when it is empty or not valid TOML."""
    try:
        return tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError:
        return {}


def read_config(text: str) -> configparser.ConfigParser:
    """An INI file (setup.cfg, tox.ini) without interpolation; what parsed before an error is kept."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    with contextlib.suppress(configparser.Error):
        parser.read_string(text)
    return parser
