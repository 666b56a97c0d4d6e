"""``.ee/config.toml`` and ``.ee/config.local.toml``: optional settings, each with a default, checked when
read. The shared file may be committed (a team's settings); the local one is the person's own (ignored by
``.ee/*``), and each key it sets overrides the shared file's. A private setting (:data:`PRIVATE_KEYS`: one
that deletes a person's local evidence) applies only from the local file, or from the shared file when git
does not track it: a cloned repository's committed config must not delete this clone's evidence."""

from __future__ import annotations

import contextlib
import errno
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.errors import ConfigError, NotRegularFile

if TYPE_CHECKING:  # (every command reads its config: ee.model is loaded only where a problem is built)
    from ee.model import Problem

CONFIG_PATH = ".ee/config.toml"
LOCAL_CONFIG_PATH = ".ee/config.local.toml"  # the person's own settings, never committed (.ee/* is ignored)
# The settings that delete or expose a person's private local data. Of all settings only the retention
# deletes anything (evidence older than it, which may be its only copy once the harness dropped the
# transcript); the others keep, hide or refuse (docs/security.md lists each). A tracked config.toml that
# sets one is a cloned repository's word, not the person's: it is withheld (Config.withheld).
PRIVATE_KEYS = ("sessions.retention_days",)
MAX_INT = 2**63 - 1  # the largest whole number ee reads from a file (ee.store.frontmatter.MAX_INT)
# The relevance floor of queries and packs ([query] min_relevance; see ee.query.relevance for the scale).
DEFAULT_MIN_RELEVANCE = 0.8

DEFAULT_CONFIG_TEXT = """\
# ee settings for this workspace. Every key is optional; the values shown are the defaults.
# This file may be committed and shared. Your own settings go in .ee/config.local.toml (same keys, never
# committed), which overrides this file; [sessions] retention_days applies only from there (or from this
# file while git does not track it), so a cloned repository cannot delete your session evidence.

[store]
# max_body_bytes = 262144      # larger memory files are reported and skipped
# branch = ""                  # set by `ee init --branch NAME`: memories/ is a worktree of that branch

[lock]
# timeout = 30                 # seconds a writer waits for another writer

[model]
# path = ""                    # a model2vec folder outside the repository; empty = the shipped one
# transformer = true           # answer with the transformer arm once every memory has its vector
# transformer_max_memories = 50000   # a larger store keeps the static arm (too long to embed)

[hooks]
# block = false                # pre-commit: block (not just warn) on failure / anti-pattern memories
# timeout = 2.0                # seconds a hook may take before git goes on without it (under 3600)

[sync]
# remote = "origin"
# strategy = "rebase"          # or "merge"

[redaction]
# allow_bypass = false         # may a query ask for redaction.policy = "bypass"?

[server]
# autostart = true             # the first command starts `ee watch` in the background (EE_NO_SERVER=1: never)
# idle_timeout = 900           # seconds without a client before that server stops

[query]
# min_relevance = 0.8          # drop hits whose calibrated relevance is lower (0 = keep everything)

[curate]
# harmful_threshold = 2        # harmful feedback events that put a memory up for review
# agent_max_age_days = 14      # an agent's unreviewed memory older than this comes up for review
# agent_max_count = 50         # ... and all of an agent's, once it has more unreviewed memories than this
# unused_days = 90             # a memory no context pack included for this many days comes up for review

[sessions]
# import = true                # `ee import session` and the agent hooks import transcripts
# search = true                # search and context return session evidence beside memories
# min_relevance = 0.02        # the relevance floor of evidence (--min-relevance sets both)
# retention_days = 0           # evidence older than this is deleted at the next import (0 = keep it;
#                              # applied only from .ee/config.local.toml or an untracked config.toml)
# max_file_bytes = 268435456   # a larger transcript is refused
"""

# section.key → (type, default)
_SCHEMA: dict[str, tuple[type | tuple[type, ...], Any]] = {
    "store.max_body_bytes": (int, 256 * 1024),
    "store.branch": (str, ""),
    "lock.timeout": ((int, float), 30.0),
    "model.path": (str, ""),
    "model.transformer": (bool, True),
    "model.transformer_max_memories": (int, 50_000),
    "hooks.block": (bool, False),
    "hooks.timeout": ((int, float), 2.0),
    "sync.remote": (str, "origin"),
    "sync.strategy": (str, "rebase"),
    "redaction.allow_bypass": (bool, False),
    "server.autostart": (bool, True),
    "server.idle_timeout": ((int, float), 900.0),
    "query.min_relevance": ((int, float), DEFAULT_MIN_RELEVANCE),
    "curate.harmful_threshold": (int, 2),
    "curate.agent_max_age_days": ((int, float), 14.0),
    "curate.agent_max_count": (int, 50),
    "curate.unused_days": ((int, float), 90.0),
    "sessions.import": (bool, True),
    "sessions.search": (bool, True),
    "sessions.min_relevance": ((int, float), 0.02),
    "sessions.retention_days": ((int, float), 0),
    "sessions.max_file_bytes": (int, 256 * 1024 * 1024),
}


