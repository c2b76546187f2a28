"""Helpers shared by the privacy tests: real git repositories, licence texts, planted secrets."""

from __future__ import annotations

import random
import string
import subprocess
from pathlib import Path

from .git import init_repo as _init_repo
from .git import staged_diff


def init_repo(path: Path, files: dict[str, str | None]) -> tuple[Path, str]:
    """A repository at `path` whose first commit holds `files`: (path, that commit)."""
    return path, _init_repo(path, files, "initial")


# -- secrets that detect-secrets must find (random, so no filter mistakes them for ids) -----------

_rng = random.Random(20240601)
_B64 = string.ascii_letters + string.digits + "+/"
AWS_KEY = "AKIA" + "".join(_rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
GITHUB_TOKEN = "ghp_" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(36))
HIGH_ENTROPY = "".join(_rng.choice(_B64) for _ in range(44))
KEY_BODY = ["".join(_rng.choice(_B64) for _ in range(64)) for _ in range(5)] + [
    "".join(_rng.choice(_B64) for _ in range(20)) + "=="
]
PRIVATE_KEY = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *KEY_BODY, "-----END RSA PRIVATE KEY-----"])


def fragments(secret: str, size: int = 12) -> list[str]:
    """Overlapping pieces of a secret, so a partial leak (only a prefix redacted) is caught too."""
    lines = [line for line in secret.split("\n") if "PRIVATE KEY" not in line]
    return [line[i : i + size] for line in lines for i in range(0, max(1, len(line) - size + 1), size // 2)]


def assert_absent(secret: str, *blobs: bytes | str) -> None:
    for blob in blobs:
        data = blob.encode() if isinstance(blob, str) else blob
        for piece in fragments(secret):
            assert piece.encode() not in data, f"a piece of the secret leaked: {piece[:4]}..."


# -- licence texts in their standard wording (opening paragraphs) ----------------------------------

MIT = """MIT License

Copyright (c) 2024 Example Corp

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY.
"""

APACHE = """
                                 Apache License
                           Version 2.0, January 2004
                        http://www.apache.org/licenses/

   TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION

   1. Definitions.

      "License" shall mean the terms and conditions for use, reproduction,
      and distribution as defined by Sections 1 through 9 of this document.
"""

_BSD_HEAD = """Copyright (c) 2024, Example Corp
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.
"""
_BSD_TAIL = """
THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES ARE DISCLAIMED.
"""
BSD2 = "BSD 2-Clause License\n\n" + _BSD_HEAD + _BSD_TAIL
BSD3 = (
    "BSD 3-Clause License\n\n"
    + _BSD_HEAD
    + """
3. Neither the name of the copyright holder nor the names of its
   contributors may be used to endorse or promote products derived from
   this software without specific prior written permission.
"""
    + _BSD_TAIL
)

ISC = """ISC License

Copyright (c) 2024, Example Corp

Permission to use, copy, modify, and/or distribute this software for any
purpose with or without fee is hereby granted, provided that the above
copyright notice and this permission notice appear in all copies.

THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES.
"""

ZERO_BSD = """Copyright (C) 2024 by Example Corp

Permission to use, copy, modify, and/or distribute this software for any
purpose with or without fee is hereby granted.

THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES.
"""

PSF = """PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2
--------------------------------------------

1. This LICENSE AGREEMENT is between the Python Software Foundation
("PSF"), and the Individual or Organization ("Licensee") accessing and
otherwise using this software ("Python") in source or binary form and
its associated documentation.
"""

PYTHON_STACK = (
    PSF
    + """
BEOPEN.COM LICENSE AGREEMENT FOR PYTHON 2.0
-------------------------------------------

BEOPEN PYTHON OPEN SOURCE LICENSE AGREEMENT VERSION 1

CNRI LICENSE AGREEMENT FOR PYTHON 1.6.1
"""
)

GPL3 = """                    GNU GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

 Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>
 Everyone is permitted to copy and distribute verbatim copies
 of this license document, but changing it is not allowed.

                            Preamble

  The GNU General Public License is a free, copyleft license for
software and other kinds of works.

                     END OF TERMS AND CONDITIONS

            How to Apply These Terms to Your New Programs

    This program is free software: you can redistribute it and/or modify
    it under the terms of the GNU General Public License as published by
    the Free Software Foundation, either version 3 of the License, or
    (at your option) any later version.
"""

GPL2 = """                    GNU GENERAL PUBLIC LICENSE
                       Version 2, June 1991

 Copyright (C) 1989, 1991 Free Software Foundation, Inc.,
 51 Franklin Street, Fifth Floor, Boston, MA 02110-1301 USA
 Everyone is permitted to copy and distribute verbatim copies
 of this license document, but changing it is not allowed.
"""

LGPL21 = """                  GNU LESSER GENERAL PUBLIC LICENSE
                       Version 2.1, February 1999

 Copyright (C) 1991, 1999 Free Software Foundation, Inc.

[This is the first released version of the Lesser GPL.  It also counts
 as the successor of the GNU Library Public License, version 2, hence
 the version number 2.1.]
"""

LGPL3 = """                   GNU LESSER GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

 Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>

  This version of the GNU Lesser General Public License incorporates
the terms and conditions of version 3 of the GNU General Public
License, supplemented by the additional permissions listed below.
"""

AGPL3 = """                    GNU AFFERO GENERAL PUBLIC LICENSE
                       Version 3, 19 November 2007

 Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>
"""

MPL2 = """Mozilla Public License Version 2.0
==================================

1. Definitions
--------------

1.13. "Secondary License"
    means either the GNU General Public License, Version 2.0, the GNU
    Lesser General Public License, Version 2.1, the GNU Affero General
    Public License, Version 3.0, or any later versions of those
    licenses.
"""

UNLICENSE = """This is free and unencumbered software released into the public domain.

Anyone is free to copy, modify, publish, use, compile, sell, or
distribute this software, either in source code form or as a compiled
binary, for any purpose, commercial or non-commercial, and by any
means.
"""

ZLIB = """This software is provided 'as-is', without any express or implied
warranty. In no event will the authors be held liable for any damages
arising from the use of this software.

1. The origin of this software must not be misrepresented.
2. Altered source versions must be plainly marked as such, and must not be
   misrepresented as being the original software.
3. This notice may not be removed or altered from any source distribution.
"""

GPL3_NOTICE = """Copyright (C) 2024 Example Corp

This program is free software: you can redistribute it and/or modify
it under the terms of the GNU General Public License as published by
the Free Software Foundation, either version 3 of the License, or
(at your option) any later version.
"""


# -- patches made by git itself --------------------------------------------------------------------


def diff_of(repo: Path, files: dict[str, str]) -> str:
    """The patch (as `git diff` writes it) that turns HEAD into HEAD plus `files`; the repo is left at HEAD."""
    return staged_diff(repo, files)


def applies(repo: Path, patch: str) -> bool:
    """Whether `git apply --check` accepts the patch on the repo's checked-out HEAD."""
    result = subprocess.run(
        ["git", "-C", str(repo), "apply", "--check", "-"],
        input=patch,
        capture_output=True,
        text=True,
        check=False,
    )
    return result.returncode == 0
