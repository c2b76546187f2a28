"""SPDX ids from licence texts and package-metadata names, SPDX expressions, and the allowlist check.

Texts are recognised by phrases of their standard wording (a licence text
with its title and grant), never by file name. Names in package metadata
("MIT License", "GPLv3+", trove classifiers) are mapped to SPDX ids; vague
ones ("BSD License", "GPL") become `LicenseRef-BSD`, `LicenseRef-GPL`,
`LicenseRef-LGPL`, which the allowlist accepts only when it accepts every
licence they could mean. Anything unrecognised is `LicenseRef-unrecognized`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

UNRECOGNIZED = "LicenseRef-unrecognized"
VAGUE_FAMILIES: dict[str, tuple[str, ...]] = {
    "LicenseRef-BSD": ("BSD-2-Clause", "BSD-3-Clause"),
    "LicenseRef-GPL": ("GPL-2.0", "GPL-3.0"),
    "LicenseRef-LGPL": ("LGPL-2.0", "LGPL-2.1", "LGPL-3.0"),
}
DEFAULT_ALLOWLIST: tuple[str, ...] = (
    "MIT", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "ISC", "PSF-2.0", "Python-2.0", "Unlicense", "0BSD", "Zlib",
)  # fmt: skip

_GPL_FAMILY = ("GPL-2.0", "GPL-3.0", "LGPL-2.0", "LGPL-2.1", "LGPL-3.0", "AGPL-3.0")
_OTHER_IDS = (
    "MIT", "MIT-0", "BSD-2-Clause", "BSD-3-Clause", "BSD-4-Clause", "0BSD", "Apache-1.1", "Apache-2.0", "ISC",
    "PSF-2.0", "Python-2.0", "Unlicense", "Zlib", "MPL-1.1", "MPL-2.0", "EPL-1.0", "EPL-2.0", "CC0-1.0",
    "BSL-1.0", "Artistic-2.0", "EUPL-1.2", "CDDL-1.0", "WTFPL", "Apache-2.0-with-LLVM-exception",
)  # fmt: skip
KNOWN_IDS: dict[str, str] = {
    spdx.lower(): spdx
    for spdx in (
        *_OTHER_IDS,
        *_GPL_FAMILY,
        *(f"{gpl}-{suffix}" for gpl in _GPL_FAMILY for suffix in ("only", "or-later")),
        *(f"{gpl}+" for gpl in _GPL_FAMILY),
        *VAGUE_FAMILIES,
        UNRECOGNIZED,
    )
}

# (SPDX id, phrases that must all occur (a tuple = any of these), phrases that must not occur), in
# normalised text. GPL-family titles carry their dates: other licences name them without one (MPL-2.0
# lists "the GNU Lesser General Public License, Version 2.1" as a secondary licence).
_TEXT_RULES: tuple[tuple[str, tuple[str | tuple[str, ...], ...], tuple[str, ...]], ...] = (
    ("AGPL-3.0", ("gnu affero general public license version 3 19 november 2007",), ()),
    ("LGPL-3.0", ("gnu lesser general public license version 3 29 june 2007",), ()),
    ("LGPL-2.1", ("gnu lesser general public license version 2 1 february 1999",), ()),
    ("LGPL-2.0", ("gnu library general public license version 2 june 1991",), ()),
    ("GPL-3.0", ("gnu general public license version 3 29 june 2007",), ()),
    ("GPL-2.0", ("gnu general public license version 2 june 1991",), ()),
    ("MPL-2.0", ("mozilla public license version 2 0",), ()),
    ("Apache-2.0", ("apache license version 2 0",), ()),
    ("Unlicense", ("this is free and unencumbered software released into the public domain",), ()),
    ("Python-2.0", ("python software foundation license", "beopen"), ()),
    ("PSF-2.0", ("python software foundation", "license agreement"), ("beopen",)),
    ("Zlib", ("altered source versions must be plainly marked as such", "this notice may not be removed or altered"), ()),
    ("BSD-4-Clause", ("redistribution and use in source and binary forms", "all advertising materials mentioning"), ()),
    (
        "BSD-3-Clause",
        ("redistribution and use in source and binary forms", ("neither the name", "names of its contributors may not")),
        ("all advertising materials mentioning",),
    ),
    (
        "BSD-2-Clause",
        ("redistribution and use in source and binary forms",),
        ("neither the name", "names of its contributors may not", "all advertising materials mentioning"),
    ),
    ("MIT", ("permission is hereby granted free of charge to any person obtaining a copy", "above copyright notice and this permission notice shall be included"), ()),
    ("ISC", (("permission to use copy modify and or distribute this software for any purpose", "permission to use copy modify and distribute this software for any purpose"), "above copyright notice and this permission notice appear in all copies"), ()),
    ("0BSD", ("permission to use copy modify and or distribute this software for any purpose with or without fee is hereby granted",), ("above copyright notice and this permission notice appear in all copies",)),
)  # fmt: skip
_GPL_NOTICE = re.compile(
    r"gnu (?:(lesser|library|affero) )?general public license as published by the free software foundation"
    r" (?:either )?version (\d)(?: (\d))?(?: of the license)?( or at your option any later version)?"
)
_SPDX_TAG = re.compile(r"SPDX-License-Identifier:\s*([^\n*#]+)", re.IGNORECASE)


def normalise_text(text: str) -> str:
    """Lower case, punctuation to spaces, whitespace collapsed: line wrapping and quotes stop mattering.

    >>> normalise_text("Permission is hereby granted,\\n  free of charge")
    'permission is hereby granted free of charge'
    """
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def recognise_text(text: str) -> list[str]:
    """SPDX ids whose standard wording occurs in a licence file's text (several for stacked texts).

    >>> recognise_text("Permission is hereby granted, free of charge, to any person obtaining a copy ... "
    ...                "The above copyright notice and this permission notice shall be included in all copies")
    ['MIT']
    >>> recognise_text("you can redistribute it under the terms of the GNU General Public License as published by "
    ...                "the Free Software Foundation, either version 3 of the License, or (at your option) any later version.")
    ['GPL-3.0-or-later']
    """
    tag = _SPDX_TAG.search(text)
    if tag:
        expression = canonical_expression(tag.group(1).strip())
        if expression:
            return [expression]
    flat = normalise_text(text)
    found = [spdx for spdx, required, forbidden in _TEXT_RULES if _matches(flat, required, forbidden)]
    if not found:
        found = [_notice_id(match) for match in _GPL_NOTICE.finditer(flat)]
    return list(dict.fromkeys(found))


def _matches(flat: str, required: tuple[str | tuple[str, ...], ...], forbidden: tuple[str, ...]) -> bool:
    for phrase in required:
        options = (phrase,) if isinstance(phrase, str) else phrase
        if not any(option in flat for option in options):
            return False
    return not any(phrase in flat for phrase in forbidden)


def _notice_id(match: re.Match[str]) -> str:
    prefix = {"lesser": "LGPL", "library": "LGPL", "affero": "AGPL"}.get(match.group(1) or "", "GPL")
    version = f"{match.group(2)}.{match.group(3) or 0}"
    return f"{prefix}-{version}-{'or-later' if match.group(4) else 'only'}"


# -- names in package metadata -------------------------------------------------------------------

_NAMES: dict[str, str] = {}
for _spdx, _names in {
    "MIT": ("mit", "mit license", "mit licence", "the mit license", "expat", "expat license"),
    "BSD-3-Clause": (
        "new bsd",
        "new bsd license",
        "modified bsd",
        "modified bsd license",
        "revised bsd",
        "bsd 3 clause",
        "3 clause bsd",
        "bsd3",
        "bsd 3",
        "bsd 3 clause license",
    ),
    "BSD-2-Clause": (
        "simplified bsd",
        "simplified bsd license",
        "bsd 2 clause",
        "2 clause bsd",
        "freebsd",
        "bsd2",
        "bsd 2",
    ),
    "LicenseRef-BSD": ("bsd", "bsd license", "bsd licence"),
    "Apache-2.0": (
        "apache",
        "apache 2",
        "apache 2 0",
        "apache2",
        "apache license",
        "apache license 2 0",
        "apache license version 2 0",
        "apache software license",
        "apache software license 2 0",
        "apache software license version 2 0",
        "asl 2 0",
        "al2",
    ),
    "ISC": ("isc", "isc license", "iscl", "isc license iscl"),
    "PSF-2.0": ("psf", "psfl", "psf license", "psf 2 0", "python software foundation license"),
    "Python-2.0": ("python 2 0", "python license"),
    "LicenseRef-GPL": ("gpl", "gnu gpl", "gnu general public license", "gnu general public license gpl"),
    "LicenseRef-LGPL": (
        "lgpl",
        "gnu lgpl",
        "gnu lesser general public license",
        "gnu library or lesser general public license lgpl",
    ),
    "MPL-2.0": ("mpl 2 0", "mpl2", "mozilla public license 2 0", "mozilla public license 2 0 mpl 2 0"),
    "Unlicense": ("unlicense", "the unlicense", "the unlicense unlicense"),
    "Zlib": ("zlib", "zlib license", "zlib libpng", "zlib libpng license"),
    "0BSD": ("0bsd", "zero clause bsd", "zero clause bsd 0bsd", "bsd zero clause"),
    "MIT-0": ("mit no attribution license mit 0",),
}.items():
    _NAMES.update(dict.fromkeys(_names, _spdx))
_GPL_NAME = re.compile(r"^(?:gnu )?(a|l)?gpl ?v?(\d)(?: (\d))?( ?\+| or later)?$")
_GPL_CLASSIFIER = re.compile(
    r"^gnu (?:(lesser|affero) )?general public license v(\d)( or later)?(?: \(\w+\+?\))?$"
)


def name_to_spdx(name: str) -> str:
    """The SPDX expression for a licence name from package metadata or a trove classifier.

    >>> [name_to_spdx(n) for n in ("MIT License", "GPLv3+", "BSD", "Apache-2.0 OR MIT", "Proprietary")]
    ['MIT', 'GPL-3.0-or-later', 'LicenseRef-BSD', 'Apache-2.0 OR MIT', 'LicenseRef-unrecognized']
    >>> name_to_spdx("License :: OSI Approved :: GNU Lesser General Public License v3 (LGPLv3)")
    'LGPL-3.0'
    """
    name = name.strip()
    if name.startswith("License ::"):
        name = name.rsplit("::", 1)[-1].strip()
        classifier = _GPL_CLASSIFIER.match(name.lower())
        if classifier:
            prefix = {"lesser": "LGPL", "affero": "AGPL"}.get(classifier.group(1) or "", "GPL")
            version = {"LGPL2": "2.1"}.get(f"{prefix}{classifier.group(2)}", f"{classifier.group(2)}.0")
            return f"{prefix}-{version}{'-or-later' if classifier.group(3) else ''}"
    if len(name) > 200:  # a whole licence text pasted into setup.py's license=
        found = recognise_text(name)
        return " AND ".join(found) if found else UNRECOGNIZED
    expression = canonical_expression(name)
    if expression:
        return expression
    key = normalise_text(name.replace("+", " plus "))
    key = key.replace(" plus", "+").replace("plus ", "+")
    if key in _NAMES:
        return _NAMES[key]
    gpl = _GPL_NAME.match(key)
    if gpl:
        prefix = {"a": "AGPL", "l": "LGPL"}.get(gpl.group(1) or "", "GPL")
        version = (
            f"{gpl.group(2)}.{gpl.group(3) or ('1' if prefix == 'LGPL' and gpl.group(2) == '2' else '0')}"
        )
        return f"{prefix}-{version}{'-or-later' if gpl.group(4) else ''}"
    inner = re.search(r"\(([^)]+)\)\s*$", name)  # "Mozilla Public License 2.0 (MPL 2.0)"
    if inner:
        return name_to_spdx(inner.group(1))
    return UNRECOGNIZED


# -- expressions and the allowlist ------------------------------------------------------------------

Expression = str | tuple[str, list["Expression"]]
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def parse_expression(text: str) -> Expression | None:
    """An SPDX expression as a tree: an id, or ('AND' | 'OR', [operands]); None if it is not one.

    >>> parse_expression("MIT OR (Apache-2.0 AND BSD-3-Clause)")
    ('OR', ['MIT', ('AND', ['Apache-2.0', 'BSD-3-Clause'])])
    >>> parse_expression("GPL-2.0-or-later WITH Classpath-exception-2.0")
    'GPL-2.0-or-later'
    """
    tokens = _TOKEN.findall(text)
    position = 0

    def operand() -> Expression | None:
        nonlocal position
        if position >= len(tokens):
            return None
        token = tokens[position]
        position += 1
        if token == "(":
            inner = chain("OR")
            if inner is None or position >= len(tokens) or tokens[position] != ")":
                return None
            position += 1
            return inner
        if token.upper() in ("AND", "OR", "WITH", ")"):
            return None
        if position + 1 < len(tokens) and tokens[position].upper() == "WITH":
            position += 2  # an exception only widens what the licence permits
        return token

    def chain(operator: str) -> Expression | None:
        nonlocal position
        parts = [operand() if operator == "AND" else chain("AND")]
        while position < len(tokens) and tokens[position].upper() == operator:
            position += 1
            parts.append(operand() if operator == "AND" else chain("AND"))
        if any(part is None for part in parts):
            return None
        return parts[0] if len(parts) == 1 else (operator, parts)  # type: ignore[return-value]

    tree = chain("OR")
    return tree if tree is not None and position == len(tokens) else None


def expression_ids(tree: Expression) -> list[str]:
    """Every licence id in an expression tree."""
    if isinstance(tree, str):
        return [tree]
    return [spdx for part in tree[1] for spdx in expression_ids(part)]


def canonical_expression(text: str) -> str:
    """`text` with known ids in SPDX's spelling, if it is an expression of known ids; else ''.

    >>> canonical_expression("mit or apache-2.0"), canonical_expression("Proprietary")
    ('MIT OR Apache-2.0', '')
    """
    tree = parse_expression(text)
    if tree is None or not all(spdx.lower() in KNOWN_IDS for spdx in expression_ids(tree)):
        return ""
    return _render(tree, top=True)


def _render(tree: Expression, top: bool = False) -> str:
    if isinstance(tree, str):
        return KNOWN_IDS.get(tree.lower(), tree)
    text = f" {tree[0]} ".join(_render(part) for part in tree[1])
    return text if top else f"({text})"


def family(spdx: str) -> str:
    """The licence an id names, without '-only', '-or-later' or '+', lower-cased, for comparisons.

    >>> family("GPL-3.0-or-later"), family("LGPL-2.1+"), family("MIT")
    ('gpl-3.0', 'lgpl-2.1', 'mit')
    """
    lowered = spdx.lower()
    for suffix in ("-only", "-or-later", "+"):
        if lowered.endswith(suffix):
            return lowered[: -len(suffix)]
    return lowered


def members(spdx: str) -> tuple[str, ...]:
    """The concrete licence families an id may mean (several for a vague one)."""
    return tuple(family(m) for m in VAGUE_FAMILIES.get(spdx, (spdx,)))


def disallowed_ids(expression: str, allowlist: Iterable[str], allow_unknown: bool) -> list[str]:
    """The ids that keep `expression` from being allowed ([] when it is allowed).

    AND needs every operand allowed, OR any one of them; an unparsable
    expression is one unknown id.

    >>> disallowed_ids("MIT OR GPL-3.0-only", ["MIT"], False), disallowed_ids("MIT AND GPL-3.0", ["MIT"], False)
    ([], ['GPL-3.0'])
    >>> disallowed_ids("LicenseRef-BSD", ["BSD-3-Clause"], False)
    ['LicenseRef-BSD']
    """
    allowed = {family(spdx) for spdx in allowlist}
    tree = parse_expression(expression) if expression else None
    if tree is None:
        return [] if allow_unknown else [expression or UNRECOGNIZED]

    def blockers(node: Expression) -> list[str]:
        if isinstance(node, str):
            if node.lower() == UNRECOGNIZED.lower():
                return [] if allow_unknown else [node]
            if family(node) in allowed or all(m in allowed for m in members(node)):
                return []
            return [node]
        results = [blockers(part) for part in node[1]]
        if node[0] == "OR":
            return [] if any(not r for r in results) else [b for r in results for b in r]
        return [b for r in results for b in r]

    return list(dict.fromkeys(blockers(tree)))
