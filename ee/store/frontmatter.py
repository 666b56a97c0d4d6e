"""Memory file text ↔ :class:`ee.model.Memory`. Pure: no file or git I/O.

Reading is fast (PyYAML's C loader) and strict about meaning, tolerant about form. Writing a new file
uses a small deterministic emitter; every edit of an existing file goes through ruamel.yaml's round-trip
mode and then keeps the original text of every top-level key that did not change, so a human's comments,
key order, quoting and blank lines survive byte for byte outside the keys that changed.

The checks of each known key's value (but the id's, checked here against the secret policy) are
:mod:`ee.store.frontmatter_checks`'.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from ee.config import MAX_INT
from ee.errors import MemoryFormatError, UsageError
from ee.git.conflict import git_marker_line
from ee.model import Link, Memory, Problem
from ee.store.frontmatter_checks import check_key, jsonable, problem_error, scalar_text
from ee.store.ids import ID_RE, is_valid_id
from ee.values import KNOWN_KEYS


class _LazyPattern:
    """A regular expression compiled on first use. A command such as ``ee remember`` or ``ee search`` uses
    few of this module's patterns, and compiling all 17 at import cost every fresh process ~2 ms. After
    the first use the pattern's methods are plain attributes: no cost per call."""

    def __init__(self, source: str) -> None:
        self._source = source

    def __getattr__(self, name: str) -> Any:
        compiled = re.compile(self._source)
        for method in ("match", "fullmatch", "search", "sub", "split", "finditer", "findall"):
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)


def _lazy(source: str) -> re.Pattern[str]:
    return _LazyPattern(source)  # type: ignore[return-value]  # it answers as the pattern does


@functools.cache
def _yaml() -> Any:
    """PyYAML, imported on first use: writing a new memory (``ee remember``) never needs it (~20 ms)."""
    import yaml

    return yaml


# The largest whole number a memory file may hold (a 64-bit integer): beyond it, a value ee reads as a
# number (confidence, a feedback count) could not become a float, a JSON number other tools read, or even
# text (Python refuses int ↔ str past 4300 digits). Such a file is one bad file, reported at file:line.


@functools.cache
def _loader() -> Any:
    """PyYAML's safe loader (the C one, ~10x faster), with whole numbers bounded by :data:`MAX_INT`:
    a subclass, so PyYAML's own loaders stay as they are."""
    yaml = _yaml()
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def bounded_int(loader: Any, node: Any) -> int:
        text = str(node.value).replace("_", "").lstrip("+-")
        if len(text) > 3 * 64 or (":" in text and len(text) > 40):  # (0b…, or 1:2:3… in base 60)
            raise ValueError(f"the number {_short(node.value)} is beyond {MAX_INT}")
        value = int(base.construct_yaml_int(loader, node))
        if abs(value) > MAX_INT:
            raise ValueError(f"the number {_short(node.value)} is beyond {MAX_INT}")
        return value

    loader: Any = type("BoundedSafeLoader", (base,), {})
    loader.add_constructor("tag:yaml.org,2002:int", bounded_int)
    return loader


def _short(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:12]}…({len(text)} characters)"


# Keys the merge driver writes (a conflicted memory, the values a merge set aside): kept in ``extra``.
CONFLICT_KEY = "conflict"
MERGE_KEY = "ee_merge"
MERGE_KEYS = frozenset({CONFLICT_KEY, MERGE_KEY})
# When a person last reviewed the memory's trust (`ee memory trust`): informational, kept in ``extra``;
# what counts for trust is the review commit (ee.index.provenance), not this value.
REVIEW_KEY = "trust_reviewed"
CITES_KEY = "cites"  # {cited file or file:L1-L2: hash of its text}, recorded by ee.curate.citations
MAX_FRONTMATTER_BYTES = 64 * 1024
_TOP_KEY_RE = _lazy(r"^([^\s#:'\"\-?][^:#]*?|'[^']*'|\"[^\"]*\")\s*:(?:\s|$)")
_ALIAS_HINT_RE = _lazy(r"(?:^|[\s\[{,:-])[&*][^\s,\]}]")
_DELIMITER_RE = _lazy(r"^(?:---|\.\.\.)[ \t]*\r?$")
_OPENING_RE = _lazy(r"^---[ \t]*(?:\r?\n|$)")
_BOM = "\ufeff"
_YAML_BREAK_RE = _lazy("(\r\n|[\r\n\x85\u2028\u2029])")  # what ruamel counts as a line break


