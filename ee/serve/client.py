"""Hand a command to the warm server of ``ee watch``, and start that server on demand.

``ee`` calls :func:`try_server` first. It finds the workspace (``--workspace`` / ``-W``, else
``$EE_WORKSPACE``, else the nearest folder up holding ``.ee/`` or ``memories/``), connects to
``.ee/serve.sock`` and, when a server answers, prints its stdout and stderr byte for byte and returns its
exit code. Otherwise (no server, a stale socket, a command the server does not run, an argument naming
a pipe or a file of this process (:func:`names_own_stream`), ``EE_NO_SERVER=1``) it returns None and the
command runs in-process; when no server runs at all, it first starts one in the background
(:func:`autostart`), so the next command is served warm.

**Trust.** The client talks only to a server of its own user: ``.ee/`` must be this user's and not
writable by others (:func:`state_dir_problem`), the socket file must be a socket of this user's
(:func:`socket_problem`), and the process listening on it must run as this user (``SO_PEERCRED``,
:func:`peer_problem`). Anything else is reported on stderr and ignored: the command runs in-process, no
byte is sent, and no server is started there.

Read-only commands are idempotent, so falling back after a failed exchange is always safe. A served
write (:data:`WRITES`: ``ee remember``) is different: once its request is sent, a lost answer is an
error (the write may have happened), never a second run in-process. A write carries its umask and the
part of the environment its commit reads (:func:`passed_environment`): git's identity, dates,
configuration and repository places, ``HOME``, ``PATH``, ``TZ`` and ``EE_*``; never the rest (tokens).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import struct
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

STATE_DIR = ".ee"
SOCKET = os.path.join(STATE_DIR, "serve.sock")
START_LOCK = os.path.join(STATE_DIR, "serve.lock")  # held by a server started on demand, for its lifetime
LOG = os.path.join(STATE_DIR, "serve.log")
MAX_LOG = 2**20  # a log past this size is started again by the next server
PROTOCOL = 2
CONNECT_TIMEOUT = 0.25  # seconds: a live server accepts at once
ANSWER_TIMEOUT = 150.0  # seconds: longer than the index lock wait, so the server's answer wins
WRITE_TIMEOUT = 600.0  # seconds: a write waits for the workspace lock first
MAX_FRAME = 256 * 2**20

# (command, subcommand or None for any): what the server may run. Everything else writes or is cheap.
READ_ONLY = frozenset(
    {
        ("search", None),
        ("context", None),
        ("pack", None),
        ("why", None),
        ("schema", None),
        ("memory", "show"),
        ("memory", "list"),
        ("memory", "history"),
        ("index", "status"),
        ("hook-check", None),  # a warm git hook's check of the staged change (ee.hooks.warm.check)
    }
)
# Commands that read standard input whatever their arguments (others only for a '-' argument).
READS_STDIN = frozenset({("hook-check", None)})
# The writes the server runs too (under the workspace lock, with the client's umask and environment).
WRITES = frozenset({("remember", None)})
# Commands that are not served but start the server for the ones that follow: a git hook asks it
# (ee.hooks.warm) once it runs.
STARTS_SERVER = frozenset({("hook", None)})
_GROUPS = frozenset({"memory", "index", "schema"})

# Passed to the server for every command (the in-process run would see them): ee's settings, width, colour.
ENV_PREFIXES = ("EE_",)
ENV_NAMES = frozenset({"NO_COLOR", "COLUMNS", "LINES"})
# Passed for a write too: what its commit reads. Git's identity and dates (GIT_AUTHOR_*, GIT_COMMITTER_*,
# EMAIL), its configuration (GIT_CONFIG_GLOBAL / _SYSTEM / _NOSYSTEM / _COUNT / _KEY_n / _VALUE_n /
# _PARAMETERS; HOME and XDG_CONFIG_HOME locate the user's files), where the repository is (GIT_DIR and
# the other place variables), which git runs (PATH), the commit's local time (TZ), and what a signing
# key needs (GNUPGHOME, SSH_AUTH_SOCK, when the user's config signs commits).
WRITE_ENV_PREFIXES = ("GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_CONFIG")
WRITE_ENV_NAMES = frozenset(
    {
        "EMAIL",
        "HOME",
        "XDG_CONFIG_HOME",
        "PATH",
        "TZ",
        "GNUPGHOME",
        "SSH_AUTH_SOCK",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_NAMESPACE",
    }
)
# Git's variables for one command (a hook's index file, its repository and prefix): a server started by
# that command outlives it, and finds the repository of its workspace by itself.
ONE_COMMAND_GIT_ENV = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_QUARANTINE_PATH",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_EDITOR",
        "GIT_REFLOG_ACTION",
    }
)
_HEADER = struct.Struct(">I")


class Untrusted(Exception):
    """A ``.ee/`` folder, socket or server that another user controls: the message says which and why."""


class LostAnswer(Exception):
    """A served write's request was sent and no answer came back: it may or may not have happened."""


