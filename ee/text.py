"""Text rules every layer shares: one way to cut a text at a whole word.

Below every other module of ee (it imports nothing of ee), so the commit path (``ee.git.repo``: a commit
subject), the query reader (``ee.query.document``: a pasted task too long to search) and the pack
(``ee.pack.items``: a memory's body within its token budget) cut text by the same rule, each with the
marker its reader needs.
"""

from __future__ import annotations

# What separates words: a space or a line break (a tab is rare in prose, and a no-break space is there so
# that no line breaks at it).
SPACES = " \n"


def cut_at_word(text: str, length: int, mark: str = "", *, least: int = 0, strip: str | None = None) -> str:
    """The first ``length`` characters of ``text`` ended at a whole word, then ``mark`` (saying it was cut).

    When the cut falls inside a word, that word's part goes, back to the space before it, unless fewer
    than ``least`` characters would be left (a long word is then cut where it stands: better than nothing).
    The end is stripped of ``strip`` (default whitespace) before the mark. A text of ``length`` characters or
    fewer is kept whole, marked all the same: the caller asks for a cut text."""
    head = text[:length]
    if length < len(text) and text[length] not in SPACES:  # (the cut falls inside a word)
        # (searched from the end: a pack measures each cut body ~12 times, a regex from the start cost a
        # served context ~12 ms of its ~25 at 10k memories)
        space = max(head.rfind(separator) for separator in SPACES)
        if space != -1 and space >= least:
            head = head[:space]
    return head.rstrip(strip) + mark