@dataclass(frozen=True, slots=True)
class Config:
    """The settings given (``values``, by dotted key) and the whole parsed file (``sections``)."""

    values: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)
    # private settings (PRIVATE_KEYS) that only a config.toml git tracks sets: not applied, said by the user
    withheld: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        if key in self.values:
            return self.values[key]
        return _SCHEMA[key][1]

    def section(self, name: str) -> dict[str, Any]:
        """A whole table, e.g. ``[pack.custom]`` for the custom profile's quotas."""
        node: Any = self.sections
        for part in name.split("."):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return node if isinstance(node, dict) else {}


def withheld_problems(config: Config) -> list[Problem]:
    """What to say of the private settings only a tracked config.toml sets (not applied): one text for
    ``ee doctor``'s finding and the session import's ``degraded`` note."""
    value = config.withheld.get("sessions.retention_days")
    if not value:  # (0, keep everything, is the default: nothing to say)
        return []
    from ee.model import Problem

    return [
        Problem(
            "retention_not_applied",
            "warning",
            f"[sessions] retention_days = {value!r} is set only in {CONFIG_PATH}, which git tracks (a "
            "repository's setting, not yours): it is not applied, no evidence was deleted",
            CONFIG_PATH,
            repair=f"move retention_days to {LOCAL_CONFIG_PATH} to apply it (your own settings, never "
            "committed), or remove it from the shared file",
        )
    ]


def default(dotted: str) -> Any:
    """The value a setting has when the config does not set it (``hooks.timeout`` → 2.0)."""
    return _SCHEMA[dotted][1]


_HEADER_RE = re.compile(r"\s*\[[A-Za-z0-9_.-]+\]\s*(?:#.*)?")


def _only_comments(text: str) -> bool:
    return all(
        not line.strip() or line.lstrip().startswith("#") or _HEADER_RE.fullmatch(line)
        for line in text.splitlines()
    )


def _toml() -> Any:
    import tomllib

    return tomllib


STATE_NAME = ".ee"  # ee's private folder (ee.store.files.STATE_DIR)


