"""Sample library "textutils": identifier case conversion, wrapping, slugs and word statistics."""

from __future__ import annotations

from repogym.samples.spec import BugSpec, Change, Edit, LibrarySpec

CASE = '''"""Convert identifiers between snake_case, kebab-case, camelCase and Title Case."""

from __future__ import annotations

import re
from typing import FrozenSet, List

_WORD_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\\d+")
SMALL_WORDS: FrozenSet[str] = frozenset({"a", "an", "and", "at", "in", "of", "on", "the", "to"})


def split_words(text: str) -> List[str]:
    """Words of an identifier or phrase: "parseHTTPResponse2" -> ["parse", "HTTP", "Response", "2"]."""
    return _WORD_PARTS.findall(text)


def snake_case(text: str) -> str:
    return "_".join(word.lower() for word in split_words(text))


def kebab_case(text: str) -> str:
    return "-".join(word.lower() for word in split_words(text))


def camel_case(text: str) -> str:
    words = split_words(text)
    if not words:
        return ""
    return words[0].lower() + "".join(word.capitalize() for word in words[1:])


def title_case(text: str) -> str:
    """Capitalise each word except small words ("of", "the", ...) that are not first."""
    result = []
    for index, word in enumerate(text.split()):
        lower = word.lower()
        if index > 0 and lower in SMALL_WORDS:
            result.append(lower)
        else:
            result.append(lower[:1].upper() + lower[1:])
    return " ".join(result)
'''

WRAP = '''"""Shorten and wrap text for terminals and log lines."""

from __future__ import annotations

from typing import List


class WidthError(ValueError):
    """A width too small to work with; `minimum` is the least that works."""

    def __init__(self, width: int, minimum: int, why: str) -> None:
        super().__init__(f"width {width} is smaller than {minimum}: {why}")
        self.width = width
        self.minimum = minimum


def truncate(text: str, width: int, placeholder: str = "...") -> str:
    """`text` cut to at most `width` characters, ending in `placeholder` when cut."""
    if width < len(placeholder):
        raise WidthError(width, len(placeholder), f"the placeholder {placeholder!r} must fit")
    if len(text) <= width:
        return text
    return text[: width - len(placeholder)].rstrip() + placeholder


def wrap(text: str, width: int) -> List[str]:
    """Greedy word wrap into lines of at most `width` characters (a longer word gets a line of its own)."""
    if width < 1:
        raise WidthError(width, 1, "a line holds at least one character")
    lines: List[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= width:
            current = candidate
            continue
        if current:
            lines.append(current)
        current = word
    if current:
        lines.append(current)
    return lines


def indent(text: str, prefix: str = "    ") -> str:
    """Prefix every non-blank line of `text`."""
    return "\\n".join(prefix + line if line.strip() else line for line in text.split("\\n"))
'''

SLUG = '''"""URL slugs: "Crème Brûlée Recipes" -> "creme-brulee-recipes"."""

from __future__ import annotations

import re
import unicodedata

_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def slugify(text: str, separator: str = "-", max_length: int = 0) -> str:
    """Lower-case ASCII words joined by `separator`, cut at a word boundary when max_length > 0."""
    slug = _NOT_ALNUM.sub(separator, strip_accents(text).lower()).strip(separator)
    if max_length and len(slug) > max_length:
        cut = slug[: max_length + 1]
        slug = cut[: cut.rfind(separator)] if separator in cut else slug[:max_length]
    return slug
'''

COUNTING = '''"""Word statistics for text."""

from __future__ import annotations

import re
from collections import Counter
from typing import List, Tuple

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")


def words(text: str) -> List[str]:
    """Words of `text`, keeping contractions such as "don't" whole."""
    return _WORD.findall(text)


def word_count(text: str) -> int:
    return len(words(text))


def most_common(text: str, n: int = 3, ignore_case: bool = True) -> List[Tuple[str, int]]:
    """The n most frequent words with their counts; ties are broken alphabetically."""
    counts = Counter(words(text.lower() if ignore_case else text))
    return sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))[:n]


def reading_time(text: str, words_per_minute: int = 200) -> int:
    """Minutes needed to read `text`, rounded up; 0 for empty text."""
    count = word_count(text)
    return -(-count // words_per_minute)
'''

