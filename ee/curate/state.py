"""The review queue's private state under ``.ee/curate/``: the last scan's candidates (``scan.json``, derived)
and the proposals of agents and sessions (``proposals.json``, kept until a person decides). Never shared."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ee.curate.model import Candidate
from ee.errors import StorageError

if TYPE_CHECKING:
    from pathlib import Path

STATE = ".ee/curate"
SCAN_FILE = f"{STATE}/scan.json"
PROPOSALS_FILE = f"{STATE}/proposals.json"


def read_state(root: Path, rel: str) -> dict[str, Candidate]:
    """The candidates of one private state file, by id; a broken file is a StorageError naming it."""
    from ee.config import open_regular

    path = root / rel
    try:
        with open(open_regular(path, os.O_RDONLY | os.O_NOFOLLOW), encoding="utf-8") as handle:
            raw = json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StorageError(
            f"{rel} cannot be read: {exc}",
            f"remove it (rm {rel}); `ee curate scan` rebuilds the scan, agents propose again",
        ) from None
    try:
        found = [Candidate.from_dict(item) for item in raw["candidates"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise StorageError(f"{rel} is not a candidate list: {exc}", f"remove it (rm {rel})") from None
    return {c.id: c for c in found if not c.problems()}


def write_state(root: Path, rel: str, candidates: Iterable[Candidate]) -> None:
    from ee.store.files import atomic_write, make_state_folder

    make_state_folder(root / STATE)
    items = sorted(candidates, key=lambda c: c.id)
    data = json.dumps({"candidates": [c.to_dict() for c in items]}, ensure_ascii=False, sort_keys=True)
    atomic_write(root / rel, data.encode("utf-8"))
