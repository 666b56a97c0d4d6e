"""Hand a command to the warm server of ``ee watch``, before anything heavy is imported.

``ee`` calls :func:`try_server` first. It finds the workspace cheaply (``--workspace`` / ``-W``, else
``$EE_WORKSPACE``, else the nearest folder up holding ``.ee/`` or ``memories/``), connects to
``.ee/serve.sock`` and, when a server answers, prints its stdout and stderr byte for byte and returns its
exit code. Anything else (no socket, a stale one, a refused or timed-out connection, a command the
server does not run, ``EE_NO_SERVER=1``) returns None and the command runs in-process as usual.

Read-only commands are idempotent, so falling back after a failed exchange is always safe. A served
write (:data:`WRITES`: ``ee remember``) is different: once its request is sent, a lost answer is an
error (the write may have happened), never a second run in-process. A write carries the client's whole
environment and umask, so its commit (author, committer, dates, hooks' environment) is the one an
in-process run makes.

This is the fast path of every ``ee`` command: only builtin modules (``_socket``, ``struct``) and
``os`` / ``sys`` (imported by Python's start anyway) are imported — no ``typing``, ``json``,
``socket`` or ``contextlib``, which cost ~25 ms together. A served command's process ends with
``os._exit`` once its output is flushed: the interpreter's teardown (~1.5 ms) frees nothing anyone needs.
"""

from __future__ import annotations

import os
import struct
import sys

TYPE_CHECKING = False  # (not typing's: importing typing costs ~15 ms)
if TYPE_CHECKING:
    from typing import Any, NoReturn

SOCKET = os.path.join(".ee", "serve.sock")
PROTOCOL = 1
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
# The writes the server runs too (under the workspace lock, with the client's environment and umask).
WRITES = frozenset({("remember", None)})
_GROUPS = frozenset({"memory", "index", "schema"})
# Passed to the server for a read (the in-process run would see them): ee's settings, width and colour.
ENV_PREFIXES = ("EE_",)
ENV_NAMES = ("NO_COLOR", "COLUMNS", "LINES")
_HEADER = struct.Struct(">I")


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


def is_read_only(command: tuple[str, str | None] | None) -> bool:
    return command is not None and ((command[0], None) in READ_ONLY or command in READ_ONLY)


def is_served_write(command: tuple[str, str | None] | None) -> bool:
    return command is not None and ((command[0], None) in WRITES or command in WRITES)


