"""How often the secret guard refuses real technical documentation (the false-positive rate).

Builds, offline and outside the repository, a corpus of documentation pages from Debian's documentation
packages (downloaded once with ``apt-get download``, unpacked with ``dpkg-deb -x``), turns each HTML or
text file into plain text split at its section headings (one page per section, small sections merged,
long ones cut at paragraphs), and runs every page through the guard ``ee import`` and ``ee remember`` use
for a memory's text (:func:`ee.policy.secrets.guard`). Prints the pages refused, with the class and the
flagged text, and the rate. The corpus is not committed: it is rebuilt from the packages.

Run from the repository root (``apt-get update`` once first)::

    python -m bench.secrets_fp                       # download (once), build, measure
    python -m bench.secrets_fp --cache /tmp/ee-fp --show 50

The bar (README, security): at most 1 page in 5,000 refused, on at least 10,000 pages.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import html.parser
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

PACKAGES = (
    "python3.11-doc",
    "postgresql-doc-15",
    "rust-doc",
    "golang-1.19-doc",
    "git-doc",
    "python-django-doc",
    "nginx-doc",
    "debian-reference-en",
    "python-sqlalchemy-doc",
    "libssl-doc",
    "nodejs-doc",
    "python-requests-doc",
    "python-flask-doc",
    "python-jinja2-doc",
    "sphinx-doc",
    "python-celery-doc",
    "python-kombu-doc",
    "apache2-doc",
    "cmake-doc",
    "ruby3.1-doc",
    "perl-doc",
    "python-cryptography-doc",
    "gnutls-doc",
    "python-pymongo-doc",
    "python-aiohttp-doc",
    "python-psycopg2-doc",
    "python-pytest-doc",
    "python-setuptools-doc",
    "python-openstackclient-doc",
    "python-keystoneclient-doc",
    "python-tornado-doc",
)
TEXT_SUFFIXES = (".html", ".htm", ".xhtml", ".txt", ".rst", ".md", ".pod")
MIN_PAGE = 300  # characters: smaller sections are merged into the next
MAX_PAGE = 8000  # characters: longer sections are cut at paragraph breaks
PER_PACKAGE = 2500  # pages at most from one package (evenly spaced), so no one package dominates
_BLOCK_TAGS = {"p", "div", "pre", "li", "tr", "br", "dt", "dd", "table", "section", "blockquote", "hr"}
_HEADINGS = {"h1", "h2", "h3"}
_HEADING_MARK = "\x00HEADING\x00"


class _Text(html.parser.HTMLParser):
    """Visible text of an HTML page; block elements end lines, headings start sections."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.in_headerlink = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "nav"):
            self.skip += 1
        elif tag == "a" and "headerlink" in (dict(attrs).get("class") or ""):
            self.skip += 1  # Sphinx's "¶" permalink
            self.in_headerlink = True
        elif tag in ("td", "th"):
            self.parts.append("\t")
        elif tag in _HEADINGS:
            self.parts.append("\n" + _HEADING_MARK)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "nav") or (tag == "a" and self.in_headerlink):
            self.skip = max(0, self.skip - 1)
            self.in_headerlink = self.in_headerlink and tag != "a"
        elif tag in _BLOCK_TAGS or tag in _HEADINGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def download(cache: Path, packages: tuple[str, ...]) -> None:
    """``apt-get download`` each package not yet in ``cache/debs``, then unpack all into ``cache/root``."""
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    have = {p.name.split("_", 1)[0] for p in debs.glob("*.deb")}
    missing = [p for p in packages if p not in have]
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=debs, check=True)
    root = cache / "root"
    root.mkdir(exist_ok=True)
    for deb in sorted(debs.glob("*.deb")):
        marker = root / f".unpacked-{deb.name}"
        if not marker.exists():
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
            marker.touch()


def package_files(cache: Path) -> dict[str, list[Path]]:
    """The text and HTML files of each package (by its listing in the .deb), symlinks left out."""
    out: dict[str, list[Path]] = {}
    root = cache / "root"
    for deb in sorted((cache / "debs").glob("*.deb")):
        name = deb.name.split("_", 1)[0]
        listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True)
        files = []
        for line in listing.stdout.splitlines():
            if not line.startswith("-"):  # regular files only (not links, not folders)
                continue
            path = line.split(None, 5)[5].removeprefix("./")
            plain = path.removesuffix(".gz")
            if plain.endswith(TEXT_SUFFIXES) and "/_sources/" not in path and "/_static/" not in path:
                files.append(root / path)
        out[name] = sorted(files)
    return out


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", "replace")