class _Delete:
    """Marks a key to remove in :func:`update`."""


DELETE = _Delete()


# ---------------------------------------------------------------------------------------------- splitting


def decode(data: bytes, path: str = "") -> str:
    """Bytes → text, or a MemoryFormatError naming the line of the first byte that is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise MemoryFormatError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            path,
            line,
            hint="save the file as UTF-8, or move binary files out of memories/",
        ) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise MemoryFormatError(
            "binary content (NUL byte)", path, line, hint="move binary files out of memories/"
        )
    return text.removeprefix("\ufeff")


def split(text: str) -> tuple[str | None, str, int]:
    """Split a file into (frontmatter text or None, body, 1-based line where the body starts).

    Frontmatter is present when the first line is ``---`` and a later line is ``---`` or ``...`` (either may
    carry trailing blanks). A leading byte-order mark is ignored.
    """
    text = text.removeprefix(_BOM)
    if not _OPENING_RE.match(text):
        return None, text, 1
    lines = _lines(text)
    for number in range(1, len(lines)):
        if _DELIMITER_RE.match(lines[number]):
            fm = "".join(lines[1:number])
            body = "".join(lines[number + 1 :])
            return fm, body, number + 2
    return None, text, 1


# ---------------------------------------------------------------------------------------------- reading


def parse(text: str, path: str, default_id: str | None = None) -> tuple[Memory, list[Problem]]:
    """Parse a memory file. Returns the memory and warnings; raises MemoryFormatError on errors.

    ``default_id`` is the id for a file without an ``id`` key (derived from its path by the store).
    """
    fm_text, body, body_line = split(text)
    body_clean = body.strip()
    fallback_id = default_id or id_from_path(path)
    if fm_text is None:
        if _OPENING_RE.match(text.removeprefix(_BOM)):
            raise MemoryFormatError(
                "frontmatter is not closed", path, 1, hint="add a line '---' after the frontmatter keys"
            )
        if not body_clean:  # an empty file (an editor's new buffer): no memory yet, as with frontmatter
            raise MemoryFormatError(
                "the file is empty", path, 1, hint="write the memory's text in it, or delete it"
            )
        return Memory(id=fallback_id, body=body_clean, path=path, has_frontmatter=False), []
    try:
        data = _load_mapping(fm_text, path)
    except MemoryFormatError:
        marker = git_marker_line(fm_text)
        if marker is None:
            raise
        # What a text merge leaves: reported as that, at its line, not as the YAML error it causes.
        raise MemoryFormatError(
            "git's conflict markers in the frontmatter: a merge kept both sides",
            path,
            marker + 1,  # (the frontmatter starts on line 2)
            hint="keep one side's lines, delete the marker lines (<<<<<<<, =======, >>>>>>>) and commit",
        ) from None
    key_lines = top_level_key_lines(fm_text)
    problems: list[Problem] = []
    errors: list[MemoryFormatError] = []  # every key is checked: the file's problems are reported at once
    values: dict[str, Any] = {}
    extra: list[tuple[str, Any]] = []
    for key, raw in data.items():
        line = key_lines.get(str(key))
        if not isinstance(key, str):
            errors.append(
                MemoryFormatError(
                    "a frontmatter key must be text",
                    path,
                    line,
                    str(key),
                    hint=f"quote the key ('{key}': …) or rename it",
                )
            )
            continue
        if key in KNOWN_KEYS:
            try:
                values[key] = (
                    _check_id(raw, path, line) if key == "id" else check_key(key, raw, path, line, problems)
                )
            except MemoryFormatError as exc:
                errors.append(exc)
            continue
        extra.append((key, jsonable(raw)))
        if key not in MERGE_KEYS and key not in (REVIEW_KEY, CITES_KEY):  # ee's own keys, not unknown ones
            problems.append(
                Problem(
                    code="unknown_key",
                    severity="warning",
                    message=f"frontmatter key {key!r} is not one of ee's: it is kept as an extra field "
                    f"(usable in query filters: filters.{key})",
                    path=path,
                    line=line,
                    key=key,
                    repair=f"nothing to do if you meant an extra field; if it is a typo, use one of: "
                    f"{', '.join(KNOWN_KEYS)}",
                )
            )
    if not body_clean:
        errors.append(
            MemoryFormatError(
                "the memory has no body text",
                path,
                body_line,
                hint="write the memory's text below the '---' line",
            )
        )
    if errors:
        raise MemoryFormatError.every(errors)
    memory = Memory(
        id=values.get("id") or fallback_id,
        body=body_clean,
        path=path,
        level=values.get("level") or "semantic",
        kind=values.get("kind") or "fact",
        tags=values.get("tags", ()),
        trust=values.get("trust"),
        confidence=values.get("confidence"),
        utility=values["utility"] if values.get("utility") is not None else 0.5,
        importance=values["importance"] if values.get("importance") is not None else 0.5,
        created=values.get("created"),
        valid_from=values.get("valid_from"),
        valid_to=values.get("valid_to"),
        source=values.get("source", ()),
        links=values.get("links", ()),
        paths=values.get("paths", ()),
        redacted=values.get("redacted", ()),
        extra=tuple(extra),
        has_frontmatter=True,
        body_line=body_line,
    )
    return memory, problems


def top_level_key_lines(fm_text: str) -> dict[str, int]:
    """Top-level keys → 1-based line in the *file* (the frontmatter starts on line 2)."""
    lines: dict[str, int] = {}
    for number, line in enumerate(fm_text.split("\n")):
        match = _TOP_KEY_RE.match(line)
        if match:
            key = match.group(1).strip().strip("'\"")
            lines.setdefault(key, number + 2)
    return lines


def _load_mapping(fm_text: str, path: str) -> dict[Any, Any]:
    yaml = _yaml()
    if len(fm_text.encode("utf-8", "surrogatepass")) > MAX_FRONTMATTER_BYTES:
        raise MemoryFormatError(
            f"frontmatter is larger than {MAX_FRONTMATTER_BYTES // 1024} KiB",
            path,
            2,
            hint="move long text into the body; frontmatter holds short fields",
        )
    _refuse_duplicates(fm_text, path)
    fast = _fast_mapping(fm_text)
    if fast is not None:
        return fast
    if _ALIAS_HINT_RE.search(fm_text):
        _refuse_aliases(fm_text, path)
    try:
        data = yaml.load(fm_text, Loader=_loader())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark is not None else 2
        problem = (exc.problem or "invalid YAML").strip()
        context = exc.context_mark
        if exc.context and "flow" in exc.context and context is not None and context.line + 2 != line:
            # e.g. an unclosed '[': the parser notices on a later line; name where the trouble began.
            problem += f" ({exc.context.strip()} started on line {context.line + 2})"
            line = context.line + 2
        raise MemoryFormatError(
            f"invalid YAML in frontmatter: {problem}",
            path,
            line,
            hint="fix the YAML on that line (quote a value that holds ': ' or starts with '[', '&', '*'…)",
        ) from None
    except yaml.YAMLError as exc:
        raise MemoryFormatError(
            f"invalid YAML in frontmatter: {exc}", path, 2, hint="fix the YAML between the '---' lines"
        ) from None
    except (ValueError, OverflowError) as exc:  # a date that does not exist; a number of 5,000 digits
        number = "the number" in str(exc)
        raise MemoryFormatError(
            f"invalid value in frontmatter: {exc}",
            path,
            _line_of_bad_value(fm_text),
            hint="write a smaller number, or quote it to keep it as text"
            if number
            else "write a real date (RFC 3339, e.g. 2026-12-01T09:00:00Z), or quote the value",
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise MemoryFormatError(
            f"frontmatter must be a mapping of keys to values, not {type(data).__name__}",
            path,
            2,
            hint="write one 'key: value' per line between the '---' lines",
        )
    return data


# ---------------------------------------------------------------------------------------- the fast path
# Frontmatter as ee writes it (and as most people write it): one `key: value` per line, values plain words,
# numbers, true/false/null, times, quoted strings without escapes, flow lists of those, and a block list
# of `{type: …, to: …}` links. Read by hand ~10x faster than PyYAML constructs it; anything else, or
# anything in doubt, returns None and goes to PyYAML. A property test holds the two to the same result.
_FAST_KEY_RE = _lazy(r"([A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?")
_FAST_PLAIN_RE = _lazy(r"[A-Za-z][A-Za-z0-9_./@+=~%-]*(?::[A-Za-z0-9_./@+=~%-]+)*")
_FAST_INT_RE = _lazy(r"-?(?:0|[1-9][0-9]*)")
_FAST_FLOAT_RE = _lazy(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")
_FAST_QUOTED_RE = _lazy(r'"[^"\\]*"|\'[^\']*\'')
_FAST_LINK_RE = _lazy(r"( +)- \{type: ([A-Za-z_]+), to: ([A-Za-z0-9][A-Za-z0-9_.:-]*)\}")
_FAST_SPECIAL = {"null": None, "true": True, "false": False}
# What YAML refuses to read anywhere in a document (the fast path must not be more lenient). Written as
# the small set refused, not the large set allowed: that one takes ~7 ms to compile.
_NOT_PRINTABLE_RE = _lazy("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")


def _fast_mapping(fm_text: str) -> dict[str, Any] | None:
    if any(c in fm_text for c in "#\t\x85\u2028\u2029") or _NOT_PRINTABLE_RE.search(fm_text):
        return None  # comments, tabs, Unicode line breaks, what YAML refuses: PyYAML decides
    out: dict[str, Any] = {}
    open_list: list[Any] | None = None  # the links list being read, after a bare `key:`
    for raw in fm_text.split("\n"):
        line = raw.removesuffix("\r")
        if "\r" in line:
            return None
        if not line.strip():
            continue
        if line[0] == " ":
            link = _FAST_LINK_RE.fullmatch(line)
            if open_list is None or link is None or any(_fast_scalar(v) != v for v in (link[2], link[3])):
                return None
            open_list.append({"type": link[2], "to": link[3]})
            continue
        match = _FAST_KEY_RE.fullmatch(line)
        if match is None or match[1] in out or match[1].lower() in _YAML11_WORDS:
            return None  # `on:` or `yes:` is a boolean key in YAML 1.1
        key, text = match[1], match[2]
        if text is None or not text.strip():
            out[key] = open_list = []
            continue
        open_list = None
        value = _fast_value(text)
        if value is _NO:
            return None
        out[key] = value
    # A bare `key:` with no list lines below it is null in YAML.
    return {k: (None if v == [] and _bare(fm_text, k) else v) for k, v in out.items()}


_NO = object()


def _bare(fm_text: str, key: str) -> bool:
    return re.search(rf"^{re.escape(key)}:[ \r]*$", fm_text, re.MULTILINE) is not None


def _fast_value(text: str) -> Any:
    if text != text.strip():
        return _NO
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        if not inner:
            return []
        items = [_fast_scalar(part.strip()) for part in inner.split(",")]
        if any(item is _NO or not isinstance(item, str) for item in items):
            return _NO  # numbers or nulls inside a list: let YAML decide
        if any(part.strip() == "" for part in inner.split(",")) or ('"' in inner and "," in inner):
            return _NO  # a comma inside a quoted item would have been split
        return items
    return _fast_scalar(text)


def _fast_scalar(text: str) -> Any:
    if text in _FAST_SPECIAL:
        return _FAST_SPECIAL[text]
    if _FAST_QUOTED_RE.fullmatch(text):
        return text[1:-1]
    if _TIME_RE.match(text):
        import datetime as dt

        try:  # YAML gives a datetime (and refuses a date that does not exist); both become this string
            dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            return _NO
        return text
    if _FAST_INT_RE.fullmatch(text):
        # (a number that may be beyond MAX_INT: PyYAML decides, and it is reported at file:line)
        return int(text) if len(text) < 19 else _NO
    if _FAST_FLOAT_RE.fullmatch(text):
        return float(text)
    if _FAST_PLAIN_RE.fullmatch(text) and text.lower() not in _YAML11_WORDS:
        return text
    return _NO


def _line_of_bad_value(fm_text: str) -> int:
    """The file line of the first frontmatter line that YAML cannot construct on its own (2 if none)."""
    yaml = _yaml()
    for number, line in enumerate(fm_text.split("\n")):
        try:
            yaml.load(line, Loader=_loader())
        except (ValueError, OverflowError):
            return number + 2
        except yaml.YAMLError:
            continue
    return 2


def _refuse_duplicates(fm_text: str, path: str) -> None:
    seen: dict[str, int] = {}
    for number, line in enumerate(fm_text.split("\n")):
        match = _TOP_KEY_RE.match(line)
        if not match:
            continue
        key = match.group(1).strip().strip("'\"")
        if key in seen:
            raise MemoryFormatError(
                f"duplicate key {key!r} (first on line {seen[key]})",
                path,
                number + 2,
                key,
                hint=f"keep one {key!r} line and delete the other",
            )
        seen[key] = number + 2


def _refuse_aliases(fm_text: str, path: str) -> None:
    line = alias_line(fm_text)
    if line is not None:
        raise MemoryFormatError(
            "YAML anchors and aliases (&name / *name) are not allowed in frontmatter",
            path,
            line + 2,
            hint="write the value out in full, or quote it if it starts with '&' or '*'",
        )


def alias_line(text: str) -> int | None:
    """The line (from 0) of the first YAML anchor or alias in ``text``, None when it has none (or is not
    YAML: its loader then reports the syntax error with its line). Anchors and aliases are how YAML bombs
    multiply (a few lines that expand to gigabytes); no file ee reads needs them."""
    yaml = _yaml()
    try:
        for token in yaml.scan(text, Loader=_loader()):
            if isinstance(token, yaml.AliasToken | yaml.AnchorToken):
                return int(token.start_mark.line)
    except yaml.MarkedYAMLError:
        return None
    return None


def _refuse_secret_id(value: str, path: str, line: int | None) -> None:
    """A hand-written id holding a secret makes the file unreadable (reported at ``file:line``, skipped
    like any malformed file): an id is printed everywhere (search, lists, packs, exports, commit
    trailers) and cannot be masked and still name the memory."""
    from ee.policy.secrets import find_secrets

    found = find_secrets(value)
    if found:
        raise problem_error(
            f"id holds a secret ({found[0].cls})",
            path,
            line,
            "id",
            "write another id (or delete the key: ee derives one from the file name), rotate the secret, "
            "and take it out of git history if it was committed",
        )


def _check_id(raw: Any, path: str, line: int | None) -> str | None:
    """The ``id`` key's value (None: none given, the path gives one), refused when it is not a valid id or
    holds a secret."""
    if raw is None:
        return None
    value = scalar_text(raw)
    if value is None or not is_valid_id(value):
        raise problem_error(
            f"id {raw!r} is not a valid memory id",
            path,
            line,
            "id",
            "use letters, digits, '_', '-', '.' or ':' (ee writes mem_<ULID>), or delete the key",
        )
    if not ID_RE.match(value):
        _refuse_secret_id(value, path, line)
    return value


def id_from_path(path: str) -> str:
    """A stable id for a file without one: its path below memories/, without the suffix, with every run of
    other characters than ``[A-Za-z0-9_.:-]`` as ``-`` (see :func:`fit_id`)."""
    stem = path.removeprefix("memories/").removesuffix(".md")
    return fit_id(re.sub(r"[^A-Za-z0-9_.:-]+", "-", stem).strip("-.") or "memory", path)


def fit_id(derived: str, path: str) -> str:
    """``derived``, an id made from ``path``, when every command accepts it (:func:`is_valid_id`); else a
    valid one: what is left after its first letter or digit, ``..`` as ``.``, cut to 119 characters, then
    ``-`` and a digest of the path (two such files keep two ids). A name such as ``_draft.md``, ``v1..2.md``
    or one of 200 characters would otherwise give a memory that is listed but no command can name (and
    whose events file name is too long for the file system)."""
    if is_valid_id(derived):
        return derived
    import hashlib

    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    start = re.search(r"[A-Za-z0-9]", derived)
    head = re.sub(r"\.{2,}", ".", derived[start.start() :] if start else "")[:119].rstrip("-.:_")
    return f"{head}-{digest}" if head else f"memory-{digest}"


# ---------------------------------------------------------------------------------------------- writing

_PLAIN_RE = _lazy(r"^[A-Za-z0-9_/][A-Za-z0-9_./@+=~:-]*(?: [A-Za-z0-9_./@+=~:-]+)*$")
_TIME_RE = _lazy(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_EXTRA_KEY_RE = _lazy(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _scalar(value: Any, in_flow: bool = False) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _yaml_float(value)
    if isinstance(value, int):
        return repr(value)
    text = str(value)
    if _TIME_RE.match(text):
        return text
    safe = _PLAIN_RE.match(text) and not (in_flow and any(c in text for c in ",[]{}"))
    if safe and not _misread(text):
        return text
    return _double_quoted(text)


# Plain words that YAML 1.1 reads as something other than text; anything else starting with a letter and
# made of letters, digits, '_', '-', '.', '/' is plain text in YAML 1.1 and 1.2 alike.
_YAML11_WORDS = frozenset(["y", "n", "yes", "no", "on", "off", "true", "false", "null"])
_SURELY_TEXT_RE = _lazy(r"[A-Za-z][A-Za-z0-9_./-]*")


@functools.lru_cache(maxsize=8192)
def _misread(text: str) -> bool:
    """Would YAML read ``text``, written plain, as something else (a bool, number, date, null, mapping…)?

    Checked in block and in flow context (``[:0]`` is not YAML, ``:0`` is). Cached: tags repeat.
    """
    if _SURELY_TEXT_RE.fullmatch(text) and text.lower() not in _YAML11_WORDS:
        return False
    yaml = _yaml()
    try:
        return yaml.load(text, Loader=_loader()) != text or yaml.load(f"[{text}]", Loader=_loader()) != [text]
    except yaml.YAMLError:
        return True


# Characters a YAML double-quoted scalar may not hold raw: C0/C1 controls and DEL (PyYAML refuses them),
# and the Unicode line breaks (YAML folds them). JSON escapes only C0, so the rest is escaped here.
_YAML_UNSAFE_RE = _lazy("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def _double_quoted(text: str) -> str:
    import json  # (only a scalar that needs quotes: most new files have none)

    quoted = json.dumps(text, ensure_ascii=False)
    return _YAML_UNSAFE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _quoted_key(key: str) -> str:
    import json

    return json.dumps(key)


def _yaml_float(value: float) -> str:
    """A float as YAML 1.1 reads it back: PyYAML wants a '.' before an exponent (``1.0e-05``)."""
    if value != value:  # NaN (no math import for it)
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" in text and "." not in text:
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _json_flow(value: Any) -> str:
    """A JSON-ready value (from an import's ``extra``) as a YAML flow value that reads back equal."""
    if isinstance(value, dict):
        pairs = (f"{_double_quoted(str(k))}: {_json_flow(v)}" for k, v in sorted(value.items()))
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_json_flow(item) for item in value) + "]"
    if isinstance(value, str):
        return _double_quoted(value)
    return _scalar(value)


