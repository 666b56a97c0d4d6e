"""Pasted tracebacks and logs as a task, and the project's name: what the relevance floor counts as evidence.

Real stores (the tinycalc toy project of tests/fixtures/stores, its transformer vectors computed by ``ee
index rebuild``), the real shipped models, the real CLI; the text rules on their own too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ee.eval.relevance import read_pairs
from ee.query.relevance import parts, readable
from tests.test_transformer import packed, search, tinycalc  # noqa: F401  (the module's store fixture)

# As Python prints it for a package installed under the project's own folder (the QA finding's shape).
TRACEBACK = """Traceback (most recent call last):
  File "/opt/tinycalc/lib/python3.11/site-packages/tinycalc/cli.py", line 54, in main
    print(evaluate(expr))
  File "/opt/tinycalc/lib/python3.11/site-packages/tinycalc/ops.py", line 42, in div
    return a / b
ZeroDivisionError: division by zero"""


def test_a_path_is_read_as_its_file_and_a_frame_as_its_file_and_function() -> None:
    text = readable(TRACEBACK)
    assert "cli main" in text
    assert "ops div" in text
    for folder_word in ("opt", "lib", "python3.11", "site-packages", "line 54", "Traceback"):
        assert folder_word not in text
    assert "ZeroDivisionError: division by zero" in text  # the error line is kept as written
    # a path under an installed package keeps the package: which library raised is evidence
    assert readable("/usr/lib/python3.11/site-packages/click/core.py:1078") == "click core:"
    assert readable("FAILED tests/test_trig.py::test_sin - assert 0.5 == 1") == (
        "FAILED test_trig test_sin - assert 0.5 == 1"
    )
    assert readable("EE_MODEL=/opt/models/potion-32m ee search") == "EE_MODEL=potion-32m ee search"
    # words with a slash that name no file stay words
    assert readable("use and/or, CI/CD, dist/* or .ee/lock") == "use and/or, CI/CD, dist/* or .ee/lock"


def test_a_tracebacks_frames_are_not_parts_of_the_task_its_error_line_is() -> None:
    task = "the calculator crashes when I divide by zero, fix it:\n" + TRACEBACK
    # the task's own words, and the error line as one part (its class with its message): no frame, no
    # source line, no header ("fix it" has one informative word: not a part of its own)
    assert parts(task) == [
        "the calculator crashes when I divide by zero",
        "ZeroDivisionError: division by zero",
    ]
    # pytest's separators and source lines are output, its E lines are the error
    pytest_out = (
        "____ test_sin ____\n>       assert sin(0) == 1\nE       assert 0.0 == 1\nit fails in CI every time"
    )
    assert parts(pytest_out) == ["E       assert 0.0 == 1", "it fails in CI every time"]


def test_a_pasted_traceback_packs_its_memory_and_few_others(tinycalc: Path) -> None:  # noqa: F811
    data = search(tinycalc, TRACEBACK)
    assert data["query"]["semantic_arm"] == "transformer"
    ids = [h["id"] for h in data["hits"]]
    assert ids[0] == "division-by-zero"
    assert len(ids) <= 3, ids  # (on main such a traceback matched 16 of the 38 memories through its paths)
    items = packed(tinycalc, TRACEBACK)
    assert "division-by-zero" in items
    assert len(items) <= 3, items


def test_explain_shows_the_path_words_that_did_not_count(tinycalc: Path) -> None:  # noqa: F811
    data = search(tinycalc, TRACEBACK, "--explain")
    relevance = data["hits"][0]["explanation"]["relevance"]
    assert "ops div" in relevance["read_as"]  # what the evidence read: each path as its file
    assert "site-packages" not in relevance["read_as"]
    assert not {"lib", "site", "packag", "py", "python3.11", "54", "42"} & set(relevance["query_terms"])
    assert {"div", "zerodivisionerror"} <= set(relevance["matched_terms"])


def test_the_projects_name_alone_is_not_evidence(tinycalc: Path) -> None:  # noqa: F811
    text = "what does tinycalc log when the disk is full"
    data = search(tinycalc, text, "--min-relevance", "0", "--limit", "50", "--explain")
    by_name = [h for h in data["hits"] if h["explanation"]["relevance"]["matched_terms"] == ["tinycalc"]]
    assert len(by_name) >= 5  # tinycalc names itself in 20 of its 38 memories
    for hit in by_name:
        relevance = hit["explanation"]["relevance"]
        assert relevance["store_wide_only"] is True, hit["id"]
        assert relevance["coverage"] == 0.0
        assert hit["relevance"] < 0.8, hit["id"]
    kept = search(tinycalc, text)["hits"]
    assert {h["id"] for h in kept}.isdisjoint({h["id"] for h in by_name})
    assert "log-domain" in [h["id"] for h in kept]  # (it shares "log" too: its evidence stands)


def test_the_dev_sets_hold_pasted_tasks_as_one_question_each(tmp_path: Path) -> None:
    path = tmp_path / "p.tsv"
    path.write_text('# comment\nTraceback:\\n  File "x.py", line 1\\nValueError: no\tlog-domain\n')
    assert read_pairs(path) == [('Traceback:\n  File "x.py", line 1\nValueError: no', "log-domain")]


@pytest.mark.parametrize(
    "text",
    [
        "how do I add a binomial coefficient function",
        "I want to add a sqrt function, what about negative inputs?",
    ],
)
def test_prose_is_read_as_written(text: str) -> None:
    assert readable(text) == text