def pages_of(path: Path) -> Iterator[str]:
    """The file as pages: its sections (HTML headings; reST/Markdown heading lines), merged and cut."""
    text = read_text(path)
    if path.name.removesuffix(".gz").endswith((".html", ".htm", ".xhtml")):
        parser = _Text()
        parser.feed(text)
        parser.close()
        text = re.sub(r"[ \t]+\n", "\n", "".join(parser.parts))
        sections = text.split(_HEADING_MARK)
    else:
        sections = re.split(r"\n(?=[^\n]+\n[=\-~^*#]{3,}\n|#{1,3} |=head[12] )", text)
    pending = ""
    for section in sections:
        pending = (pending + "\n" + section).strip() if pending else section.strip()
        if len(pending) < MIN_PAGE:
            continue
        yield from _cut(re.sub(r"\n{3,}", "\n\n", pending))
        pending = ""
    if pending.strip():
        yield from _cut(pending)


def _cut(text: str) -> Iterator[str]:
    while len(text) > MAX_PAGE:
        cut = text.rfind("\n\n", MIN_PAGE, MAX_PAGE)
        cut = cut if cut > 0 else MAX_PAGE
        yield text[:cut].strip()
        text = text[cut:].strip()
    if text:
        yield text


def build_pages(cache: Path, per_package: int) -> list[tuple[str, str]]:
    """(name, text) of every page, de-duplicated, at most ``per_package`` per package (evenly spaced)."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for package, files in package_files(cache).items():
        pages: list[tuple[str, str]] = []
        for path in files:
            if not path.is_file():
                continue
            for number, page in enumerate(pages_of(path), 1):
                digest = hashlib.sha1(page.encode("utf-8", "replace")).hexdigest()
                if len(page) < MIN_PAGE // 2 or digest in seen:
                    continue
                seen.add(digest)
                pages.append((f"{package}:{path.relative_to(cache / 'root')}#{number}", page))
        step = max(1, len(pages) / per_package) if len(pages) > per_package else 1
        chosen = [pages[int(i * step)] for i in range(min(per_package, len(pages)))]
        print(f"  {package}: {len(chosen)} pages (of {len(pages)})", file=sys.stderr)
        out += chosen
    return out


def measure(pages: list[tuple[str, str]], show: int) -> dict[str, object]:
    from ee.errors import SecretFound
    from ee.policy.secrets import find_secrets, guard

    refused: list[dict[str, object]] = []
    started = time.perf_counter()
    for name, text in pages:
        try:
            guard({"body": text})
        except SecretFound:
            found = find_secrets(text)
            refused.append(
                {
                    "page": name,
                    "findings": [
                        {"cls": f.cls, "line": f.line, "text": _context(text, f.start, f.end)} for f in found
                    ],
                }
            )
    seconds = time.perf_counter() - started
    for item in refused[:show]:
        print(json.dumps(item, ensure_ascii=False))
    return {
        "pages": len(pages),
        "refused": len(refused),
        "rate": len(refused) / len(pages) if pages else 0.0,
        "one_in": round(len(pages) / len(refused)) if refused else None,
        "seconds": round(seconds, 2),
    }


def _context(text: str, start: int, end: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return text[line_start : line_end if line_end >= 0 else len(text)][:300]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "ee-secrets-fp")
    parser.add_argument("--per-package", type=int, default=PER_PACKAGE)
    parser.add_argument("--show", type=int, default=20, help="print this many refused pages")
    parser.add_argument("--no-download", action="store_true", help="use what is in --cache only")
    parser.add_argument(
        "--rebuild", action="store_true", help="rebuild the pages (else reuse the last build)"
    )
    args = parser.parse_args(argv)
    if not args.no_download:
        download(args.cache, PACKAGES)
    saved = args.cache / f"pages-{args.per_package}.json"
    if args.rebuild or not saved.exists():
        saved.write_text(json.dumps(build_pages(args.cache, args.per_package)))
    pages = [tuple(page) for page in json.loads(saved.read_text())]
    result = measure(pages, args.show)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
