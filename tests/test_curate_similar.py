"""The pair rules of ee.curate.similar, on cases taken from real text (Vim's help, where looser rules once
proposed to merge distinct commands) and from a memory store's usual repetitions."""

from __future__ import annotations

import pytest

from ee.curate.similar import Features, classify, normalise


def relation(old: str, new: str) -> str | None:
    found = classify(Features.of(old), Features.of(new))
    return None if found is None else found.type


def test_normalise_ignores_spacing_and_a_final_full_stop_only() -> None:
    assert normalise("Use uv,  not pip,\nto install packages.") == "Use uv, not pip, to install packages"
    assert normalise("iw selects a word") != normalise("iW selects a word")  # case is meaning
    assert normalise("g* finds the word") != normalise("g# finds the word")  # and so is punctuation


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("Use uv, not pip, to install packages.", "Use uv,  not pip, to install packages", "duplicate"),
        (
            "Run the unit tests with pytest before every push to the main branch of the service repository",
            "Run the unit tests with pytest before every single push to the main branch of the service "
            "repository",
            "merge",
        ),
        (
            "Format Python code with black in this repository.",
            "Never format Python code with black in this repository.",
            "contradiction",
        ),
        (
            "The CI timeout is 30 minutes for the lint job.",
            "The CI timeout is 45 minutes for the lint job.",
            "update",
        ),
        ("We use Fabric to deploy the web app.", "We switched to Ansible to deploy the web app.", "update"),
        (
            "We deploy the web app with Fabric scripts.",
            "We switched to deploying the web app with Ansible instead of Fabric scripts.",
            None,
        ),  # too many words changed to say which statement it updates
        # Vim's help: alike in words, about different commands — never a merge.
        (
            'iw "inner word", select [count] words (see |word|).',
            'iW "inner WORD", select [count] WORDs (see |WORD|).',
            None,
        ),
        (
            "e Forward to the end of word [count] |inclusive|. Does not stop in an empty line.",
            "E Forward to the end of WORD [count] |inclusive|. Does not stop in an empty line.",
            None,
        ),
        (
            "max({expr}) Return the maximum value of all items in {expr}.",
            "min({expr}) Return the minimum value of all items in {expr}.",
            None,
        ),
        (
            "VERSION 5.5 Version 5.5 is a bug-fix version of 5.4.",
            "VERSION 5.6 Version 5.6 is a bug-fix version of 5.5.",
            None,
        ),
        (
            "TextChangedI After a change was made to the text in Insert mode. Not triggered when the popup "
            "menu is visible.",
            "TextChangedP After a change was made to the text in Insert mode, only when "
            "the popup menu is visible.",
            None,
        ),
    ],
)
def test_pairs_are_classified_strictly(old: str, new: str, expected: str | None) -> None:
    assert relation(old, new) == expected