def _emit_value(key: str, value: Any) -> str:
    if isinstance(value, list | tuple):
        if key == "links":
            if not value:
                return f"{key}: []\n"
            items = "".join(
                f"  - {{type: {_scalar(link.type, True)}, to: {_scalar(link.to, True)}}}\n" for link in value
            )
            return f"{key}:\n{items}"
        if key == "source" and len(value) == 1:
            return f"{key}: {_scalar(value[0])}\n"
        return f"{key}: [{', '.join(_scalar(item, True) for item in value)}]\n"
    return f"{key}: {_scalar(value)}\n"


def render_new(fields: Mapping[str, Any], body: str, extra: Mapping[str, Any] | None = None) -> str:
    """The text of a new memory file: frontmatter keys in ee's order (None values left out), then the body.

    ``extra`` keys (unknown to ee, kept from an import) follow as JSON flow values, which YAML reads.
    """
    lines = ["---\n"]
    for key in KNOWN_KEYS:
        value = fields.get(key)
        if value is None or (key in ("links", "paths", "redacted", "source") and not value):
            continue
        lines.append(_emit_value(key, value))
    for key, value in sorted((extra or {}).items()):
        if key in KNOWN_KEYS or not _EXTRA_KEY_RE.match(key):
            raise UsageError(
                f"extra key {key!r} is not usable",
                "name extra keys with letters, digits, '_' and '-' (not a key ee knows)",
            )
        # A key YAML 1.1 reads as something else (on, yes, null, 1_0) is written quoted.
        name = key if _scalar(key) == key else _quoted_key(key)
        lines.append(f"{name}: {_json_flow(value)}\n")
    lines.append("---\n")
    return "".join(lines) + body.strip() + "\n"


