"""One way to cut a text at a whole word (``ee.text.cut_at_word``), and each of its callers' bytes pinned: a
pack item's body, a commit subject, a task text too long to search."""

from __future__ import annotations

from ee.git.repo import format_message
from ee.pack.items import fit_item
from ee.query.document import shortened
from ee.text import cut_at_word


def test_a_cut_inside_a_word_drops_that_part() -> None:
    assert cut_at_word("alpha beta gamma", 8, " […]") == "alpha […]"
    assert cut_at_word("alpha beta\ngamma", 13) == "alpha beta"  # (a line break separates words too)


def test_a_cut_between_words_keeps_every_whole_word() -> None:
    assert cut_at_word("alpha beta gamma", 10, "...") == "alpha beta..."  # (just before a space)
    assert cut_at_word("alpha beta gamma", 11, "...") == "alpha beta..."  # (just after one)


def test_a_long_word_is_cut_where_it_stands_when_too_little_would_be_left() -> None:
    assert cut_at_word("ab cdefghijklmnop", 10, least=5) == "ab cdefghi"
    assert cut_at_word("ab cdefghijklmnop", 10, least=2) == "ab"
    assert cut_at_word("abcdefghijklmnop", 5) == "abcde"  # (no space at all)


def test_the_end_is_stripped_before_the_mark() -> None:
    assert cut_at_word("deploy: now, then - later", 13, "...", strip=" :,;-") == "deploy: now..."
    assert cut_at_word("a b", 10, " […]") == "a b […]"  # (a text within the length is marked all the same)


def test_a_tab_or_a_no_break_space_is_no_place_to_cut() -> None:
    assert cut_at_word("one two\tthree", 10) == "one"
    assert cut_at_word("one 10\u00a0km", 8) == "one"


def test_a_pack_item_body_is_cut_as_before() -> None:
    body = (
        "Run the database migrations before deploying the new schema to the production servers, then "
        "check the\ndashboards for errors."
    )
    item = ("rule", body, "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB", "human_explicit", 0.85)
    assert fit_item(*item, 30) == ("Run the database migrations […]", True, 30)
    assert fit_item(*item, 25) == ("Run the […]", True, 25)
    assert fit_item(*item, 20) == (body, False, None)  # (not even a cut item fits)


def test_a_commit_subject_is_cut_as_before() -> None:
    subject = (
        "Remember: the release checklist needs a signed tag, a changelog entry and a green main branch first"
    )
    message = format_message(subject, {"Ee-Op": "remember"})
    assert (
        message.splitlines()[0] == "Remember: the release checklist needs a signed tag, a changelog entry..."
    )
    assert format_message("Remember: short", {})[:16] == "Remember: short\n"


def test_a_long_task_is_cut_as_before_and_keeps_a_whole_word_at_the_edge() -> None:
    task = (
        "First line of the task says what to do.\n"
        + "\n".join(f"log line {n} with noise" for n in range(20))
        + "\nthe question at the end?"
    )
    assert shortened(task, 60)[0] == "First line of the task says what to do.\nlog … at the end?"
    assert (
        shortened(task, 80)[0]
        == "First line of the task says what to do.\nlog line 0 with … question at the end?"
    )
    # the end's cut falls just before "the": the whole word is kept (it used to be dropped)
    kept = shortened(task, 100)[0]
    head = "First line of the task says what to do.\nlog line 0 with noise\nlog line 1"
    assert kept == head + " … the question at the end?"
