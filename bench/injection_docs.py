"""False positives of the injection guard on real documentation: the text files, changelogs and HTML pages
under /usr/share/doc (Debian's documentation packages), cut into pages of ~2,000 characters at paragraph
breaks. Prints the page count, the flagged pages and their signals. Run by hand:

    python bench/injection_docs.py [FOLDER]
"""

from __future__ import annotations

import gzip
import html
import os
import re
import sys
import time
from collections.abc import Iterator

from ee.policy.injection import scan_injection

PAGE_CHARS = 2000
_TEXT_NAME = re.compile(r"\.(txt|md|rst|html?)(\.gz)?$|^(README|NEWS|FAQ|copyright)|changelog", re.IGNORECASE)
_MARKUP = re.compile(r"<script.*?</script>|<style.*?</style>|<[^>]+>", re.DOTALL)


def documents(folder: str) -> Iterator[tuple[str, str]]:
    """(path, text) of every readable text document below ``folder`` (symbolic links not followed)."""
    for parent, _dirs, files in os.walk(folder):
        for name in sorted(files):
            path = os.path.join(parent, name)
            if os.path.islink(path) or not _TEXT_NAME.search(name):
                continue
            try:
                data = gzip.open(path).read() if name.endswith(".gz") else open(path, "rb").read()  # noqa: SIM115
            except (OSError, EOFError):
                continue
            if b"\0" in data[:4096]:
                continue  # binary
            text = data.decode("utf-8", "replace")
            if re.search(r"\.html?(\.gz)?$", name):
                text = html.unescape(_MARKUP.sub(" ", text))
            yield path, text


def pages(text: str) -> Iterator[str]:
    page = ""
    for paragraph in re.split(r"\n\s*\n", text):
        page += paragraph + "\n\n"
        if len(page) >= PAGE_CHARS:
            yield page
            page = ""
    if page.strip():
        yield page


def main(folder: str) -> None:
    started = time.perf_counter()
    total, flagged = 0, []
    for path, text in documents(folder):
        for page in pages(text):
            total += 1
            report = scan_injection(page)
            if report.flagged:
                flagged.append((path, report))
    seconds = time.perf_counter() - started
    print(f"{total} pages, {len(flagged)} flagged ({len(flagged) / max(total, 1):.3%}), {seconds:.0f} s")
    for path, report in flagged:
        print(f"  {path} {', '.join(report.signals)} {report.score}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/doc")