def new_memory(fields: Mapping[str, Any], body: str, path: str) -> Memory:
    """The memory :func:`render_new` writes, built without parsing (``parse(render_new(…))`` agrees)."""

    def texts(key: str) -> tuple[str, ...]:
        return tuple(fields.get(key) or ())

    return Memory(
        id=fields["id"],
        body=body.strip(),
        path=path,
        level=fields.get("level") or "semantic",
        kind=fields.get("kind") or "fact",
        tags=texts("tags"),
        trust=fields.get("trust"),
        confidence=None if fields.get("confidence") is None else float(fields["confidence"]),
        utility=0.5 if fields.get("utility") is None else float(fields["utility"]),
        importance=0.5 if fields.get("importance") is None else float(fields["importance"]),
        created=fields.get("created"),
        valid_from=fields.get("valid_from"),
        valid_to=fields.get("valid_to"),
        source=texts("source"),
        links=tuple(fields.get("links") or ()),
        paths=texts("paths"),
        redacted=texts("redacted"),
        body_line=_line_count(fields) + 3,
    )


def _line_count(fields: Mapping[str, Any]) -> int:
    return sum(
        _emit_value(key, fields[key]).count("\n")
        for key in KNOWN_KEYS
        if fields.get(key) is not None
        and not (key in ("links", "paths", "redacted", "source") and not fields[key])
    )


