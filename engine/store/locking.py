"""The store directory's lock file, opened safely: never truncated, never followed through a symbolic link.

The user rows and the saved scenarios of one directory share one `.lock` file that processes `flock`. It is
opened with O_CREAT | O_NOFOLLOW and without O_TRUNC, mode 0o600: a `.lock` that someone replaced with a link
to another file (a shared directory, a predictable temporary one) is refused, so taking the lock can never
truncate or create the file the link points to.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import Iterator

from engine.store.build import ENV_DB, StoreError

LOCK_NAME = ".lock"
#: only the owner reads or writes the lock file: nobody else has a reason to open it
LOCK_MODE = 0o600
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC

#: how the system says a directory cannot be written (a read-only mount, no permission)
_READ_ONLY_ERRORS = (errno.EACCES, errno.EPERM, errno.EROFS)

__all__ = ["LOCK_NAME", "LOCK_MODE", "open_lock", "locked", "UnwritableDirectory"]


class UnwritableDirectory(StoreError):
    """The store directory cannot be written (read-only deployment): nothing can change there."""


def open_lock(directory: Path) -> int:
    """A file descriptor on `directory`/.lock, created if missing (the directory too); StoreError names the
    file when it is a symbolic link or not a plain file, or the directory when it cannot be written."""
    path = Path(directory) / LOCK_NAME
    try:
        Path(directory).mkdir(parents=True, exist_ok=True)
        fd = os.open(path, _LOCK_FLAGS, LOCK_MODE)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise StoreError(f"{path} is a symbolic link; Kneepoint locks only a plain file of its own "
                             "(remove the link)") from None
        error = UnwritableDirectory if e.errno in _READ_ONLY_ERRORS else StoreError
        raise error(f"cannot write in {directory} ({e.strerror or e}); set {ENV_DB} to a file in a "
                    "writable directory") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StoreError(f"{path} is not a plain file; Kneepoint locks only a plain file of its own (remove it)")
    return fd


@contextlib.contextmanager
def locked(directory: Path, exclusive: bool = True) -> Iterator[None]:
    """Hold `directory`'s lock (exclusive for writers, shared for readers) for the block. A reader of a directory
    nobody can write (a read-only deployment) reads without the lock: there is no writer to wait for."""
    try:
        fd = open_lock(directory)
    except UnwritableDirectory:
        if exclusive or not Path(directory).is_dir():
            raise
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