TEST_CASE = """from __pkg__ import case


def test_snake_and_kebab_case():
    assert case.snake_case("helloWorld") == "hello_world"
    assert case.snake_case("HelloWorld") == "hello_world"
    assert case.kebab_case("hello_world") == "hello-world"


def test_camel_case():
    assert case.camel_case("user_id") == "userId"
    assert case.camel_case("some-long-name") == "someLongName"
    assert case.camel_case("") == ""


def test_title_case_keeps_small_words_lower():
    assert case.title_case("war and peace") == "War and Peace"
    assert case.title_case("lord of the flies") == "Lord of the Flies"
"""

TEST_WRAP = """import pytest

from __pkg__ import wrap


def test_truncate():
    assert wrap.truncate("hello", 10) == "hello"
    assert wrap.truncate("hello world", 8) == "hello..."


def test_truncate_width_smaller_than_placeholder():
    with pytest.raises(ValueError):
        wrap.truncate("hello", 2)


def test_width_error_names_the_least_width():
    with pytest.raises(wrap.WidthError) as error:
        wrap.wrap("hello", 0)
    assert (error.value.width, error.value.minimum) == (0, 1)


def test_wrap():
    assert wrap.wrap("the quick brown fox", 10) == ["the quick", "brown fox"]
    assert wrap.wrap("supercalifragilistic is long", 6) == ["supercalifragilistic", "is", "long"]


def test_indent_leaves_blank_lines_alone():
    assert wrap.indent("a\\n\\nb", "> ") == "> a\\n\\n> b"
"""

TEST_SLUG = """from __pkg__ import slug


def test_slugify():
    assert slug.slugify("Hello World") == "hello-world"
    assert slug.slugify("Crème Brûlée") == "creme-brulee"


def test_slugify_max_length_cuts_at_word():
    assert slug.slugify("hello big world", max_length=9) == "hello-big"
"""

TEST_COUNTING = """from __pkg__ import counting


def test_word_count():
    assert counting.word_count("one two  three") == 3
    assert counting.word_count("") == 0


def test_most_common():
    text = "the cat and the hat and the bat"
    assert counting.most_common(text, n=2) == [("the", 3), ("and", 2)]


def test_reading_time():
    assert counting.reading_time("word " * 400) == 2
    assert counting.reading_time("") == 0
"""

USAGE = """from __pkg__ import case, slug, wrap

case.snake_case("parseHTTPResponse")   # "parse_http_response"
slug.slugify("Crème Brûlée, Part 2!")   # "creme-brulee-part-2"
wrap.truncate("a long log line", 10)    # "a long..."
"""

SRC = "src/__pkg__/"

FEATURES = (
    Change(
        "Add constant_case()",
        (
            Edit(
                SRC + "case.py",
                "",
                '''def constant_case(text: str) -> str:
    """"maxRetryCount" -> "MAX_RETRY_COUNT"."""
    return "_".join(word.upper() for word in split_words(text))''',
            ),
            Edit(
                "tests/test_case.py",
                "",
                '''def test_constant_case():
    assert case.constant_case("maxRetryCount") == "MAX_RETRY_COUNT"
    assert case.constant_case("retry-delay") == "RETRY_DELAY"''',
            ),
        ),
        changelog="Added `case.constant_case()`.",
    ),
    Change(
        "Add sentence_count()",
        (
            Edit(
                SRC + "counting.py",
                "",
                '''def sentence_count(text: str) -> int:
    """Sentences ending in ".", "!" or "?" (a final sentence without one counts too)."""
    parts = re.split(r"[.!?]+", text)
    return sum(1 for part in parts if part.strip())''',
            ),
            Edit(
                "tests/test_counting.py",
                "",
                """def test_sentence_count():
    assert counting.sentence_count("Hi. How are you? Fine!") == 3
    assert counting.sentence_count("No full stop") == 1""",
            ),
        ),
        changelog="Added `counting.sentence_count()`.",
    ),
)

