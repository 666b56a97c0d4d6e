"""The secret corpus (tests/fixtures/secrets/secrets.txt): realistic secrets in varied contexts.

Each case's random parts (``{X<n>}``) are filled from an RNG seeded by the case's line and position, so
the texts are the same on every run and no credential-shaped string sits in the repository.
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

CORPUS = Path(__file__).parent / "fixtures" / "secrets" / "secrets.txt"
ALPHABETS = {
    "A": string.ascii_letters + string.digits,
    "a": string.ascii_lowercase + string.digits,
    "U": string.ascii_uppercase + string.digits,
    "H": "0123456789abcdef",
    "B": string.ascii_letters + string.digits + "+/",
    "L": string.ascii_letters + string.digits + "-_",
    "D": string.digits,
    "C": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",  # bech32 (age keys)
}
_SLOT_RE = re.compile(r"\{([AaUHBLDC])(\d+)\}")


def cases() -> list[tuple[int, str, str]]:
    """(line number, expected class, text) of every case."""
    out = []
    for number, line in enumerate(CORPUS.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cls, _tab, template = line.partition("\t")
        out.append((number, cls, fill(template.replace("\\n", "\n"), number)))
    return out


def fill(template: str, seed: int) -> str:
    rng = random.Random(f"secret-corpus-{seed}")
    return _SLOT_RE.sub(lambda m: "".join(rng.choice(ALPHABETS[m[1]]) for _ in range(int(m[2]))), template)