def update(text: str, changes: Mapping[str, Any], path: str = "") -> str:
    """Return ``text`` with the frontmatter keys in ``changes`` set (or removed, for :data:`DELETE`).

    Keys not in ``changes`` keep their exact original text; the body is never touched. Lines ee writes use
    the file's own line ending (CRLF stays CRLF), and a byte-order mark stays.
    """
    bom = _BOM if text.startswith(_BOM) else ""
    text = text.removeprefix(_BOM)
    fm_text, body, body_line = split(text)
    first_line = text.split("\n", 1)[0] + "\n"
    newline = "\r\n" if first_line.endswith("\r\n") else "\n"
    if fm_text is None:
        head = "".join(_emit_value(k, v) for k, v in changes.items() if v is not DELETE and v is not None)
        if not head:
            return bom + text
        return bom + _with_newline("---\n" + head + "---\n", newline) + text
    _load_mapping(fm_text, path)  # validates: never edit a file we cannot read
    rt = _round_trip_yaml(fm_text)
    data = rt.load(fm_text) or _empty_map()
    old_spans = _key_spans(data, fm_text)
    for key, value in changes.items():
        if value is DELETE:
            data.pop(key, None)
        else:
            _set_rt(rt, data, key, value)
    import io

    stream = io.StringIO()
    rt.dump(data, stream)
    new_text = stream.getvalue()
    new_spans = _key_spans(rt.load(new_text), new_text)
    for key, value in changes.items():
        if key in new_spans and not isinstance(value, list | tuple):
            new_spans[key] = new_spans[key].replace(_placeholder(key), _scalar(value), 1)
    prefix = old_spans.pop("", "")
    out = [prefix]
    for key in data:
        if key not in old_spans:
            out.append(_with_newline(new_spans[key], newline))
        elif key in changes:
            out.append(_keep_trailing_comments(old_spans[key], _with_newline(new_spans[key], newline)))
        else:
            out.append(old_spans[key])
    joined = "".join(out)
    if joined and not joined.endswith("\n"):
        joined += newline
    lines = _lines(text)
    closing = lines[body_line - 2]
    return bom + first_line + joined + closing + body


