"""Long operations show their progress on stderr when it is a terminal (a real pty here), and print
nothing more when it is not: the JSON on stdout is the same either way."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import read_terminal

from ee.workspace import Workspace


def run(args: list[str], cwd: Path, terminal: bool) -> tuple[int, str, str]:
    """``python -m ee ARGS``: stdout piped; stderr a pty (``terminal``) or a pipe. (code, stdout, stderr)."""
    if not terminal:
        proc = subprocess.run(
            [sys.executable, "-m", "ee", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        return proc.returncode, proc.stdout, proc.stderr
    master, slave = pty.openpty()
    with tempfile.TemporaryFile(
        "w+", encoding="utf-8"
    ) as stdout:  # (a pipe could fill while we read the pty)
        child = subprocess.Popen(
            [sys.executable, "-m", "ee", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=slave,
        )
        os.close(slave)
        seen = read_terminal(master)
        code = child.wait(timeout=300)
        stdout.seek(0)
        out = stdout.read()
    return code, out, seen.decode("utf-8", "replace")


def records(path: Path, count: int) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(
                json.dumps({"body": f"Memory number {n} about deploy step {n % 17}.", "kind": "fact"})
            )
            handle.write("\n")
    return path


def shape(stdout: str) -> tuple[bool, int]:
    doc = json.loads(stdout)
    return doc["success"], doc["data"]["imported"]


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_import_and_rebuild_show_progress_only_on_a_terminal(
    ws: Workspace, tmp_path: Path, terminal: bool
) -> None:
    source = records(tmp_path / "many.jsonl", 1200)
    code, out, err = run(["import", "jsonl", str(source), "--json"], ws.root, terminal)
    assert code == 0, err
    assert shape(out) == (True, 1200)
    if terminal:
        assert "checking" in err
        assert "writing" in err
        assert "100%" in err
    else:
        assert err == ""
    code, out, err = run(["index", "rebuild", "--json"], ws.root, terminal)
    assert code == 0, err
    assert json.loads(out)["success"] is True
    if terminal:
        assert "parsing" in err
        assert "embedding" in err
    else:
        assert err == ""


def beir_set(folder: Path) -> Path:
    folder.mkdir()
    docs = {
        f"doc{n}": f"The {word} service restarts with systemctl restart {word}."
        for n, word in enumerate(["nginx", "postgres", "redis", "cron", "sshd", "docker"])
    }
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items())
    )
    (folder / "queries.jsonl").write_text(
        "".join(
            json.dumps({"_id": f"q{n}", "text": f"restart {w}"}) + "\n"
            for n, w in enumerate(["nginx", "redis"])
        )
    )
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq0\tdoc0\t1\nq1\tdoc2\t1\n")
    return folder


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_eval_beir_shows_progress_only_on_a_terminal(tmp_path: Path, terminal: bool) -> None:
    folder = beir_set(tmp_path / "beir")
    code, out, err = run(["eval", "beir", str(folder), "--json"], tmp_path, terminal)
    assert code == 0, err
    data = json.loads(out)["data"]
    assert data["documents"] == 6
    assert {"lexical", "semantic", "hybrid", "bm25s_baseline"} <= set(data)
    if terminal:
        for label in ("writing", "lexical", "semantic", "hybrid"):
            assert label in err, err
    else:
        assert err == ""
