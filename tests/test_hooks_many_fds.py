"""A git hook's reader works in a process that already holds many open files.

``select.select`` cannot watch a descriptor above 1023 (``ValueError: filedescriptor out of range``): a
process that has opened many files, as the warm server or a long test run does, got such numbers for the
pipes of the git commands the hooks read, and ``ee hooks install`` failed with an internal error. The
reader now waits with :mod:`selectors` (epoll), which has no such limit.
"""

from __future__ import annotations

import os
import resource
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ee.git import runner
from ee.hooks.gitinfo import git


@pytest.fixture
def crowded() -> Iterator[None]:
    """This process holds descriptors up to number ~1100, so the next ones opened are above 1023."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard limit of open files is {hard}: cannot open descriptors above 1023")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held: list[int] = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_git_output_is_read_with_descriptors_above_1023(tmp_path: Path, crowded: None) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("alpha\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.txt"], check=True)
    reader = runner.start(["diff", "--cached", "--name-only"], tmp_path)
    assert reader.stdout is not None
    assert reader.stdout.fileno() > 1023  # the case select.select could not watch
    status, out, err = runner.read_output(reader)
    assert (status, out, err) == (0, b"a.txt\n", b"")
    assert git("rev-parse", "--show-toplevel", cwd=tmp_path).strip() == str(tmp_path)


def test_reading_stops_early_with_descriptors_above_1023(tmp_path: Path, crowded: None) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for i in range(200):
        (tmp_path / f"f{i:03}.txt").write_text(f"{i}\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    status, out, _err = runner.read_output(
        runner.start(["diff", "--cached", "--name-only"], tmp_path),
        enough=lambda so_far: b"f010.txt" in so_far,
    )
    assert status == 0
    assert b"f010.txt" in out