def _keep_trailing_comments(old: str, new: str) -> str:
    """Comment and blank lines that ended a key's old text end its new text too.

    They introduce what follows (the next key), but ruamel ties them to the key's last list entry: it
    drops them with that entry, or leaves them in the middle when an entry is appended.
    """
    old_lines = _lines(old)
    cut = len(old_lines)
    while cut > 1 and (not old_lines[cut - 1].strip() or old_lines[cut - 1].lstrip().startswith("#")):
        cut -= 1
    trailing = old_lines[cut:]
    if not trailing:
        return new
    new_lines = _lines(new)
    for start in range(1, len(new_lines) - len(trailing) + 1):
        if new_lines[start : start + len(trailing)] == trailing:
            del new_lines[start : start + len(trailing)]
            break
    return "".join(new_lines + trailing)


def _lines(text: str) -> list[str]:
    """``text`` cut after each line feed only (``str.splitlines`` also cuts at form feeds, U+2028…)."""
    parts = text.split("\n")
    out = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _with_newline(text: str, newline: str) -> str:
    return text if newline == "\n" else text.replace("\r\n", "\n").replace("\n", newline)


def _round_trip_yaml(fm_text: str) -> Any:
    from ruamel.yaml import YAML  # imported lazily: only edits pay for it

    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096
    # Keep the file's own block-sequence indentation for the keys ee rewrites.
    match = re.search(r"^[^\s#][^\n]*:\s*\n( *)- ", fm_text, re.MULTILINE)
    offset = len(match.group(1)) if match else 2
    rt.indent(mapping=2, sequence=offset + 2, offset=offset)
    return rt