# ------------------------------------------------------------------------------------------ the command line


def parse_argv(argv: list[str]) -> tuple[str | None, tuple[str, str | None] | None]:
    """(the ``--workspace`` given before the command, (command, subcommand)) — None where absent or when
    an option other than ``--workspace`` comes first (``--version``, ``--help``: run in-process)."""
    workspace = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-W", "--workspace"):
            if i + 1 >= len(argv):
                return None, None
            workspace, i = argv[i + 1], i + 2
        elif arg.startswith("--workspace="):
            workspace, i = arg.split("=", 1)[1], i + 1
        elif arg.startswith("-W") and len(arg) > 2:
            workspace, i = arg[2:], i + 1
        elif arg.startswith("-"):
            return workspace, None
        else:
            sub = argv[i + 1] if arg in _GROUPS and i + 1 < len(argv) else None
            return workspace, (arg, sub)
    return workspace, None


def _listed(command: tuple[str, str | None] | None, table: frozenset[tuple[str, str | None]]) -> bool:
    return command is not None and ((command[0], None) in table or command in table)


def is_read_only(command: tuple[str, str | None] | None) -> bool:
    return _listed(command, READ_ONLY)


def is_served_write(command: tuple[str, str | None] | None) -> bool:
    return _listed(command, WRITES)


def find_root(workspace: str | None, cwd: str) -> str | None:
    """The workspace root (:func:`ee.discovery.find_root`), or None when there is none or it is refused:
    the command, run in-process, then says why. (Its git index is checked by the command the server runs.)"""
    from ee.discovery import find_root as discover
    from ee.errors import EeError

    try:
        return str(discover(workspace, cwd, tracked=False))
    except EeError:
        return None


def server_disabled() -> bool:
    """``EE_NO_SERVER=1``: neither use nor start a server."""
    return os.environ.get("EE_NO_SERVER", "") not in ("", "0")


# ------------------------------------------------------------------------------------------ trust


