"""The one walk over the memory files: every ``*.md`` below ``memories/``, with its ``lstat``.

The store lists these files (:meth:`ee.store.files.Store.files`), the index stamps them to prove it is
fresh (:func:`ee.index.freshness.scan`), and a warm git hook digests them
(:func:`ee.ops.risks.memory_digest`): all three see exactly the same files because they share this
walk. Its rules:

- hidden names (``.events``, editor swap files, ``.git``) are skipped, files and folders alike;
- a symlink is stat'ed, not followed (a link to a folder is not walked into; a dangling link is listed);
- a folder that vanished, is not a folder or loops is empty; one ee may not read is skipped;
- a ``memories`` that is a committed link out of the repository is a StorageError, nothing walked
  (:func:`ee.git.repo.check_own_folder`).

Each folder is opened once and its entries are stat'ed relative to it (names from ``listdir``, no
``DirEntry`` objects, and the kernel resolves one name instead of the whole path): at 10k files this is
the cost every query pays. Files come in the order the walk meets them; sort where order matters.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from ee.git.repo import check_own_folder, holds_nothing

MEMORIES = "memories"


def memory_files(root: str | os.PathLike[str]) -> Iterator[tuple[str, os.stat_result]]:
    """``(workspace-relative path, lstat)`` of every memory file of the workspace at ``root``."""
    top = os.fspath(root)
    check_own_folder(top, MEMORIES)
    stack = [(os.path.join(top, MEMORIES), MEMORIES + "/")]  # (folder, its relative prefix)
    while stack:
        folder, prefix = stack.pop()
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except PermissionError:
            continue
        except OSError as exc:
            if not holds_nothing(exc):
                raise
            continue
        try:
            for name in os.listdir(fd):
                if name[0] == ".":
                    continue
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:  # deleted since the listing
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append((folder + "/" + name, prefix + name + "/"))
                elif name.endswith(".md"):
                    yield prefix + name, st
        finally:
            os.close(fd)
