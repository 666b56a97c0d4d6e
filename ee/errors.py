"""Every failure ee reports, each class with its exit code.

Library code raises these; only the CLI's top-level handler turns them into stderr text or the
``ee.error.v1`` envelope and an exit code. The codes are documented in docs/cli.md (summed up in the README).
"""

from __future__ import annotations

import enum
from typing import Any


class ExitCode(enum.IntEnum):
    OK = 0
    INTERNAL = 1  # a bug: please report it
    USAGE = 2  # bad arguments or a query document that violates its schema
    CONFIG = 3  # no workspace, bad config, bad model folder
    STORAGE = 4  # git or file system trouble, a malformed memory file blocks the operation
    INDEX = 5  # index missing or corrupt and could not be repaired
    POLICY = 6  # refused by policy: a secret, a quarantined write, a bypass not allowed
    NOT_FOUND = 7  # no such memory, commit or file
    CONFLICT = 8  # lock timeout, concurrent change, dirty file, push race lost
    EVAL_FAILED = 9  # `ee eval run`: a scenario's expectations were not met


class EeError(Exception):
    """Base of every error ee reports to a user.

    ``message`` says what went wrong (and where), ``hint`` the next thing to try.
    """

    code = "internal"
    exit_code = ExitCode.INTERNAL

    def __init__(self, message: str, hint: str = "", details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "repair": self.hint,
            "details": self.details,
        }


class UsageError(EeError):
    code = "usage"
    exit_code = ExitCode.USAGE


class QueryError(UsageError):
    code = "query_invalid"


class ConfigError(EeError):
    code = "configuration"
    exit_code = ExitCode.CONFIG


class WorkspaceNotFound(ConfigError):
    code = "workspace_not_found"


class ModelError(ConfigError):
    code = "model_unavailable"


class StorageError(EeError):
    code = "storage"
    exit_code = ExitCode.STORAGE


class MemoryFormatError(StorageError):
    """A memory file that cannot be read. ``path`` and ``line`` say where (line is 1-based)."""

    code = "memory_invalid"

    def __init__(
        self,
        message: str,
        path: str = "",
        line: int | None = None,
        key: str | None = None,
        hint: str = "",
    ) -> None:
        where = f"{path}:{line}" if path and line else path
        full = f"{where}: {message}" if where else message
        super().__init__(full, hint, {"path": path, "line": line, "key": key})
        self.path = path
        self.line = line
        self.key = key
        self.reason = message
        self.also: tuple[MemoryFormatError, ...] = ()

    @classmethod
    def every(cls, errors: list[MemoryFormatError]) -> MemoryFormatError:
        """One error for all the problems found in one file: the first one's, with the others in ``also``
        (its message and ``details.problems`` name each with its line)."""
        first = errors[0]
        if len(errors) == 1:
            return first
        combined = cls(first.reason, first.path, first.line, first.key, first.hint)
        combined.also = tuple(errors[1:])
        combined.message = "; ".join(error.message for error in errors)
        combined.details["problems"] = [
            {"line": e.line, "key": e.key, "message": e.reason, "repair": e.hint} for e in errors
        ]
        combined.args = (combined.message,)
        return combined

    def each(self) -> tuple[MemoryFormatError, ...]:
        """This problem and the others found in the same file."""
        return (self, *self.also)


class DoctorFound(StorageError):
    """``ee doctor`` found errors: its whole report is the details."""

    code = "doctor_found_problems"


class GitError(StorageError):
    code = "git"

    @classmethod
    def not_installed(cls) -> GitError:
        """What ee says when starting ``git`` finds no such program."""
        return cls("git is not installed", "install git (e.g. apt-get install git)")


class IndexError_(EeError):  # noqa: N801 - the underscore keeps it apart from Python's IndexError
    code = "index"
    exit_code = ExitCode.INDEX


class PolicyError(EeError):
    code = "policy_denied"
    exit_code = ExitCode.POLICY


class SecretFound(PolicyError):
    code = "secret_detected"


class NotFound(EeError):
    code = "not_found"
    exit_code = ExitCode.NOT_FOUND


class ConflictError(EeError):
    code = "conflict"
    exit_code = ExitCode.CONFLICT


class LockTimeout(ConflictError):
    code = "lock_timeout"


class EvalFailed(EeError):
    code = "eval_failed"
    exit_code = ExitCode.EVAL_FAILED


class NotRegularFile(OSError):
    """What :func:`ee.config.open_regular` found is not a regular file of this user: a FIFO, a socket, a
    device, a folder, a symlink, or a file (or folder on the way, under ``.ee/``) another user owns."""


def disk_failure(exc: BaseException) -> StorageError | None:
    """A full or read-only disk, or a file or folder ee may not use, wherever ee met it (a file, git, the
    SQLite cache), or a file of ``.ee/`` ee refused to open (:class:`NotRegularFile`): a storage error with
    its repair, not a crash with a traceback. None for anything else."""
    import errno

    if isinstance(exc, NotRegularFile):
        return StorageError(
            f"ee does not open {exc.filename}: {exc.strerror}",
            f"look at it (ls -la {exc.filename}); ee makes its own files under .ee/ again once you remove "
            "what is there",
        )

    code = getattr(exc, "errno", None)
    sqlite = getattr(exc, "sqlite_errorcode", None)  # SQLITE_FULL 13, SQLITE_READONLY 8
    if code in (errno.ENOSPC, errno.EDQUOT) or sqlite == 13:
        return StorageError(
            f"no space left on the device: {exc}",
            "free some space, then try again (.ee/ holds only derived data: ee index rebuild remakes it)",
        )
    if code == errno.EROFS or sqlite == 8:
        return StorageError(
            f"the file system is read-only: {exc}", "run ee where it may write the workspace and its .ee/"
        )
    if code in (errno.EACCES, errno.EPERM):
        where = getattr(exc, "filename", None) or "a file"
        return StorageError(
            f"permission denied: {where}",
            "check its permissions (ls -ld), or run ee as the user who owns the workspace",
        )
    return None
