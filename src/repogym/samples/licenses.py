"""Licence texts for sample repositories, by SPDX id.

MIT and BSD-3-Clause are short templates filled with the year and holder;
Apache-2.0 and GPL-3.0 are the full official texts shipped beside this module,
so licence detectors see exactly what real repositories carry.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repogym.errors import ConfigError

_TEXTS = Path(__file__).with_name("licenses")

MIT = """MIT License

Copyright (c) {year} {holder}

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

BSD_3_CLAUSE = """BSD 3-Clause License

Copyright (c) {year}, {holder}

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.

3. Neither the name of the copyright holder nor the names of its
   contributors may be used to endorse or promote products derived from
   this software without specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE
FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY,
OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""


@dataclass(frozen=True)
class SampleLicense:
    """How one licence appears in a repository."""

    spdx: str
    classifier: str
    """The trove classifier in pyproject.toml."""
    template: str = ""
    """Inline text with {year} and {holder}; empty means the file `filename` beside this module."""
    filename: str = ""

    def text(self, year: int, holder: str) -> str:
        if self.template:
            return self.template.format(year=year, holder=holder)
        return (_TEXTS / self.filename).read_text(encoding="utf-8")


LICENSES: dict[str, SampleLicense] = {
    info.spdx: info
    for info in (
        SampleLicense("MIT", "License :: OSI Approved :: MIT License", template=MIT),
        SampleLicense("BSD-3-Clause", "License :: OSI Approved :: BSD License", template=BSD_3_CLAUSE),
        SampleLicense(
            "Apache-2.0", "License :: OSI Approved :: Apache Software License", filename="Apache-2.0.txt"
        ),
        SampleLicense(
            "GPL-3.0-only",
            "License :: OSI Approved :: GNU General Public License v3 (GPLv3)",
            filename="GPL-3.0.txt",
        ),
        SampleLicense(
            "GPL-3.0-or-later",
            "License :: OSI Approved :: GNU General Public License v3 or later (GPLv3+)",
            filename="GPL-3.0.txt",
        ),
    )
}


def license_info(spdx: str, field: str = "license") -> SampleLicense:
    """The licence with SPDX id `spdx`; an unknown id is a ConfigError listing the known ones.

    >>> license_info("MIT").classifier
    'License :: OSI Approved :: MIT License'
    """
    try:
        return LICENSES[spdx]
    except KeyError:
        known = ", ".join(LICENSES)
        raise ConfigError(f"{field}: unknown licence {spdx!r}; sample repos can carry: {known}") from None
