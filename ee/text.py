"""Text rules every layer shares: one way to cut a text at a whole word.

Below every other module of ee (it imports nothing of ee), so the commit path (``ee.git.repo``: a commit
subject), the query reader (``ee.query.document``: a pasted task too long to search) and the pack
(``ee.pack.items``: a memory's body within its token budget) cut text by the same rule, each with the
marker its reader needs.
"""

from __future__ import annotations

import re

# What separates words: a space or a line break (a tab is rare in prose, and a no-break space is there so
# that no line breaks at it).
SPACES = " \n"
_LAST_SPACE = re.compile(r"[ \n][^ \n]*\Z")  # the last space or line break, and the word part after it


def cut_at_word(text: str, length: int, mark: str = "", *, least: int = 0, strip: str | None = None) -> str:
    """The first ``length`` characters of ``text`` ended at a whole word, then ``mark`` (saying it was cut).

    When the cut falls inside a word, that word's part goes, back to the space before it, unless fewer
    than ``least`` characters would be left (a long word is then cut where it stands: better than nothing).
    The end is stripped of ``strip`` (default whitespace) before the mark. A text of ``length`` characters or
    fewer is kept whole, marked all the same: the caller asks for a cut text."""
    head = text[:length]
    if length < len(text) and text[length] not in SPACES:  # (the cut falls inside a word)
        space = _LAST_SPACE.search(head)
        if space is not None and space.start() >= least:
            head = head[: space.start()]
    return head.rstrip(strip) + mark