REFACTORS = (
    Change(
        "Share the joining code of snake_case() and kebab_case()",
        (
            Edit(
                SRC + "case.py",
                """def snake_case(text: str) -> str:
    return "_".join(word.lower() for word in split_words(text))


def kebab_case(text: str) -> str:
    return "-".join(word.lower() for word in split_words(text))""",
                """def _join_lower(text: str, separator: str) -> str:
    return separator.join(word.lower() for word in split_words(text))


def snake_case(text: str) -> str:
    return _join_lower(text, "_")


def kebab_case(text: str) -> str:
    return _join_lower(text, "-")""",
            ),
        ),
    ),
    Change(
        "Name the kept length in truncate()",
        (
            Edit(
                SRC + "wrap.py",
                "    return text[: width - len(placeholder)].rstrip() + placeholder",
                "    keep = width - len(placeholder)\n    return text[:keep].rstrip() + placeholder",
            ),
        ),
    ),
)

TESTS_ONLY = (
    Change(
        "Add tests for strip_accents() and kebab_case()",
        (
            Edit(
                "tests/test_slug.py",
                "",
                '''def test_strip_accents_keeps_base_letters():
    assert slug.strip_accents("crème brûlée") == "creme brulee"''',
            ),
            Edit(
                "tests/test_case.py",
                "",
                '''def test_kebab_case_from_camel_case():
    assert case.kebab_case("someValue") == "some-value"''',
            ),
        ),
    ),
)

DOCS = (
    Change(
        "docs: explain how words are split",
        (
            Edit(
                "docs/words.md",
                "",
                """# How identifiers are split into words

`split_words()` starts a new word at each change from lower to upper case, at
digits, and at any punctuation. A run of capitals is an acronym, so
`parseHTTPResponse` is `parse`, `HTTP`, `Response`. All case functions use it.""",
            ),
        ),
    ),
)

