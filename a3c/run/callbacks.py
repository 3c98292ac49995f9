"""Callbacks: the user's code, called by the trainer process as a run goes (the workers are not slowed).

A callback is any object with some of these methods (`a3c.Callback` has them all, doing nothing):
on_start(config, run_dir), on_metrics(row), on_evaluation(row), on_end(summary). Rows are dicts of
the columns of metrics.csv and eval.csv, the summary is what summary.json holds. on_metrics and
on_evaluation may return True to stop the run cleanly (stop_reason "callback"): the workers finish
their updates, last.pt and the summary are written. A callback that raises stops the run the same
way, with one line naming it (stop_reason "callback_failed", exit code 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from a3c.errors import first_line


class Callback:
    """The hooks a callback may define; subclass and override what you need."""

    def on_start(self, config, run_dir: Path) -> None:
        """The run starts (or resumes) with `config` in `run_dir`."""

    def on_metrics(self, row: dict) -> Optional[bool]:
        """A row of metrics.csv was written; return True to stop the run."""

    def on_evaluation(self, row: dict) -> Optional[bool]:
        """A row of eval.csv was written (an evaluation, or a confirmation: row["confirmation"] == 1);
        return True to stop the run."""

    def on_end(self, summary: dict) -> None:
        """The run ended; `summary` is what summary.json holds."""


def callback_name(callback) -> str:
    return getattr(callback, "__name__", None) or type(callback).__name__


class Callbacks:
    """A run's callbacks, each hook called in their order. The first that asks to stop, or raises, sets
    `stop_reason`; the trainer's loop reads it."""

    def __init__(self, callbacks, console):
        self.callbacks, self.console = list(callbacks), console
        self.stop_reason: Optional[str] = None

    def call(self, hook: str, *args) -> None:
        for callback in self.callbacks:
            method = getattr(callback, hook, None)
            if method is None:
                continue
            try:
                asked_to_stop = method(*args)
            except Exception as error:  # the user's code: one line, and the run stops with nothing lost
                self.console.message(
                    f"callback {callback_name(callback)} raised {type(error).__name__} in {hook}: "
                    f"{first_line(error)}; stopping",
                    error=True,
                )
                self.stop_reason = self.stop_reason or "callback_failed"
                continue
            if asked_to_stop is True and hook in ("on_metrics", "on_evaluation") and self.stop_reason is None:
                self.console.message(f"callback {callback_name(callback)} asked to stop the run")
                self.stop_reason = "callback"

    def row(self, kind: str, row: dict) -> None:
        """MetricsWriter's on_row."""
        self.call("on_metrics" if kind == "metrics" else "on_evaluation", dict(row))
