"""One trainer per run directory: an exclusive lock on RUN_DIR/.lock for the trainer's lifetime.

flock(2) locks belong to the open file, so the kernel drops the lock when the trainer
exits, however it ended: a SIGKILLed trainer leaves no stale lock behind. Forked
workers close their copy at once, so a worker stuck in a hung env cannot keep it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from a3c.errors import ConfigError

LOCK_NAME = ".lock"
_held: set[int] = set()  # this process's lock files


def _close_copies_in_child() -> None:
    for fd in _held:
        os.close(fd)
    _held.clear()


os.register_at_fork(after_in_child=_close_copies_in_child)


class RunLock:
    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_NAME
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self.fd, 32).decode(errors="replace").strip() or "?"
            os.close(self.fd)
            raise ConfigError(
                f"another trainer (pid {holder}) is running in {run_dir}; wait for it to end or stop it first"
            ) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, f"{os.getpid()}\n".encode())  # for the message above, read by the next one
        _held.add(self.fd)

    def release(self) -> None:
        if self.fd is not None:
            _held.discard(self.fd)
            os.close(self.fd)
            self.fd = None