BUGS = (
    BugSpec(
        slug="acronyms",
        path=SRC + "case.py",
        good='_WORD_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\\d+")',
        bad='_WORD_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+|\\d+")',
        intro_message="Simplify the word-splitting regex",
        fix_title="Split acronyms from the following word again",
        fix_body='"parseHTTPResponse" is parse / HTTP / Response, not parse / HTTPR / esponse.',
        test_path="tests/test_case.py",
        regression_test="""def test_acronyms_are_one_word():
    assert case.snake_case("parseHTTPResponse") == "parse_http_response"
    assert case.split_words("XMLHttpRequest") == ["XML", "Http", "Request"]""",
        issue_title="snake_case mangles names with acronyms",
        issue_body="""```
>>> case.snake_case("parseHTTPResponse")
'parse_httpr_esponse'
```

I expected `parse_http_response`, as documented in docs/words.md.""",
        hints=("Names without a run of capitals are fine.", "split_words() is where it goes wrong."),
    ),
    BugSpec(
        slug="title-first-word",
        path=SRC + "case.py",
        good="        if index > 0 and lower in SMALL_WORDS:",
        bad="        if lower in SMALL_WORDS:",
        intro_message="Simplify the small-word check in title_case()",
        fix_title="Capitalise a small word at the start of a title",
        fix_body='The first word of a title is always capitalised, even "the" or "a".',
        test_path="tests/test_case.py",
        regression_test='''def test_title_case_capitalises_first_small_word():
    assert case.title_case("the lord of the rings") == "The Lord of the Rings"''',
        issue_title='title_case("the hobbit") returns "the Hobbit"',
        issue_body="""Titles that start with a small word keep it in lower case:
`title_case("the lord of the rings")` gives `"the Lord of the Rings"`.""",
        hints=("Small words in the middle are right; only the first word is affected.",),
    ),
    BugSpec(
        slug="truncate-exact-width",
        path=SRC + "wrap.py",
        good="    if len(text) <= width:",
        bad="    if len(text) < width:",
        intro_message="Tighten the early return in truncate()",
        fix_title="Do not truncate text that fits exactly",
        fix_body="Text whose length equals the width fits and must come back unchanged.",
        test_path="tests/test_wrap.py",
        regression_test='''def test_truncate_text_of_exact_width():
    assert wrap.truncate("hello", 5) == "hello"''',
        issue_title="truncate() shortens text that already fits",
        issue_body="""`truncate("hello", 5)` returns `"he..."`, although "hello" is exactly 5 characters.
Column headers in our tables lose their last letters because of it.""",
        hints=("Off by one: text one character shorter than the width is left alone.",),
    ),
    BugSpec(
        slug="wrap-exact-width",
        path=SRC + "wrap.py",
        good="        if len(candidate) <= width:",
        bad="        if len(candidate) < width:",
        intro_message="Clean up the line-length test in wrap()",
        fix_title="Allow wrapped lines of exactly the given width",
        fix_body="wrap() broke lines one character early.",
        test_path="tests/test_wrap.py",
        regression_test="""def test_wrap_fills_lines_to_the_width():
    assert wrap.wrap("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]""",
        issue_title="wrap() breaks lines one character too early",
        issue_body="""With width 7, `wrap("aaa bbb ccc", 7)` gives three lines, although "aaa bbb" is exactly
7 characters and fits.""",
        hints=("Looks like an off-by-one in the line-length check: shorter lines are fine.",),
    ),
    BugSpec(
        slug="slug-edge-separators",
        path=SRC + "slug.py",
        good="    slug = _NOT_ALNUM.sub(separator, strip_accents(text).lower()).strip(separator)",
        bad="    slug = _NOT_ALNUM.sub(separator, strip_accents(text).lower())",
        intro_message="Avoid an extra pass over the slug",
        fix_title="Strip separators from both ends of a slug",
        fix_body="Leading and trailing punctuation must not leave a separator at the ends of a slug.",
        test_path="tests/test_slug.py",
        regression_test='''def test_slug_has_no_separator_at_the_ends():
    assert slug.slugify("Hello, World!") == "hello-world"
    assert slug.slugify("  --Draft--  ") == "draft"''',
        issue_title="slugify() leaves a dash at the end of titles ending in punctuation",
        issue_body="""`slugify("What's new?")` gives `"what-s-new-"`: the URL ends in a dash. Titles that
start with a quote get a leading dash too.""",
        hints=("Only happens with punctuation or spaces at the very start or end.",),
    ),
    BugSpec(
        slug="most-common-ties",
        path=SRC + "counting.py",
        good="    return sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))[:n]",
        bad="    return counts.most_common(n)",
        intro_message="Use Counter.most_common() in most_common()",
        fix_title="Break ties in most_common() alphabetically again",
        fix_body="Counter.most_common() orders ties by first appearance, not alphabetically as documented.",
        test_path="tests/test_counting.py",
        regression_test="""def test_most_common_breaks_ties_alphabetically():
    assert counting.most_common("b a b a c", n=2) == [("a", 2), ("b", 2)]""",
        issue_title="most_common() order changes with the order of the text",
        issue_body="""Words with the same count come back in the order they first appear, so our word clouds
change between runs on shuffled input. The docstring promises alphabetical order for ties.""",
        hints=("Reproduced with `most_common('b a b a c', n=2)`.",),
    ),
)

SPEC = LibrarySpec(
    kind="textutils",
    names=("textkit", "wordsmith", "stringy", "proseutil"),
    summary="Small text utilities: identifier case conversion, wrapping, slugs and word counts.",
    modules={"case.py": CASE, "wrap.py": WRAP, "slug.py": SLUG, "counting.py": COUNTING},
    tests={
        "test_case.py": TEST_CASE,
        "test_wrap.py": TEST_WRAP,
        "test_slug.py": TEST_SLUG,
        "test_counting.py": TEST_COUNTING,
    },
    usage=USAGE,
    features=FEATURES,
    refactors=REFACTORS,
    tests_only=TESTS_ONLY,
    docs=DOCS,
    bugs=BUGS,
)