def _empty_map() -> Any:
    from ruamel.yaml.comments import CommentedMap

    return CommentedMap()


def _set_rt(rt: Any, data: Any, key: str, value: Any) -> None:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if key == "links":
        items = []
        for link in value:
            entry = CommentedMap([("type", _rt_text(link.type)), ("to", _rt_text(link.to))])
            entry.fa.set_flow_style()
            items.append(entry)
        value = items
    elif isinstance(value, list | tuple):
        value = [_rt_text(item) for item in value]
    current = data.get(key)
    if isinstance(value, list) and isinstance(current, CommentedSeq) and len(current):
        # In place, reusing the entries that stay (with their comments): keeps the list's style and quoting.
        old_items = list(current)
        old_comments = dict(current.ca.items)
        where = {_rt_key(item): index for index, item in enumerate(old_items)}
        new_items: list[Any] = []
        comments: dict[int, Any] = {}
        for item in value:
            index = where.get(_rt_key(item))
            if index is None:
                new_items.append(item)
                continue
            if index in old_comments:
                comments[len(new_items)] = old_comments[index]
            new_items.append(old_items[index])
        current[:] = new_items
        current.ca.items.clear()
        current.ca.items.update(comments)
        return
    if isinstance(value, list):
        seq = CommentedSeq(value)
        if key != "links":
            seq.fa.set_flow_style()
        data[key] = seq
        return
    # A scalar is written by ee's own emitter (ruamel rounds some floats and writes 1e-05, which YAML 1.1
    # reads as text): ruamel dumps a placeholder that update() replaces.
    data[key] = _placeholder(key)