def state_dir_problem(info: os.stat_result, uid: int) -> str | None:
    """Why a ``.ee/`` folder with this ``stat`` must not hold a server of user ``uid``, or None."""
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid != uid:
        return f"belongs to uid {info.st_uid}, not to you (uid {uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        return f"is writable by other users (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def socket_problem(info: os.stat_result, uid: int) -> str | None:
    """Why a socket file with this ``stat`` is not a server of user ``uid`` to talk to, or None."""
    if info.st_uid != uid:
        return f"belongs to uid {info.st_uid}, not to you (uid {uid})"
    if not stat.S_ISSOCK(info.st_mode):
        return "is not a socket"
    return None


def peer_problem(peer_uid: int, uid: int) -> str | None:
    """Why a server process running as ``peer_uid`` is not one for user ``uid``, or None."""
    return None if peer_uid == uid else f"is served by uid {peer_uid}, not by you (uid {uid})"


def peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end of a connected Unix socket (``SO_PEERCRED``)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


def check_state_dir(root: str) -> bool:
    """Whether ``ROOT/.ee`` exists and may hold a server; raises :class:`Untrusted` when others control it."""
    path = os.path.join(root, STATE_DIR)
    if os.path.islink(path):
        from ee.errors import StorageError
        from ee.git.repo import check_own_folder

        try:
            check_own_folder(root, STATE_DIR)
        except StorageError:  # a link committed to git, out of the repository: the command reports it
            return False
    try:
        info = os.stat(path)
    except OSError:
        return False
    problem = state_dir_problem(info, os.geteuid())
    if problem is not None:
        raise Untrusted(
            f"{path} {problem}: not using or starting ee watch's server there",
            f"make it yours alone (chown $(id -u) {path} && chmod go-w {path})",
        )
    return True


def connect(root: str) -> socket.socket | None:
    """A connection to the server of ``root`` that passed every check, or None when none listens (no
    socket, a stale one). Raises :class:`Untrusted` (nothing sent) for a folder, socket or server that
    is not this user's."""
    if not check_state_dir(root):
        return None
    path = os.path.join(root, SOCKET)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    uid = os.geteuid()
    problem = socket_problem(info, uid)
    if problem == "is not a socket":
        return None  # a leftover file of ours: no server (a new one replaces it)
    if problem is None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(CONNECT_TIMEOUT)
            with socket_address(path) as address:
                sock.connect(address)
            problem = peer_problem(peer_uid(sock), uid)
        except OSError:  # refused (stale: its server was killed) or not accepting
            sock.close()
            return None
        if problem is None:
            return sock
        sock.close()
    raise Untrusted(
        f"{path} {problem}: ignoring it, running here instead",
        f"remove it (rm {path}) and check who can write {os.path.dirname(path)}",
    )


def warn(exc: Untrusted) -> None:
    message, hint = exc.args
    print(f"ee: warning: {message} (repair: {hint})", file=sys.stderr, flush=True)


@contextlib.contextmanager
def socket_address(path: str) -> Iterator[str]:
    """``path`` as an AF_UNIX address, shortened through /proc/self/fd when over the 108-byte limit."""
    if len(os.fsencode(path)) < 100 or not os.path.isdir("/proc/self/fd"):
        yield path
        return
    fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{os.path.basename(path)}"
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------------------ serving


def try_server(argv: list[str] | None = None) -> int | None:
    """Run ``ee ARGV`` through the warm server and return its exit code, or None to run it in-process
    (having started a server in the background when none runs)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if server_disabled() or "--help" in args or "-h" in args:
        return None
    workspace, command = parse_argv(args)
    write = is_served_write(command)
    served = write or is_read_only(command)
    if not (served or _listed(command, STARTS_SERVER)):
        return None
    cwd = os.getcwd()
    if served and names_own_stream(args, cwd):
        return None
    root = find_root(workspace, cwd)
    if root is None:
        return None
    try:
        sock = connect(root) if served else None
    except Untrusted as exc:
        warn(exc)
        return None
    if sock is None:
        autostart(root)
        return None
    with sock:
        request = _request(args, cwd, write, command in READS_STDIN)
        if request is None:
            return None
        try:
            answer = _exchange(sock, request, write)
        except LostAnswer:
            return _lost(args)
        except (OSError, ValueError, struct.error):
            return None
    if answer is None:
        return None
    code, out, err = answer
    try:
        _write(sys.stdout, out)
        _write(sys.stderr, err)
    except BrokenPipeError:  # `ee search … | head`: as in-process, a closed reader is not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return code


def names_own_stream(args: list[str], cwd: str) -> bool:
    """Whether an argument names a file only this process can open as it means: a pipe or a FIFO
    (``--query-file <(…)``, ``/dev/stdin``), a device, a socket, or a path of its own (``/dev/fd/N``,
    ``/proc/self/…``). The server would open its own file instead, or block on the FIFO holding the lock
    every served command takes: such a command runs here."""
    for arg in args:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if not value or value == "-":
            continue
        path = os.path.join(cwd, value)
        try:
            info = os.stat(path)
        except (OSError, ValueError):  # no such file (a search text), or a NUL in it
            continue
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            return True
        if os.path.abspath(path).startswith(_OWN_PATHS) or os.path.realpath(path).startswith("/proc/"):
            return True
    return False


# Paths that name a file of the process that opens them (a workspace or a file in /dev/shm is anyone's).
_OWN_PATHS = ("/proc/", "/dev/fd/", "/dev/stdin", "/dev/stdout", "/dev/stderr")


def passed_environment(environ: dict[str, str] | os._Environ[str], write: bool) -> dict[str, str]:
    """The part of ``environ`` a command sends to the server (see :data:`ENV_NAMES` and
    :data:`WRITE_ENV_NAMES`); the server applies no other variable either."""
    return {name: value for name, value in environ.items() if is_passed(name, write)}


def is_passed(name: str, write: bool) -> bool:
    if name.startswith(ENV_PREFIXES) or name in ENV_NAMES:
        return True
    return write and (name.startswith(WRITE_ENV_PREFIXES) or name in WRITE_ENV_NAMES)


def _request(args: list[str], cwd: str, write: bool = False, reads_stdin: bool = False) -> bytes | None:
    stdin = None
    if reads_stdin or "-" in args:  # the command reads standard input (or '-' as a file or text argument)
        if _isatty(sys.stdin):
            return None  # typed input: let the command read it itself, as it wants
        try:
            stdin = sys.stdin.buffer.read().decode("utf-8")
        except (UnicodeDecodeError, AttributeError):
            return None
    env = passed_environment(os.environ, write)
    tty = {"stdout": _isatty(sys.stdout), "stderr": _isatty(sys.stderr)}
    if tty["stdout"] and "COLUMNS" not in env:
        with contextlib.suppress(OSError, ValueError):
            env["COLUMNS"] = str(os.get_terminal_size(sys.stdout.fileno()).columns)
    doc: dict[str, Any] = {
        "protocol": PROTOCOL,
        "version": _version(),
        "argv": args,
        "cwd": cwd,
        "env": env,
        "stdin": stdin,
        "tty": tty,
    }
    if write:
        mask = os.umask(0o022)
        os.umask(mask)
        doc["umask"] = mask
    try:
        return json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # an argument or variable that is not UTF-8 (surrogates): run it here
        return None


def _exchange(sock: socket.socket, request: bytes, write: bool = False) -> tuple[int, bytes, bytes] | None:
    sock.settimeout(WRITE_TIMEOUT if write else ANSWER_TIMEOUT)
    send_frame(sock, request)
    try:
        code = answer_code(recv_frame(sock))
        if code is None:  # {"fallback": true}: the server did not run it
            return None
        out, err = recv_frame(sock), recv_frame(sock)
    except (OSError, ValueError, struct.error):
        if write:
            raise LostAnswer from None
        raise
    return code, out, err


def answer_code(header: bytes) -> int | None:
    """The exit code of the server's header ``{"code": N}``; None for a fallback (or anything else)."""
    doc = json.loads(header)
    code = doc.get("code") if isinstance(doc, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _lost(args: list[str]) -> int:
    """A served write lost its answer: say so the way ee reports errors (never run it a second time)."""
    from ee.cli import report_error, wants_json
    from ee.errors import ConflictError

    error = ConflictError(
        "ee watch stopped before it answered: the write may or may not have been made",
        "check with `ee memory list` or `git log -1` before trying again",
    )
    return report_error(error, wants_json(args))


def send_frame(sock: socket.socket, data: bytes) -> None:
    sock.sendall(_HEADER.pack(len(data)) + data)


def recv_frame(sock: socket.socket, deadline: float | None = None) -> bytes:
    """One frame; by ``deadline`` (a ``time.monotonic()`` value) when given, else within the socket's
    timeout for each read."""
    size = _HEADER.unpack(_recv_exact(sock, 4, deadline))[0]
    if size > MAX_FRAME:
        raise ValueError("frame too large")
    return _recv_exact(sock, size, deadline)


def _recv_exact(sock: socket.socket, size: int, deadline: float | None = None) -> bytes:
    chunks, left = [], size
    while left:
        if deadline is not None:
            import time

            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the peer was too slow")
            sock.settimeout(remaining)
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _write(stream: Any, data: bytes) -> None:
    if not data:
        return
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "replace"))


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _version() -> str:
    from ee import __version__

    return __version__