def find_root(workspace: str | None, cwd: str) -> str | None:
    """The workspace root as ``ee.workspace.find_root`` finds it (without importing it), or None."""
    given = workspace or os.environ.get("EE_WORKSPACE")
    if given:
        return os.path.realpath(os.path.join(cwd, os.path.expanduser(given)))
    here = os.path.realpath(cwd)
    while True:
        if os.path.isdir(os.path.join(here, ".ee")) or os.path.isdir(os.path.join(here, "memories")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


class socket_address:  # noqa: N801 - used as a function: `with socket_address(path) as address`
    """``path`` as an AF_UNIX address, shortened through /proc/self/fd when over the 108-byte limit."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> str:
        path = self.path
        if len(os.fsencode(path)) < 100 or not os.path.isdir("/proc/self/fd"):
            return path
        self.fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
        return f"/proc/self/fd/{self.fd}/{os.path.basename(path)}"

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class LostAnswer(Exception):
    """A served write's request was sent and no answer came back: it may or may not have happened."""


def try_server(argv: list[str] | None = None) -> int | None:
    """Run ``ee ARGV`` through the warm server and return its exit code, or None to run it in-process."""
    args = list(sys.argv[1:] if argv is None else argv)
    if os.environ.get("EE_NO_SERVER", "") not in ("", "0"):
        return None
    workspace, command = parse_argv(args)
    write = is_served_write(command)
    if not (write or is_read_only(command)) or "--help" in args or "-h" in args:
        return None
    try:
        cwd = os.getcwd()
        root = find_root(workspace, cwd)
        if root is None or not os.path.exists(os.path.join(root, SOCKET)):
            return None
        request = _request(args, cwd, write, command in READS_STDIN)
        if request is None:
            return None
        with socket_address(os.path.join(root, SOCKET)) as address:
            answer = _exchange(address, request, write)
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


def _request(args: list[str], cwd: str, write: bool = False, reads_stdin: bool = False) -> bytes | None:
    stdin = None
    if reads_stdin or "-" in args:  # the command reads standard input (or '-' as a file or text argument)
        if _isatty(sys.stdin):
            return None  # typed input: let the command read it itself, as it wants
        try:
            stdin = sys.stdin.buffer.read().decode("utf-8")
        except (UnicodeDecodeError, AttributeError):
            return None
    if write:  # a commit depends on much of it (HOME, GIT_*, PATH, TZ, hooks): all of it
        env = dict(os.environ)
    else:
        env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    tty = {"stdout": _isatty(sys.stdout), "stderr": _isatty(sys.stderr)}
    if tty["stdout"] and "COLUMNS" not in env:
        try:  # noqa: SIM105 - contextlib is not imported on this path
            env["COLUMNS"] = str(os.get_terminal_size(sys.stdout.fileno()).columns)
        except (OSError, ValueError):
            pass
    doc: dict[str, Any] = {
        "protocol": PROTOCOL,
        "version": _version(),
        "argv": args,
        "cwd": cwd,
        "env": env,
        "stdin": stdin,
        "tty": tty,
        "uid": os.getuid(),
    }
    if write:
        mask = os.umask(0o022)
        os.umask(mask)
        doc["umask"] = mask
    try:
        return to_json(doc).encode("utf-8")
    except UnicodeEncodeError:  # an argument or variable that is not UTF-8 (surrogates): run it here
        return None


def _exchange(address: str, request: bytes, write: bool = False) -> tuple[int, bytes, bytes] | None:
    import _socket  # (here: a command with no server to ask never loads it)

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(address)
        sock.settimeout(WRITE_TIMEOUT if write else ANSWER_TIMEOUT)
        send_frame(sock, request)
        try:
            header = recv_frame(sock)
            code = _code(header)
            if code is None:  # {"fallback": true}: the server did not run it
                return None
            out, err = recv_frame(sock), recv_frame(sock)
        except (OSError, ValueError, struct.error):
            if write:
                raise LostAnswer from None
            raise
        return code, out, err
    finally:
        sock.close()


def _code(header: bytes) -> int | None:
    """The exit code of the server's header ``{"code": N}``; None for anything else (a fallback)."""
    if header.startswith(b'{"code": ') and header.endswith(b"}"):
        return int(header[9:-1])
    return None


def _lost(args: list[str]) -> int:
    """A served write lost its answer: say so the way ee reports errors (never run it a second time)."""
    from ee.cli import report_error, wants_json
    from ee.errors import ConflictError

    error = ConflictError(
        "ee watch stopped before it answered: the write may or may not have been made",
        "check with `ee memory list` or `git log -1` before trying again",
    )
    return report_error(error, wants_json(args))


_ESCAPES = {i: f"\\u{i:04x}" for i in range(32)} | {ord('"'): '\\"', ord("\\"): "\\\\"}


def to_json(value: object) -> str:
    """JSON for the request's plain values (str, int, bool, None, lists, dicts), without the json module
    (it imports ``re``, ~7 ms). Non-ASCII text stays as is: the frame is UTF-8."""
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if value is None or value is True or value is False:
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, list | tuple):
        return "[" + ",".join(to_json(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(to_json(str(k)) + ":" + to_json(v) for k, v in value.items()) + "}"
    raise ValueError(f"cannot send {type(value).__name__}")


def send_frame(sock: Any, data: bytes) -> None:
    sock.sendall(_HEADER.pack(len(data)) + data)


def recv_frame(sock: Any) -> bytes:
    size = _HEADER.unpack(_recv_exact(sock, 4))[0]
    if size > MAX_FRAME:
        raise ValueError("frame too large")
    return _recv_exact(sock, size)


def _recv_exact(sock: Any, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _write(stream: object, data: bytes) -> None:
    if not data:
        return
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()  # type: ignore[attr-defined]
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "replace"))  # type: ignore[attr-defined]


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def _version() -> str:
    from ee import __version__

    return __version__


def main() -> None:
    """An entry point that tries the server before importing the CLI (``ee = "ee.client:main"``)."""
    code = try_server()
    if code is not None:
        _exit_now(code)
    from ee.cli import main as cli_main

    sys.exit(cli_main())


def _exit_now(code: int) -> NoReturn:
    """End a served command's process: its output is written and flushed (``try_server``), it holds no
    other file, thread or exit handler, so the interpreter's teardown would only free memory."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - contextlib is not imported on this path
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code & 0xFF)