def _placeholder(key: str) -> str:
    return f"eeplaceholder{sum(map(ord, key))}x{len(key)}"


def _rt_text(value: Any) -> Any:
    """Quote a string ruamel (YAML 1.2) writes plain but PyYAML (YAML 1.1) misreads (``yes``, ``1_0``)."""
    if isinstance(value, str) and _misread(value):
        from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

        if value.isprintable():
            return SingleQuotedScalarString(value)
        return DoubleQuotedScalarString(value)
    return value


def _rt_key(item: Any) -> Any:
    if isinstance(item, Link):
        return ("link", item.type, item.to)
    if isinstance(item, Mapping):
        return ("link", str(item.get("type")), str(item.get("to")))
    return str(item)


def _key_spans(data: Any, fm_text: str) -> dict[str, str]:
    """Top-level key → its exact text (key line through the line before the next key). '' → leading text."""
    lines = _YAML_BREAK_RE.split(fm_text)
    lines = [lines[i] + (lines[i + 1] if i + 1 < len(lines) else "") for i in range(0, len(lines), 2)]
    if lines and not lines[-1]:
        lines.pop()
    if not hasattr(data, "lc") or not data:
        return {"": fm_text}
    starts = [(data.lc.key(key)[0], key) for key in data]
    starts.sort()
    spans = {"": "".join(lines[: starts[0][0]])}
    for index, (start, key) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(lines)
        spans[key] = "".join(lines[start:end])
    return spans
