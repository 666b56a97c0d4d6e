"""The format sizes the READMEs state, measured and written from one place.

Run from the repository root::

    python -m bench.format_sizes            # print the table and the README's sentence
    python -m bench.format_sizes --write    # and replace them in bench/README.md and README.md

The same 4,000-token pack is printed in each format by real ``ee context`` processes on two stores, each
named in the table with its size and the date: this repository's own memories (long, explained ones)
and a store of 40 short one-line memories of a small Python project (generated here, the same every
run). A size is ⌈bytes / 4⌉ of stdout, as ``… --format F | wc -c`` counts it. Each target is stated as
it holds on both stores; ``tests/test_formats.py`` checks them. The table goes to bench/README.md (section
"Format sizes"), its two-line summary to the README.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import ee_argv, git_environment, run_process

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("markdown", "toon", "compact", "hook", "json")
TARGETS = {
    "markdown": "",
    "toon": "≤ Markdown",
    "compact": "< Markdown; ≤ ½ of it for long memories",
    "hook": "≤ Markdown",
    "json": "(everything)",
}
INTRO = "One pack in each format:"  # how bench/README.md's paragraph starts (where --write finds it)
SUMMARY = "Format sizes of one 4,000-token pack"  # how the README's sentence starts
OLD_STARTS = ("Sizes of one pack", "Sizes for the same pack")  # (what the README said before)
OWN_TASK = "how does ee commit a memory"
SHORT_TASK = "how do we release a new version"
# What a small Python project's store holds after a few weeks: one short line each.
SHORT_MEMORIES = [
    ("rule", "Run make test before every release; CI also runs make lint."),
    ("rule", "Bump the version in pyproject.toml and CHANGELOG.md together."),
    ("rule", "Tag releases as vX.Y.Z on main, never on a branch."),
    ("command", "make release publishes to PyPI through twine."),
    ("decision", "We use ruff for linting and formatting, not black."),
    ("decision", "Python 3.11 is the oldest version we support."),
    ("convention", "Type hints on every public function."),
    ("convention", "Tests live in tests/, one file per module."),
    ("failure", "The upload test is flaky on CI: it needs a retry."),
    ("anti-pattern", "Never pin transitive dependencies in pyproject.toml."),
    ("fact", "The docs are built with mkdocs from docs/."),
    ("fact", "The CLI entry point is app.cli:main."),
    ("fact", "Settings are read from app.toml, then the environment."),
    ("decision", "SQLite for local data; no server database."),
    ("rule", "No network access in tests."),
    ("command", "make docs serves the documentation locally."),
    ("rule", "Every bug fix comes with a regression test."),
    ("convention", "Commit subjects are imperative, at most 72 characters."),
    ("fact", "Release notes go to GitHub releases, from CHANGELOG.md."),
    ("failure", "A release without the changelog entry was yanked once."),
    ("rule", "Deprecations warn for one minor version before removal."),
    ("fact", "The logo lives in docs/assets/logo.svg."),
    ("decision", "click for the command line, not argparse."),
    ("convention", "Errors end with the next command to try."),
    ("fact", "CI runs on GitHub Actions: .github/workflows/ci.yml."),
    ("rule", "Keep the README under 200 lines."),
    ("command", "make coverage prints the coverage report."),
    ("fact", "The maintainers review pull requests on Mondays."),
    ("anti-pattern", "Do not catch bare Exception in library code."),
    ("decision", "Wheels only: no source distribution uploads."),
    ("rule", "Secrets come from the environment, never from files in the repo."),
    ("fact", "The test suite takes about two minutes."),
    ("convention", "Public functions have docstrings with an example."),
    ("failure", "Publishing from a dirty tree shipped a stray file."),
    ("fact", "Issues are triaged with the labels bug, feature, docs."),
    ("rule", "Run make release only from a clean checkout of main."),
    ("command", "make clean removes build/ and dist/."),
    ("decision", "Semantic versioning, strictly."),
    ("fact", "The project started in 2024."),
    ("convention", "Dates in logs are UTC, RFC 3339."),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.format_sizes", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="Replace them in bench/README.md and README.md.")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md", help=argparse.SUPPRESS)
    parser.add_argument("--bench-readme", type=Path, default=ROOT / "bench/README.md", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ee-format-sizes-") as tmp:
        env = git_environment(Path(tmp) / "home")
        own = own_store(Path(tmp) / "own", env)
        short = short_store(Path(tmp) / "short", env)
        stores = [
            (f'this repository\'s {own[1]} memories, "{OWN_TASK}"', measure(own[0], OWN_TASK, env)),
            (f'{short[1]} short memories, "{SHORT_TASK}"', measure(short[0], SHORT_TASK, env)),
        ]
    date = datetime.datetime.now(datetime.UTC).date().isoformat()
    text, line = table(stores, date), summary(stores, date)
    print(text, line, sep="\n\n")
    if args.write:
        replace_paragraph(args.bench_readme, (INTRO,), text)
        replace_paragraph(args.readme, (SUMMARY, INTRO, *OLD_STARTS), line)
    return 0


def own_store(root: Path, env: dict[str, str]) -> tuple[Path, int]:
    """A workspace holding a copy of this repository's memories, committed."""
    shutil.copytree(ROOT / "memories", root / "memories")
    return _committed(root, env), len(list((root / "memories").rglob("*.md")))


