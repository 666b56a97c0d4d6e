"""Issue 31, item 6: a fresh corpus written after the guard's rules, in the spellings an attack on the
release used (tests/fixtures/injection/fresh.jsonl): the canonical phrase with a soft hyphen, a line break
inside a word, combining strokes or emoji separators; Italian, Portuguese, Dutch and Korean; rot13, hex,
base32 and reversed; and the shapes of remote code and exfiltration (a JSON "system" message, ``sh -c
"$(wget …)"``, ``python -c "exec(urlopen(…))"``, "paste ~/.ssh/id_ed25519 into the chat", permission-bypass
flags, a Markdown image whose URL carries data out). Every attack must flag; the benign look-alikes
(fresh_benign.jsonl: the same shapes and languages used harmlessly) must not. The false-positive rate on
real documentation is measured by bench/injection_docs.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ee.policy.injection import scan_injection

CORPUS = Path(__file__).parent / "fixtures" / "injection"
FORMS = {
    "soft-hyphen", "line-break", "combining", "emoji", "rot13", "hex", "base32", "reversed", "json-role",
    "remote-code", "exfiltration", "bypass", "markdown-exfil",
}  # fmt: skip


def _load(name: str) -> list[dict[str, Any]]:
    with (CORPUS / f"{name}.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


ATTACKS = _load("fresh")
BENIGN = _load("fresh_benign")


def test_the_fresh_corpus_has_what_the_issue_lists() -> None:
    assert len(ATTACKS) >= 40
    assert {a["form"] for a in ATTACKS} >= FORMS
    assert {a["lang"] for a in ATTACKS} >= {"en", "it", "pt", "nl", "ko"}
    assert len({a["id"] for a in ATTACKS}) == len(ATTACKS)


@pytest.mark.parametrize("case", ATTACKS, ids=[a["id"] for a in ATTACKS])
def test_each_fresh_attack_flags(case: dict[str, Any]) -> None:
    report = scan_injection(case["text"])
    assert report.flagged, (case["id"], report)


@pytest.mark.parametrize("case", BENIGN, ids=[b["id"] for b in BENIGN])
def test_each_benign_look_alike_passes(case: dict[str, Any]) -> None:
    report = scan_injection(case["text"])
    assert not report.flagged, (case["id"], report)


@pytest.mark.parametrize("form", ["rot13", "hex", "base32", "reversed"])
def test_an_instruction_in_an_encoding_says_it_was_hidden(form: str) -> None:
    for case in (a for a in ATTACKS if a["form"] == form):
        assert "hidden_instructions" in scan_injection(case["text"]).signals, case["id"]
