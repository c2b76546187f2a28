"""Who commits to a sample repository: fictional developers, bots and the GitHub web committer.

All e-mail addresses are on example.com or GitHub's noreply domain; the
privacy stage still treats them as personal data, which is the point.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Person:
    name: str
    email: str
    login: str
    tz: str
    """UTC offset as git writes it, e.g. "+0100"."""

    def signature(self, when: int) -> str:
        """`Name <email> epoch tz`, the form git fast-import reads with --date-format=raw.

        >>> GITHUB.signature(1600000000)
        'GitHub <noreply@github.com> 1600000000 +0000'
        """
        return f"{self.name} <{self.email}> {when} {self.tz}"


DEVELOPERS: tuple[Person, ...] = (
    Person("Maria Gonzalez", "maria.gonzalez@example.com", "mgonzalez", "+0100"),
    Person("Kenji Watanabe", "kenji@example.com", "kwatanabe", "+0900"),
    Person("Amara Okafor", "amara.okafor@example.com", "aokafor", "+0100"),
    Person("Lukas Becker", "lukas.becker@example.com", "lbecker", "+0200"),
    Person("Priya Raman", "priya.r@example.com", "praman", "+0530"),
    Person("Jonas Lindqvist", "jonas@example.com", "jlindqvist", "+0100"),
    Person("Sofia Rossi", "sofia.rossi@example.com", "srossi", "+0100"),
    Person("Daniel Kim", "dkim@example.com", "danielk", "-0800"),
    Person("Fatima Haddad", "fatima.haddad@example.com", "fhaddad", "+0300"),
    Person("Tom Novak", "84512337+tnovak@users.noreply.github.com", "tnovak", "-0500"),
)

#: GitHub users who only open issues.
REPORTERS: tuple[str, ...] = ("jdoe42", "kiwi-dev", "tmurphy", "samira-k", "pbrennan", "ops-oliver")

#: Organisations that own the repositories (for html_url values in the PR export).
OWNERS: tuple[str, ...] = ("acme-labs", "northwind-oss", "tailspin-dev", "contoso-tools")

DEPENDABOT = Person(
    "dependabot[bot]", "49699333+dependabot[bot]@users.noreply.github.com", "dependabot[bot]", "+0000"
)
ACTIONS_BOT = Person(
    "github-actions[bot]",
    "41898282+github-actions[bot]@users.noreply.github.com",
    "github-actions[bot]",
    "+0000",
)
#: The committer of merges and squashes made on github.com.
GITHUB = Person("GitHub", "noreply@github.com", "web-flow", "+0000")
