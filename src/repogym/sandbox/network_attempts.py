"""A test run's or a build's attempts to reach the network, read from its log: the one detector that validation
(a mined candidate whose tests dial out), grading (TESTS_NEED_NETWORK), environment builds (the line an
EnvBuildError adds) and build diagnosis (build_needs_network) share; in sandbox/, below all of them.

Guarantees: a line is found for the resolver's and the socket layer's own words when a test meets the jail's
closed network namespace (no name resolution, no route), as Python, urllib3 and requests print them, and
curl's and Node's resolver errors (a build step that downloads: `repogym.validate.diagnose`).

Not guaranteed: a test that swallows the error and fails for another reason prints none of them, and a test
that prints these words without dialling out is taken at its word; callers use it only on runs whose
required tests did not pass, where it names a cause and never turns a failure into a success.
"""

from __future__ import annotations

import re

_NETWORK = re.compile(
    r"(Temporary failure in name resolution|Name or service not known|nodename nor servname|"
    r"Could not resolve host|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|"  # curl's and Node's words, as a build prints them
    r"Network is unreachable|No route to host|getaddrinfo failed|socket\.gaierror|"
    r"Failed to establish a new connection|NameResolutionError|Max retries exceeded with url)"
)


def needs_network(log: str) -> str:
    """The line that shows a test tried to reach the network ('' when none does).

    >>> needs_network("E   socket.gaierror: [Errno -3] Temporary failure in name resolution")
    'E   socket.gaierror: [Errno -3] Temporary failure in name resolution'
    >>> needs_network("E   OSError: [Errno 101] Network is unreachable\\nmore")
    'E   OSError: [Errno 101] Network is unreachable'
    >>> needs_network("E   assert 1 == 2")
    ''
    """
    match = _NETWORK.search(log)
    if not match:
        return ""
    start = log.rfind("\n", 0, match.start()) + 1
    end = log.find("\n", match.end())
    return log[start : end if end >= 0 else len(log)].strip()[:300]