# ------------------------------------------------------------------------------------------ on demand


def autostart(root: str) -> bool:
    """Start ``ee watch`` for ``root`` in the background unless one runs, one is starting, the workspace
    turned it off (``[server] autostart = false``) or ``.ee/`` is missing or not this user's alone.
    Never raises: the command that called it runs in-process either way.

    One server per workspace, however many commands start at once: the starter takes ``.ee/serve.lock``
    and hands it to the server, which holds it (and ``.ee/watch.pid``'s lock) while it lives; a command
    that finds either lock held starts nothing. Both are ``flock`` locks, which die with their holder, so
    a killed server (and its stale socket) never stops the next command from starting a new one."""
    try:
        if server_disabled() or not check_state_dir(root) or not _autostart_configured(root):
            return False
    except Untrusted as exc:
        warn(exc)
        return False
    from ee.config import open_regular

    try:  # (a link there, committed by a repository: never followed, no server started)
        fd = open_regular(os.path.join(root, START_LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # started (or being started) by another command
        from pathlib import Path

        from ee.serve.watch import watcher_pid

        if watcher_pid(Path(root)) is not None:
            return False  # an `ee watch` runs already (in the foreground, say)
        return _spawn(root, fd)
    finally:
        os.close(fd)  # the server's copy keeps the lock


def _autostart_configured(root: str) -> bool:
    from pathlib import Path

    from ee.config import load_config
    from ee.errors import EeError

    try:
        return bool(load_config(Path(root)).get("server.autostart"))
    except EeError:  # a broken config: the command itself reports it
        return False


def _spawn(root: str, lock_fd: int) -> bool:
    """``ee watch --on-demand FD`` detached (own session and process group), logging to ``.ee/serve.log``."""
    import subprocess  # (only the command that starts a server needs it)

    from ee.config import open_regular

    log_path = os.path.join(root, LOG)
    try:  # (a link, a FIFO or a device there: no server started, and this command never waits on it)
        log = open_regular(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        return False
    try:
        if os.fstat(log).st_size > MAX_LOG:
            os.ftruncate(log, 0)
    except OSError:
        os.close(log)
        return False
    try:
        subprocess.Popen(
            [sys.executable, "-m", "ee", "--workspace", root, "watch", "--on-demand", str(lock_fd)],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=(lock_fd,),
            start_new_session=True,
            env={k: v for k, v in os.environ.items() if k not in ONE_COMMAND_GIT_ENV},
        )
    except OSError:
        return False
    finally:
        os.close(log)
    return True


# ------------------------------------------------------------------------------------------ entry point


def main() -> NoReturn:
    """The ``ee`` entry point: the warm server first, else the CLI in this process.

    A served command ends as an in-process read-only one does (:func:`ee.serve.shortlived.run_and_exit`):
    the server did the work, this process only printed its answer, so nothing is left to finalize (the
    interpreter's teardown was ~3 ms of a ~40 ms served search)."""
    code = try_server()
    if code is not None:
        from ee.serve.shortlived import run_and_exit

        run_and_exit(lambda: code)
    from ee.cli import main as cli_main

    sys.exit(cli_main())