def open_regular(path: Path | str, flags: int, mode: int = 0o644) -> int:
    """A file descriptor of ``path`` opened with ``flags`` (I/O blocking as usual), or NotRegularFile when
    it is anything but a regular file of this user. The one way ee opens a file of ``.ee/`` (and feedback
    events), whatever it does with it: read, create, truncate, append.

    * A symlink is never followed (``O_NOFOLLOW``): a link in its place fails the open itself. Below a
      folder named ``.ee``, every folder on the way is opened the same way, one by one, and must be a
      folder of this user; with ``O_CREAT`` a missing one is created (``.ee`` itself may be a person's
      own link: :mod:`ee.discovery` checks it). So a link a cloned repository committed as
      ``.ee/watch.pid`` or ``.ee/hooks`` makes ee write nothing through it.
    * Opened through :func:`open_file`: a FIFO in its place is refused at once instead of blocking the
      command on the open or the read; what was opened is checked, not the name.
    * ``O_EXCL`` is the caller's, where it creates a file that must be new (a temporary file)."""
    parts = Path(path).parts
    below = max((i for i, part in enumerate(parts) if part == STATE_NAME), default=None)
    if below is None:
        folder_fd, name = None, os.fspath(path)
    else:
        folder_fd = _open_folders(Path(*parts[: below + 1]), parts[below + 1 : -1], bool(flags & os.O_CREAT))
        name = parts[-1]
    try:
        fd, info = open_file(name, flags, mode, dir_fd=folder_fd, shown=str(path))
    finally:
        if folder_fd is not None:
            os.close(folder_fd)
    try:
        _check_owner(info, path=path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(
    path: Path | str,
    flags: int = os.O_RDONLY,
    mode: int = 0o644,
    *,
    follow_links: bool = False,
    dir_fd: int | None = None,
    shown: str | None = None,
) -> tuple[int, os.stat_result]:
    """The one FIFO-safe open: a descriptor of ``path`` (I/O blocking as usual) and its ``fstat``, or
    NotRegularFile when what was opened is no regular file (its ``strerror`` says "Is a directory" or "Not
    a regular file"). Every open of a file a repository or a person may have put a FIFO, device or folder
    in the place of goes through here (:func:`open_regular`, memory files, docs).

    * Opened without waiting (``O_NONBLOCK``), so a FIFO is refused at once instead of blocking the open
      or the read; what was opened is checked, not the name (no race between a check and the open).
    * Unless ``follow_links``, a symlink fails the open itself (``O_NOFOLLOW``; NotRegularFile).
    """
    shown = shown or os.fspath(path)
    nofollow = 0 if follow_links else os.O_NOFOLLOW
    try:
        fd = os.open(path, flags | nofollow | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise NotRegularFile(errno.ELOOP, "Is a symbolic link (ee follows none here)", shown) from None
        raise
    try:
        info = os.fstat(fd)
        _check_regular(info, shown)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def check_database(path: Path) -> None:
    """A SQLite database ee keeps under ``.ee/``, and its WAL and shared-memory files, must each be a
    regular file of this user, no link, when there (NotRegularFile else): SQLite opens them by name, and a
    link at the ``-wal`` file would have it write pages over the file the link names. (One that is not
    there yet SQLite makes itself; open it with ``nofollow=1``.)

    Each is looked at (``lstat``), never opened: SQLite's locks are POSIX advisory locks, which closing
    *any* descriptor of the file in this process drops, so opening and closing a file another connection
    of this process holds would take its locks away (SQLite then answers "disk I/O error")."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        shown = path.parent / name
        try:
            info = os.lstat(shown)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise NotRegularFile(errno.ELOOP, "Is a symbolic link (ee follows none here)", str(shown))
        _check_regular(info, str(shown))
        _check_owner(info, path=shown)


def _check_regular(info: os.stat_result, shown: str) -> None:
    """NotRegularFile unless ``info`` is a regular file's (its ``strerror`` says what it is instead)."""
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFile(
            errno.EINVAL, "Is a directory" if stat.S_ISDIR(info.st_mode) else "Not a regular file", shown
        )


def write_private(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` (truncated, or created), a file ee keeps under ``.ee/``, through
    :func:`open_regular`: a link in its place, or on the way below ``.ee/``, is refused, never followed."""
    with open(open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as handle:
        handle.write(data)


def state_folder(path: Path | str) -> Path:
    """``path`` (a folder under ``.ee/``), created when missing, once every folder from ``.ee/`` down to it
    is a real folder of this user, not a link (the check :func:`open_regular` makes on its way). For a
    folder ee then fills by name (index segments, as-of views, the derived cache): NotRegularFile else."""
    parts = Path(path).parts
    below = max((i for i, part in enumerate(parts) if part == STATE_NAME), default=None)
    if below is None:
        raise ValueError(f"{path} is not under {STATE_NAME}/")
    os.close(_open_folders(Path(*parts[: below + 1]), parts[below + 1 :], True))
    return Path(path)


def _open_folders(top: Path, names: tuple[str, ...], create: bool) -> int:
    """A descriptor of ``top/names…``, each name opened without following a link (made when ``create``)."""
    if create:
        top.mkdir(exist_ok=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = top
    try:
        _check_owner(os.fstat(fd), top)
        for name in names:
            where = where / name
            try:
                child = _open_folder(name, fd, create)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise NotRegularFile(
                        exc.errno,
                        "Is a symbolic link or not a folder (ee follows no link here)",
                        str(where),
                    ) from None
                raise
            os.close(fd)
            fd = child
            _check_owner(os.fstat(fd), where)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_folder(name: str, parent: int, create: bool) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):  # (made meanwhile by another ee process: checked below)
        os.mkdir(name, 0o755, dir_fd=parent)
    return os.open(name, flags, dir_fd=parent)


def _check_owner(info: os.stat_result, folder: Path | None = None, path: Path | str | None = None) -> None:
    if info.st_uid != os.geteuid():
        what = f"{folder} belongs" if folder else "Belongs"
        raise NotRegularFile(errno.EPERM, f"{what} to uid {info.st_uid}, not to you", str(path or folder))


def read_settings_file(path: Path | str, limit: int | None = None) -> str:
    """The text of a settings file; an OSError when it is not a regular file (:func:`open_regular`), or
    (``EFBIG``) when it holds more than ``limit`` characters: only ``limit + 1`` are ever read."""
    with open(open_regular(path, os.O_RDONLY), encoding="utf-8") as file:
        text = file.read(-1 if limit is None else limit + 1)
    if limit is not None and len(text) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit} characters", os.fspath(path))
    return text


# The most a config file may hold. ee's own, all comments, is ~5 kB; tomllib is slow on big values (a 10 MB
# array took 20 CPU-seconds), and a cloned repository's config.toml is read by every command and hook.
MAX_CONFIG_CHARS = 64 * 1024
# The longest a hook may take ([hooks] timeout is below it): the hooks' runner reads the setting itself, in
# shell, and keeps its default for a value not under it (ee.hooks.wiring writes this number into it).
MAX_HOOK_SECONDS = 3600


def load_config(root: Path) -> Config:
    """The settings of the workspace at ``root``: its ``.ee/config.toml``, then its ``.ee/config.local.toml``
    over it (key by key), each file read and checked on its own (each known key's type, then each value's
    range), then ``$EE_LOCK_TIMEOUT`` applied. A private setting the local file does not set is taken from
    config.toml only when git does not track that file; otherwise it goes to ``withheld``. A ConfigError
    names the file, the key and the fix."""
    shared_raw, shared = _checked(root / CONFIG_PATH, CONFIG_PATH)
    local_raw, local = _checked(root / LOCAL_CONFIG_PATH, LOCAL_CONFIG_PATH)
    withheld: dict[str, Any] = {}
    if any(key in shared and key not in local for key in PRIVATE_KEYS) and tracked(root, CONFIG_PATH):
        withheld = {key: shared.pop(key) for key in PRIVATE_KEYS if key in shared and key not in local}
    values = {**shared, **local}
    _apply_environment(values)
    return Config(values=values, sections=_merged(shared_raw, local_raw), withheld=withheld)


def _checked(path: Path, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """One settings file's tables and its known settings, type- and range-checked ({} when it is missing)."""
    try:
        raw = _read_toml(path, name)
        values = _typed_values(raw, path, name)
        _check_ranges(values, path, name)
    except ConfigError as exc:
        exc.details.setdefault("path", name)  # (ee doctor's finding names the file in error)
        raise
    return raw, values


def _merged(shared: dict[str, Any], local: dict[str, Any]) -> dict[str, Any]:
    """``shared``'s tables with ``local``'s keys over them, table by table (``[pack.custom]`` included)."""
    out = dict(shared)
    for key, value in local.items():
        below = out.get(key)
        out[key] = _merged(below, value) if isinstance(below, dict) and isinstance(value, dict) else value
    return out


def tracked(root: Path, rel: str) -> bool:
    """Whether git tracks ``rel`` in the repository at ``root`` (staged counts). When git cannot say (no
    repository, an error), the answer is yes: a private setting is then withheld, never applied."""
    from ee.git import runner

    proc = runner.run(["ls-files", "-z", "--", rel], root)
    return proc.returncode != 0 or bool(proc.stdout.strip(b"\0"))


def _read_toml(path: Path, name: str) -> dict[str, Any]:
    """A config file's tables ({} when there is no file)."""
    try:
        text = read_settings_file(path, MAX_CONFIG_CHARS)
        # The file ee writes holds only comments and table headers: no need to import the TOML parser.
        return {} if _only_comments(text) else dict(_toml().loads(text))
    except FileNotFoundError:
        return {}
    except (ValueError, UnicodeDecodeError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise ConfigError(f"{name}: {exc}", f"fix the TOML syntax in {path}") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(
            f"{name}: arrays or tables nested too deeply to read",
            f"remove the deeply nested value from {path} (ee's settings are flat)",
        ) from None
    except OSError as exc:  # a folder, a FIFO, a link, no permission, too large
        if exc.errno == errno.EFBIG:
            raise ConfigError(
                f"{name}: {exc.strerror}: ee reads no settings file that large",
                f"shorten {path} to the settings you need (docs/cli.md lists them)",
            ) from None
        raise ConfigError(
            f"{name}: cannot be read ({exc.strerror or exc})",
            f"make {path} a readable TOML file, or remove it to use the defaults",
        ) from None


# What a setting's type asks for, in a person's words (a wrong type's repair)
_WANTED: dict[type | tuple[type, ...], str] = {int: "a whole number", bool: "true or false", str: "text"}


def _typed_values(raw: dict[str, Any], path: Path, name: str) -> dict[str, Any]:
    """The known settings the file sets (``section.key`` → value), each of its schema's type."""
    values: dict[str, Any] = {}
    for dotted, (kind, _default) in _SCHEMA.items():
        section, key = dotted.split(".")
        table = raw.get(section, {})
        if not isinstance(table, dict) or key not in table:
            continue
        value = table[key]
        if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
            raise ConfigError(
                f"{name}: [{section}] {key} = {value!r} has the wrong type",
                f"set {key} to {_WANTED.get(kind, 'a number')} in {path}",
            )
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            # (a wait of 10**400 seconds cannot be added to a clock: no setting needs more than 64 bits)
            raise ConfigError(
                f"{name}: [{section}] {key} is a number beyond {MAX_INT}",
                f"set {key} to e.g. {_SCHEMA[dotted][1]!r} in {path}",
            )
        values[dotted] = value
    return values


def _check_ranges(values: dict[str, Any], path: Path, name: str) -> None:
    """Each value within what its setting means (a floor in [0, 1], a wait of 0 seconds or more, …)."""
    for dotted, floor in (("query.min_relevance", DEFAULT_MIN_RELEVANCE), ("sessions.min_relevance", 0.02)):
        value = values.get(dotted, floor)
        if not 0.0 <= value <= 1.0:
            section, key = dotted.split(".")
            raise ConfigError(
                f"{name}: [{section}] {key} = {value!r} is outside [0, 1]",
                f"set min_relevance between 0 (keep everything) and 1 in {path}",
            )
    if values.get("sync.strategy", "rebase") not in ("rebase", "merge"):
        raise ConfigError(f"{name}: [sync] strategy must be 'rebase' or 'merge'", f"edit {path}")
    idle = values.get("server.idle_timeout", 1.0)
    if not 0 < idle < math.inf:  # (NaN fails too)
        raise ConfigError(
            f"{name}: [server] idle_timeout = {idle!r} must be a positive number of seconds",
            f"set idle_timeout to e.g. 900 in {path}, or turn the server off with autostart = false",
        )
    # A wait of NaN seconds never ends (no time is past it); a negative one is no wait; neither is meant.
    # A hook's limit is a timer's (setitimer overflows past ~1e11 s), and the runner checks the same bound.
    for dotted, most in (("lock.timeout", math.inf), ("hooks.timeout", MAX_HOOK_SECONDS)):
        seconds = values.get(dotted, 0.0)
        if not 0 <= seconds < most:
            section, key = dotted.split(".")
            under = f" and under {most:g}" if most < math.inf else ""
            raise ConfigError(
                f"{name}: [{section}] {key} = {seconds!r} must be a number of seconds, 0 or more{under}",
                f"set {key} to e.g. {_SCHEMA[dotted][1]:g} in {path}",
            )
    largest = values.get("sessions.max_file_bytes", 1)
    if largest < 1:
        raise ConfigError(
            f"{name}: [sessions] max_file_bytes = {largest!r} must be a positive number of bytes",
            f"set max_file_bytes to e.g. {_SCHEMA['sessions.max_file_bytes'][1]} in {path}",
        )
    days = values.get("sessions.retention_days", 0)
    if not 0 <= days < math.inf:  # (a negative age keeps nothing, NaN everything: neither is meant)
        raise ConfigError(
            f"{name}: [sessions] retention_days = {days!r} must be a number of days, 0 or more",
            f"set retention_days to e.g. 90 in {path}, or 0 to keep all evidence",
        )
    if values.get("store.max_body_bytes", 1) < 1:
        raise ConfigError(
            f"{name}: [store] max_body_bytes = {values['store.max_body_bytes']!r} must be positive",
            f"set max_body_bytes to e.g. {_SCHEMA['store.max_body_bytes'][1]} in {path}",
        )


def _apply_environment(values: dict[str, Any]) -> None:
    """``$EE_LOCK_TIMEOUT`` over ``[lock] timeout``."""
    env_timeout = os.environ.get("EE_LOCK_TIMEOUT")
    if not env_timeout:
        return
    try:
        values["lock.timeout"] = float(env_timeout)
    except ValueError:
        values["lock.timeout"] = math.nan
    if not 0 <= values["lock.timeout"] < math.inf:
        raise ConfigError(
            f"EE_LOCK_TIMEOUT={env_timeout!r} is not a number of seconds, 0 or more",
            "set it to e.g. 30, or unset EE_LOCK_TIMEOUT",
        ) from None


def one_blas_thread() -> None:
    """Run numpy's OpenBLAS on one thread (the user's own ``OPENBLAS_NUM_THREADS`` wins): called by every
    entry point (the command line, the git hooks, the warm server) before numpy loads.

    A query multiplies one vector by the memory matrix (~1 ms on one core at 10k memories). OpenBLAS would
    run that on every core and then spin its threads, which cost a fresh ``ee search`` ~20 ms of CPU on a
    2-core machine (and the other processes the cores it spun on), and had a cold prepare-commit-msg use
    more CPU than wall time (415 ms against 302 ms)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
