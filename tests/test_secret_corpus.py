"""Recall of the secret guard on the corpus of realistic secrets (tests/fixtures/secrets/secrets.txt).

The bar: at least 98 % of the cases refused. The figure is in the README (security); print it with
``python -m pytest -q -s tests/test_secret_corpus.py``.
"""

from __future__ import annotations

import pytest

from ee.errors import SecretFound
from ee.policy.secrets import find_secrets, guard
from tests.secret_corpus import cases


def refused(text: str) -> bool:
    try:
        guard({"body": text})
    except SecretFound:
        return True
    return False


def test_the_corpus_is_large_and_varied() -> None:
    found = cases()
    assert len(found) >= 100
    assert len({text for _n, _c, text in found}) == len(found)
    assert len({cls for _n, cls, _t in found}) >= 30


def test_at_least_98_percent_of_the_corpus_is_refused() -> None:
    found = cases()
    missed = [(number, text) for number, _cls, text in found if not refused(text)]
    recall = 1 - len(missed) / len(found)
    print(f"\nsecret corpus: {len(found) - len(missed)} of {len(found)} refused ({recall:.1%})")
    assert recall >= 0.98, missed


@pytest.mark.parametrize(("number", "cls", "text"), cases(), ids=[f"line{n}" for n, _c, _t in cases()])
def test_each_case_is_refused_with_its_class(number: int, cls: str, text: str) -> None:
    classes = {f.cls for f in find_secrets(text)}
    assert cls in classes, (number, classes)
