"""The run's lines on the terminal: progress, messages and errors."""

from __future__ import annotations

import sys
from typing import Optional


class Console:
    """Progress on the console: a live, rewritten line on a terminal; plain lines in a pipe or log."""

    def __init__(self, print_fn=print, live: Optional[bool] = None):
        self.print_fn = print_fn
        self.live = sys.stdout.isatty() if live is None else live
        self._pending_line = False

    def progress(self, line: str) -> None:
        if self.live:
            self.print_fn("\r\033[K" + line, end="", flush=True)
            self._pending_line = True
        else:
            self.print_fn(line, flush=True)

    def message(self, line: str, error: bool = False) -> None:
        """A line of its own; errors always go to stderr, whatever print_fn does with progress."""
        if self._pending_line:
            self.print_fn("", flush=True)
            self._pending_line = False
        if error:
            print(line, file=sys.stderr, flush=True)
        else:
            self.print_fn(line, flush=True)


def silent(*args, **kwargs) -> None:
    """A print_fn that prints nothing: a quiet run (errors still reach stderr, as Console.message sends them)."""
