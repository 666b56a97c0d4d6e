"""Hand a read-only command to the warm query server of ``ee watch``, before anything heavy is imported.

``ee`` calls :func:`try_server` first. It finds the workspace cheaply (``--workspace`` / ``-W``, else
``$EE_WORKSPACE``, else the nearest folder up holding ``.ee/`` or ``memories/``), connects to
``.ee/serve.sock`` and, when a server answers, prints its stdout and stderr byte for byte and returns its
exit code. Anything else (no socket, a stale one, a refused or timed-out connection, a command that
writes, ``EE_NO_SERVER=1``) returns None and the command runs in-process as usual. Read-only commands
are idempotent, so falling back after a failed exchange is always safe.

Only small standard modules (os, sys, socket, json, struct, contextlib) are imported: this is the
fast path.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

SOCKET = os.path.join(".ee", "serve.sock")
PROTOCOL = 1
CONNECT_TIMEOUT = 0.25  # seconds: a live server accepts at once
ANSWER_TIMEOUT = 150.0  # seconds: longer than the index lock wait, so the server's answer wins
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
    }
)
_GROUPS = frozenset({"memory", "index", "schema"})
# Passed to the server (the in-process run would see them): ee's settings, output width and colour.
ENV_PREFIXES = ("EE_",)
ENV_NAMES = ("NO_COLOR", "COLUMNS", "LINES")


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


def try_server(argv: list[str] | None = None) -> int | None:
    """Run ``ee ARGV`` through the warm server and return its exit code, or None to run it in-process."""
    args = list(sys.argv[1:] if argv is None else argv)
    if os.environ.get("EE_NO_SERVER", "") not in ("", "0"):
        return None
    workspace, command = parse_argv(args)
    if not is_read_only(command) or "--help" in args or "-h" in args:
        return None
    try:
        cwd = os.getcwd()
        root = find_root(workspace, cwd)
        if root is None or not os.path.exists(os.path.join(root, SOCKET)):
            return None
        request = _request(args, cwd)
        if request is None:
            return None
        with socket_address(os.path.join(root, SOCKET)) as address:
            answer = _exchange(address, request)
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


def _request(args: list[str], cwd: str) -> bytes | None:
    stdin = None
    if "-" in args:  # the command reads standard input ('-' as a file or text argument)
        if _isatty(sys.stdin):
            return None  # typed input: let the command read it itself, as it wants
        try:
            stdin = sys.stdin.buffer.read().decode("utf-8")
        except (UnicodeDecodeError, AttributeError):
            return None
    env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    tty = {"stdout": _isatty(sys.stdout), "stderr": _isatty(sys.stderr)}
    if tty["stdout"] and "COLUMNS" not in env:
        with contextlib.suppress(OSError, ValueError):
            env["COLUMNS"] = str(os.get_terminal_size(sys.stdout.fileno()).columns)
    doc = {
        "protocol": PROTOCOL,
        "version": _version(),
        "argv": args,
        "cwd": cwd,
        "env": env,
        "stdin": stdin,
        "tty": tty,
        "uid": os.getuid(),
    }
    return json.dumps(doc).encode("utf-8")


def _exchange(address: str, request: bytes) -> tuple[int, bytes, bytes] | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(address)
        sock.settimeout(ANSWER_TIMEOUT)
        send_frame(sock, request)
        header = json.loads(recv_frame(sock))
        if not isinstance(header, dict) or header.get("fallback"):
            return None
        out, err = recv_frame(sock), recv_frame(sock)
        return int(header["code"]), out, err


def send_frame(sock: socket.socket, data: bytes) -> None:
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv_frame(sock: socket.socket) -> bytes:
    size = struct.unpack(">I", _recv_exact(sock, 4))[0]
    if size > MAX_FRAME:
        raise ValueError("frame too large")
    return _recv_exact(sock, size)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
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
    if code is None:
        from ee.cli import main as cli_main

        code = cli_main()
    sys.exit(code)
