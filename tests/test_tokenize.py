from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ee.index.tokenize as tokenize_module
from ee.index.tokenize import STOPWORDS, tokenize, tokenize_many


def found(query: str, doc: str) -> bool:
    """Every query token occurs in the document's tokens."""
    d = set(tokenize(doc))
    q = tokenize(query)
    return bool(q) and all(t in d for t in q)


@pytest.mark.parametrize(
    ("identifier", "whole", "parts"),
    [
        ("snake_case_name", "snake_case_name", ["snake", "case", "name"]),
        ("CamelCaseName", "camelcasename", ["camel", "case", "name"]),
        ("camelCaseName", "camelcasename", ["camel", "case", "name"]),
        ("kebab-case-name", "kebab-case-name", ["kebab", "case", "name"]),
        ("dotted.module.names", "dotted.module.names", ["dot", "modul", "name"]),
        ("src/ci/build.yml", "src/ci/build.yml", ["src", "ci", "build", "yml"]),
        ("--no-verify", "--no-verify", ["verifi"]),
        ("-rf", "-rf", ["rf"]),
        ("HTTPServerError", "httpservererror", ["http", "server", "error"]),
    ],
)
def test_identifier_whole_and_parts(identifier: str, whole: str, parts: list[str]) -> None:
    toks = tokenize(identifier)
    assert toks[0] == whole
    for p in parts:
        assert p in toks


@pytest.mark.parametrize(
    ("query", "doc"),
    [
        ("snake case", "call snake_case here"),
        ("snake_case", "call snake_case here"),
        ("camel case", "class CamelCase:"),
        ("camelCase", "the camelCase variable"),
        ("build yml", "edit src/ci/build.yml first"),
        ("build.yml", "edit src/ci/build.yml first"),
        ("src/ci/build.yml", "edit src/ci/build.yml first"),
        ("verify", "never git commit --no-verify"),
        ("--no-verify", "never git commit --no-verify"),
        ("rm -rf", "do not run rm -rf /"),
        ("ee.index.tokenize", "see ee.index.tokenize for details"),
        ("tokenize", "see ee.index.tokenize for details"),
    ],
)
def test_findable(query: str, doc: str) -> None:
    assert found(query, doc)


def test_intermediate_compounds() -> None:
    toks = tokenize("src/ci/build.yml x86_64")
    assert "build.yml" in toks
    assert "x86" in toks


def test_whole_is_exact_key() -> None:
    # The whole form discriminates: a doc that only has the parts does not carry the identifier.
    assert "snake_case" not in tokenize("a snake and a case")
    assert "snake_case" in tokenize("snake_case")


def test_flag_is_not_the_bare_word() -> None:
    assert "-rf" in tokenize("rm -rf")
    assert "-rf" not in tokenize("rf")


def test_lowercase_and_stemming() -> None:
    assert tokenize("Running RUNS run") == ["run", "run", "run"]
    assert tokenize("settings") == tokenize("setting")
    assert tokenize("Vim's") == ["vim"]


def test_stopwords_dropped_but_not_from_wholes() -> None:
    assert tokenize("the and of to") == []
    assert "the" in STOPWORDS
    assert tokenize("the_end") == ["the_end", "end"]
    # Directional words carry meaning in commands.
    assert tokenize("scroll up") == ["scroll", "up"]


def test_single_letters_dropped_but_flags_digits_and_cjk_kept() -> None:
    assert tokenize("x y z") == []
    assert tokenize("-v") == ["-v"]
    assert tokenize("python 3") == ["python", "3"]
    assert tokenize("\u65e5 \u672c") == ["\u65e5", "\u672c"]
    assert tokenize("i_CTRL-D") == ["i_ctrl-d", "i_ctrl", "ctrl"]


def test_numbers_kept() -> None:
    assert tokenize("version 9.0 released 2021") == ["version", "9.0", "9", "0", "releas", "2021"]
    assert tokenize("7") == ["7"]


def test_unicode() -> None:
    assert tokenize("Straße") == tokenize("STRASSE")
    assert tokenize("\uff21\uff22\uff23") == ["abc"]  # full-width ABC, NFKC
    assert tokenize("caf\u00e9\u2019s") == tokenize("caf\u00e9's")  # typographic apostrophe
    assert tokenize("日本語 テキスト") == ["日本語", "テキスト"]
    assert tokenize("naïve") == ["naïv"]


def test_empty_and_punctuation() -> None:
    assert tokenize("") == []
    assert tokenize("   \n\t") == []
    assert tokenize("... --- /// ::") == []
    assert tokenize_many([]) == []
    assert tokenize_many(["", "xy"]) == [[], ["xy"]]


def test_sentence_punctuation_is_not_part_of_words() -> None:
    assert tokenize("end of file.") == ["end", "file"]
    assert tokenize("(see ee.index)") == ["see", "ee.index", "ee", "index"]


def test_deterministic_and_consistent() -> None:
    text = "Fix the flaky CI: src/ci/build.yml uses --no-verify; see HTTPServer.handle_request"
    first = tokenize(text)
    assert tokenize(text) == first
    assert tokenize_many([text, text]) == [first, first]


def test_deterministic_across_processes() -> None:
    text = "Fix src/ci/build.yml --no-verify HTTPServer.handle_request naïve 9.0"
    code = "import sys; from ee.index.tokenize import tokenize; print(tokenize(sys.argv[1]))"
    outs = {
        subprocess.run(
            [sys.executable, "-c", code, text],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": ":".join(sys.path)},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outs) == 1
    assert outs.pop().strip() == str(tokenize(text))


def test_import_is_cheap() -> None:
    # Load the module file on its own (the ee.index package may import more): no numpy, no PyStemmer yet.
    code = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('tok', sys.argv[1])\n"
        "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
        "print('Stemmer' in sys.modules, 'numpy' in sys.modules)\n"
        "mod.tokenize('running'); print('Stemmer' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(tokenize_module.__file__))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == ["False", "False", "True"]