def short_store(root: Path, env: dict[str, str]) -> tuple[Path, int]:
    """A workspace holding :data:`SHORT_MEMORIES`, one file each, committed."""
    for n, (kind, text) in enumerate(SHORT_MEMORIES):
        path = root / "memories" / f"m{n:02d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nkind: {kind}\n---\n{text}\n", encoding="utf-8")
    return _committed(root, env), len(SHORT_MEMORIES)


def _committed(root: Path, env: dict[str, str]) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], env=env, check=True)
    run_process(ee_argv("init", str(root), "--json"), root, env)
    subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "memories"], cwd=root, env=env, check=True)
    return root


def measure(root: Path, task: str, env: dict[str, str]) -> dict[str, int]:
    """⌈bytes / 4⌉ of ``ee context TASK --max-tokens 4000 --format F`` for each format."""
    sizes = {}
    for fmt in FORMATS:
        done = run_process(ee_argv("context", task, "--max-tokens", "4000", "--format", fmt), root, env)
        sizes[fmt] = -(-len(done.stdout) // 4)
    return sizes


def table(stores: list[tuple[str, dict[str, int]]], date: str) -> str:
    """The README's paragraph and table."""
    head = "| format | " + " | ".join(f"{name}: tokens | of Markdown" for name, _ in stores) + " | target |"
    rule = "|---|" + "---:|---:|" * len(stores) + "---|"
    rows = []
    for fmt in FORMATS:
        cells = []
        for _name, sizes in stores:
            cells += [f"{sizes[fmt]:,}", f"{round(100 * sizes[fmt] / sizes['markdown']):,} %"]
        rows.append(f"| {fmt} | " + " | ".join(cells) + f" | {TARGETS[fmt]} |")
    intro = (
        f"{INTRO} ⌈bytes / 4⌉ tokens of `ee context TASK --max-tokens 4000 --format F` ({date},\n"
        "`python -m bench.format_sizes --write`; tests check the targets), on two stores:"
    )
    return "\n".join([intro, "", head, rule, *rows])


def summary(stores: list[tuple[str, dict[str, int]]], date: str) -> str:
    """The README's two lines: what each format costs against Markdown on the two stores."""
    (_own, long_sizes), (_short, short_sizes) = stores

    def share(fmt: str) -> str:
        shares = sorted(round(100 * s[fmt] / s["markdown"]) for s in (long_sizes, short_sizes))
        return f"{shares[0]:,}-{shares[1]:,} %" if shares[0] != shares[1] else f"{shares[0]:,} %"

    compact = [round(100 * s["compact"] / s["markdown"]) for s in (long_sizes, short_sizes)]
    return (
        f"{SUMMARY} against Markdown ({date}; the stores, the table and the targets tests check:\n"
        f"[bench/README.md](bench/README.md#format-sizes)): toon {share('toon')}, hook {share('hook')}, "
        f"compact {compact[0]} % on long memories and {compact[1]} % on short ones, json {share('json')}."
    )


def replace_paragraph(path: Path, starts: tuple[str, ...], text: str) -> None:
    """Replace the paragraph that starts with one of ``starts`` (and a table right after it) by ``text``."""
    lines = path.read_text(encoding="utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(starts))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    after = next((i for i in range(end, len(lines)) if lines[i].strip()), len(lines))
    if after < len(lines) and lines[after].startswith("|"):  # the table of that paragraph
        end = next((i for i in range(after, len(lines)) if not lines[i].startswith("|")), len(lines))
    path.write_text("\n".join([*lines[:start], text, *lines[end:]]), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
