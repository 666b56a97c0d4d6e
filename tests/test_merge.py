"""The memory merge driver: pure three-way merges of memory files, and the ``ee merge-driver`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import given
from hypothesis import strategies as st

from ee.errors import UsageError
from ee.git.conflict import Version, has_git_markers
from ee.git.conflict import parse as parse_versions
from ee.git.merge import (
    choose,
    is_conflicted,
    merge_list,
    merge_memory,
    resolve_text,
    split_conflict,
    versions_of,
)
from ee.model import Memory
from ee.store import frontmatter

BASE = """\
---
id: mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB
level: procedural      # how we work
kind: rule
tags: [ci, rust]
trust: agent_assertion
confidence: 0.6
created: 2026-12-02T09:11:11Z
source: file://AGENTS.md
links:
  - {type: supports, to: mem_A}
paths: ['src/ci/*.yml']
---
Clippy warnings are errors here.

Pedantic and nursery lints are enabled in CI.
"""


def edit(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text


def merged(base: str, ours: str, theirs: str) -> tuple[str, bool, bool]:
    result = merge_memory(base.encode(), ours.encode(), theirs.encode(), "memories/x.md")
    return result.text.decode(), result.conflict, result.body_conflict


def parsed(text: str) -> Memory:
    memory, _ = frontmatter.parse(text, "memories/x.md")
    return memory


# ---------------------------------------------------------------------------------------------- fast paths


def test_identical_or_one_sided_changes_take_the_changed_side() -> None:
    ours = edit(BASE, ("confidence: 0.6", "confidence: 0.7"))
    assert merged(BASE, ours, BASE) == (ours, False, False)
    assert merged(BASE, BASE, ours) == (ours, False, False)
    assert merged(BASE, ours, ours) == (ours, False, False)


# ---------------------------------------------------------------------------------------------- lists


def test_tags_and_links_are_united_ours_first_and_removals_kept() -> None:
    ours = edit(BASE, ("tags: [ci, rust]", "tags: [ci, rust, lint]"))
    theirs = edit(
        BASE,
        ("tags: [ci, rust]", "tags: [ci, clippy]"),  # theirs removed rust
        (
            "  - {type: supports, to: mem_A}",
            "  - {type: supports, to: mem_A}\n  - {type: related, to: mem_B}",
        ),
    )
    text, conflict, body_conflict = merged(BASE, ours, theirs)
    assert (conflict, body_conflict) == (False, False)
    memory = parsed(text)
    assert memory.tags == ("ci", "lint", "clippy")
    assert [(link.type, link.to) for link in memory.links] == [("supports", "mem_A"), ("related", "mem_B")]
    assert "conflict" not in text
    assert "ee_merge" not in text


def test_paths_and_source_are_united() -> None:
    ours = edit(BASE, ("source: file://AGENTS.md", "source: [file://AGENTS.md, https://ci.example/run/1]"))
    theirs = edit(BASE, ("paths: ['src/ci/*.yml']", "paths: ['src/ci/*.yml', build.rs]"))
    memory = parsed(merged(BASE, ours, theirs)[0])
    assert memory.source == ("file://AGENTS.md", "https://ci.example/run/1")
    assert memory.paths == ("src/ci/*.yml", "build.rs")


@given(
    st.sets(st.sampled_from("abcdefgh")),
    st.lists(st.sampled_from("abcdefghij"), unique=True),
    st.lists(st.sampled_from("abcdefghij"), unique=True),
)
def test_list_merge_never_drops_an_addition_nor_revives_a_removal(
    base: set[str], ours: list[str], theirs: list[str]
) -> None:
    out = merge_list(tuple(sorted(base)), tuple(ours), tuple(theirs))
    assert len(out) == len(set(out))
    added = (set(ours) - base) | (set(theirs) - base)
    assert added <= set(out)
    removed = (base - set(ours)) | (base - set(theirs))
    assert not (removed - added) & set(out)
    assert list(out[: len([t for t in ours if t in out])]) == [
        t for t in ours if t in out
    ]  # ours' order first


# ---------------------------------------------------------------------------------------------- scalars


def test_a_scalar_changed_on_one_side_wins() -> None:
    ours = edit(BASE, ("level: procedural      # how we work", "level: semantic      # how we work"))
    theirs = edit(BASE, ("confidence: 0.6", "confidence: 0.9"))
    text = merged(BASE, ours, theirs)[0]
    memory = parsed(text)
    assert (memory.level, memory.confidence) == ("semantic", 0.9)
    assert "level: semantic      # how we work" in text
    assert "ee_merge" not in text


@pytest.mark.parametrize(
    ("line", "ours", "theirs", "kept", "other"),
    [
        ("confidence: 0.6", "confidence: 0.7", "confidence: 0.9", 0.7, 0.9),
        (
            "trust: agent_assertion",
            "trust: human_explicit",
            "trust: cass_evidence",
            "cass_evidence",
            "human_explicit",
        ),
        ("kind: rule", "kind: convention", "kind: decision", "convention", "decision"),
        (
            "created: 2026-12-02T09:11:11Z",
            "created: 2026-12-01T00:00:00Z",
            "created: 2026-12-03T00:00:00Z",
            "2026-12-01T00:00:00Z",
            "2026-12-03T00:00:00Z",
        ),
    ],
)
def test_scalars_changed_on_both_sides_follow_a_symmetric_rule(
    line: str, ours: str, theirs: str, kept: object, other: object
) -> None:
    key = line.split(":")[0]
    for a, b in ((ours, theirs), (theirs, ours)):  # the same answer whichever side git calls "ours"
        text, conflict, _ = merged(BASE, edit(BASE, (line, a)), edit(BASE, (line, b)))
        memory = parsed(text)
        assert conflict is False
        assert getattr(memory, key) == kept
        assert dict(memory.extra)["ee_merge"] == [f"{key}={json.dumps(other)}"]


def test_an_expiry_set_on_one_side_beats_one_cleared_and_the_earlier_expiry_wins() -> None:
    base = edit(
        BASE,
        ("created: 2026-12-02T09:11:11Z", "created: 2026-12-02T09:11:11Z\nvalid_to: 2031-01-01T00:00:00Z"),
    )
    cleared = edit(base, ("valid_to: 2031-01-01T00:00:00Z", "valid_to: null"))
    earlier = edit(base, ("valid_to: 2031-01-01T00:00:00Z", "valid_to: 2030-01-01T00:00:00Z"))
    later = edit(base, ("valid_to: 2031-01-01T00:00:00Z", "valid_to: 2032-01-01T00:00:00Z"))
    assert parsed(merged(base, cleared, earlier)[0]).valid_to == "2030-01-01T00:00:00Z"
    memory = parsed(merged(base, later, earlier)[0])
    assert memory.valid_to == "2030-01-01T00:00:00Z"
    assert dict(memory.extra)["ee_merge"] == ['valid_to="2032-01-01T00:00:00Z"']


def test_values_set_aside_accumulate_across_merges() -> None:
    once = merged(
        BASE,
        edit(BASE, ("confidence: 0.6", "confidence: 0.7")),
        edit(BASE, ("confidence: 0.6", "confidence: 0.9")),
    )[0]
    ours = edit(once, ("confidence: 0.7", "confidence: 0.5"))
    theirs = edit(once, ("confidence: 0.7", "confidence: 0.4"))
    memory = parsed(merged(once, ours, theirs)[0])
    assert memory.confidence == 0.4
    assert dict(memory.extra)["ee_merge"] == ["confidence=0.9", "confidence=0.5"]


# ---------------------------------------------------------------------------------------------- bodies


def test_body_edits_on_different_lines_merge_cleanly() -> None:
    ours = edit(BASE, ("Clippy warnings are errors here.", "Clippy warnings are errors in CI."))
    theirs = edit(BASE, ("Pedantic and nursery lints", "Pedantic, nursery and cargo lints"))
    text, conflict, body_conflict = merged(BASE, ours, theirs)
    assert (conflict, body_conflict) == (False, False)
    assert (
        parsed(text).body
        == "Clippy warnings are errors in CI.\n\nPedantic, nursery and cargo lints are enabled in CI."
    )


def test_conflicting_bodies_keep_both_versions_in_a_parseable_flagged_file() -> None:
    ours = edit(
        BASE,
        ("Clippy warnings are errors here.", "Clippy warnings are errors in CI."),
        ("tags: [ci, rust]", "tags: [ci, rust, a]"),
    )
    theirs = edit(
        BASE,
        ("Clippy warnings are errors here.", "Clippy warnings are fatal."),
        ("tags: [ci, rust]", "tags: [ci, rust, b]"),
    )
    text, conflict, body_conflict = merged(BASE, ours, theirs)
    assert (conflict, body_conflict) == (False, True)  # a clean merge for git; flagged in the file
    memory = parsed(text)
    assert dict(memory.extra)["conflict"] is True
    assert memory.tags == ("ci", "rust", "a", "b")
    assert not has_git_markers(text)
    versions = parse_versions(memory.body)
    assert versions is not None
    assert [v.body.splitlines()[0] for v in versions] == [
        "Clippy warnings are errors in CI.",
        "Clippy warnings are fatal.",
    ]
    assert all("Pedantic and nursery lints are enabled in CI." in v.body for v in versions)  # whole bodies
    assert memory.title == "Clippy warnings are errors in CI."  # the labels are not the title
    assert "level: procedural      # how we work" in text  # ours' layout kept


def test_kept_versions_are_labelled_with_author_and_commit_and_read_back() -> None:
    def origins() -> tuple[Version, Version]:
        return Version("Alice", "1a2b3c4d5e6f", "2026-12-03T10:00:00+00:00", ""), Version(
            "Bob, Jr.", "9f8e7d6c5b4a", "", ""
        )

    ours = edit(BASE, ("errors here", "errors in CI"))
    theirs = edit(BASE, ("errors here", "fatal"))
    result = merge_memory(BASE.encode(), ours.encode(), theirs.encode(), "memories/x.md", origins)
    text = result.text.decode()
    assert "<!-- ee:version by Alice, commit 1a2b3c4d5e6f, 2026-12-03T10:00:00+00:00 -->" in text
    assert "ee memory resolve mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB --pick local|remote|both" in text
    versions = parse_versions(parsed(text).body)
    assert versions is not None
    assert [(v.author, v.commit) for v in versions] == [
        ("Alice", "1a2b3c4d5e6f"),
        ("Bob, Jr.", "9f8e7d6c5b4a"),
    ]
    assert versions[0].body == parsed(ours).body + "\n"


def test_a_conflict_met_again_keeps_every_version_once() -> None:
    first = merged(BASE, edit(BASE, ("errors here", "errors in CI")), edit(BASE, ("errors here", "fatal")))[0]
    third = edit(BASE, ("errors here", "errors, always"))
    text, conflict_, body_conflict = merged(BASE, first, third)
    assert (conflict_, body_conflict) == (False, True)
    versions = parse_versions(parsed(text).body)
    assert versions is not None
    assert [v.body.split(" ")[3] for v in versions] == ["errors", "fatal.\n\nPedantic", "errors,"]
    # one side resolving while the other keeps the conflict untouched: the resolution wins, flag gone
    resolved = edit(BASE, ("errors here", "errors in CI"))
    settled = merged(first, resolved, first)[0]
    assert settled == resolved
    assert not is_conflicted(parsed(settled))


def test_both_sides_adding_one_file_with_one_id_merge_as_an_add() -> None:
    ours = edit(BASE, ("tags: [ci, rust]", "tags: [ci]"))
    theirs = edit(BASE, ("tags: [ci, rust]", "tags: [rust]"))
    memory = parsed(merged("", ours, theirs)[0])
    assert memory.tags == ("ci", "rust")


def test_a_file_without_frontmatter_gets_the_conflict_flag() -> None:
    base = "Use the staging cluster for load tests.\n"
    text, conflict, body_conflict = merged(
        base, "Use the perf cluster for load tests.\n", "Use prod-like staging for load tests.\n"
    )
    assert (conflict, body_conflict) == (False, True)
    memory = parsed(text)
    assert dict(memory.extra) == {"conflict": True}
    assert "Use the perf cluster" in memory.body
    assert "Use prod-like staging" in memory.body


# ---------------------------------------------------------------------------------------------- fallbacks


def test_an_unparseable_side_falls_back_to_git_text_merge_as_a_conflict() -> None:
    theirs = edit(BASE, ("tags: [ci, rust]", "tags: [ci, rust"))
    ours = edit(BASE, ("confidence: 0.6", "confidence: 0.7"))
    result = merge_memory(BASE.encode(), ours.encode(), theirs.encode(), "memories/x.md")
    assert result.conflict is True
    assert "does not parse" in result.reason
    text = result.text.decode()
    assert "tags: [ci, rust\n" in text  # git's merge of the two texts
    assert "confidence: 0.7" in text


def test_two_different_memories_added_at_one_path_are_a_conflict() -> None:
    ours = BASE
    theirs = edit(
        BASE, ("mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB", "mem_01JE4ZP6Q3V8R2K7M5T9W1X3ZZ"), ("here.", "there.")
    )
    result = merge_memory(b"", ours.encode(), theirs.encode())
    assert result.conflict is True
    text = result.text.decode()
    assert "<<<<<<< ours" in text
    assert "mem_01JE4ZP6Q3V8R2K7M5T9W1X3ZZ" in text
    assert "there." in text


def test_bytes_that_are_not_utf8_are_a_conflict() -> None:
    result = merge_memory(BASE.encode(), BASE.encode() + b"\xff\n", edit(BASE, ("0.6", "0.7")).encode())
    assert result.conflict is True


# ---------------------------------------------------------------------------------------------- resolving


def conflicted_text() -> str:
    ours = edit(
        BASE, ("Clippy warnings are errors here.", "Ours says this."), ("confidence: 0.6", "confidence: 0.7")
    )
    theirs = edit(
        BASE,
        ("Clippy warnings are errors here.", "Theirs says that."),
        ("confidence: 0.6", "confidence: 0.9"),
    )
    return merged(BASE, ours, theirs)[0]


def test_choose_picks_by_local_remote_commit_or_author() -> None:
    a = Version("Alice", "1a2b3c4d5e6f", "", "A says this.\n")
    b = Version("Bob", "9f8e7d6c5b4a", "", "B says that.\n")
    assert choose([a, b], "local", {"1a2b3c4d5e6f"}) == [a]
    assert choose([a, b], "remote", {"1a2b3c4d5e6f"}) == [b]
    assert choose([a, b], "local", {"9f8e7d6c5b4a"}) == [b]  # the other clone: the other side
    assert choose([a, b], "9f8e", set()) == [b]
    assert choose([a, b], "alice", set()) == [a]
    assert choose([a, b], "both", set()) == [a, b]
    with pytest.raises(UsageError, match="names none of the versions"):
        choose([a, b], "local", set())  # neither was committed here: pick by commit
    with pytest.raises(UsageError, match="names 2 of the versions"):
        choose([a, b], "remote", set())


@pytest.mark.parametrize(
    ("pick", "body"),
    [
        (0, "Ours says this.\n\nPedantic"),
        (1, "Theirs says that.\n\nPedantic"),
        (None, "Ours says this.\n\nPedantic and nursery lints are enabled in CI.\n\nTheirs says that."),
    ],
)
def test_resolve_keeps_the_chosen_versions_and_drops_the_bookkeeping(pick: int | None, body: str) -> None:
    text = conflicted_text()
    versions = parse_versions(parsed(text).body)
    assert versions is not None
    text = resolve_text(text, versions if pick is None else [versions[pick]])
    memory = parsed(text)
    assert memory.body.startswith(body)
    assert dict(memory.extra) == {}
    assert "level: procedural      # how we work" in text


def test_resolve_with_a_given_body() -> None:
    assert parsed(resolve_text(conflicted_text(), body="Only this.")).body == "Only this."


def test_split_conflict_reads_git_labels_and_diff3_sections() -> None:
    body = "top\n<<<<<<< HEAD\nmine\n||||||| base\nold\n=======\nyours\n>>>>>>> 1a2b3c (msg)\nend\n"
    markers = split_conflict(body)
    assert markers is not None
    assert markers.pick("ours") == "top\nmine\nend\n"
    assert markers.pick("theirs") == "top\nyours\nend\n"
    versions = versions_of(body)  # an older ee's (or a hand) text merge: labelled by the markers
    assert versions is not None
    assert [(v.author, v.body) for v in versions] == [
        ("HEAD", "top\nmine\nend\n"),
        ("1a2b3c (msg)", "top\nyours\nend\n"),
    ]
    assert split_conflict("no markers\n") is None
    assert split_conflict("<<<<<<< ours\nhalf\n") is None


# ---------------------------------------------------------------------------------------------- the command


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def test_merge_driver_command_writes_the_result_into_ours(tmp_path: Path) -> None:
    base = write(tmp_path, "base", BASE)
    ours = write(tmp_path, "ours", edit(BASE, ("tags: [ci, rust]", "tags: [ci, rust, a]")))
    theirs = write(tmp_path, "theirs", edit(BASE, ("tags: [ci, rust]", "tags: [ci, rust, b]")))
    result = run_cli("merge-driver", base, ours, theirs, "memories/x.md")
    assert result.code == 0
    assert parsed(Path(ours).read_text()).tags == ("ci", "rust", "a", "b")


def test_merge_driver_command_reports_a_body_conflict_but_exits_0(tmp_path: Path) -> None:
    base = write(tmp_path, "base", BASE)
    ours = write(tmp_path, "ours", edit(BASE, ("errors here", "errors in CI")))
    theirs = write(tmp_path, "theirs", edit(BASE, ("errors here", "fatal")))
    result = run_cli("merge-driver", base, ours, theirs, "memories/x.md")
    assert result.code == 0
    assert "both versions kept" in result.err
    assert "conflict: true" in Path(ours).read_text()


def test_merge_driver_command_exits_1_on_an_unparseable_side(tmp_path: Path) -> None:
    base = write(tmp_path, "base", BASE)
    ours = write(tmp_path, "ours", edit(BASE, ("0.6", "0.7")))
    theirs = write(tmp_path, "theirs", edit(BASE, ("kind: rule", "kind: [rule")))
    result = run_cli("merge-driver", base, ours, theirs, "memories/x.md")
    assert result.code == 1
    assert "git's text merge" in result.err
