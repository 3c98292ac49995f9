"""How long a run takes to get going and to end: the seconds a user waits with nothing learnt yet.

summary.json's "phases" and the console's last line give, in seconds since launch, when the
processes were started, the first env step, the first update and the first evaluation; and the
seconds from the stop (solved, max steps, Ctrl-C) to the summary, the last thing a run does.
"""

from __future__ import annotations

import os
import time
from typing import Optional

from a3c.parallel.messages import Evaluation, Update

MILESTONES = ("processes_started", "first_env_step", "first_update", "first_evaluation")


def process_start_time() -> Optional[float]:
    """When this process started, on the time.monotonic() clock, so that the interpreter's start and the
    imports count; None where the kernel does not say (/proc/self/stat is Linux's)."""
    try:
        with open("/proc/self/stat") as file:
            fields = file.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        started_after_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of proc(5): starttime
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started_after_boot
    except (OSError, IndexError, ValueError, AttributeError):
        return None
    return time.monotonic() - age


class Phases:
    """The monotonic times of a run's milestones, each the first of its kind."""

    def __init__(self, launched_at: float):
        self.launched_at = launched_at
        self.times: dict[str, float] = {}

    def mark(self, name: str, at: Optional[float] = None) -> None:
        self.times.setdefault(name, time.monotonic() if at is None else at)

    def observe(self, message) -> None:
        """Milestones a message shows: a worker's first update (and when its rollout's first step was taken,
        on this process's clock: a node group's may differ) and the evaluator's first evaluation."""
        now = time.monotonic()
        if isinstance(message, Update) and not message.report.replayed:
            report = message.report
            self.mark("first_env_step", now - report.rollout_seconds - report.update_seconds)
            self.mark("first_update", now)
        elif isinstance(message, Evaluation) and not message.confirmation:
            self.mark("first_evaluation", now)

    def report(self) -> dict:
        """Seconds since launch of each milestone (None if the run never got there), and from the stop
        to now."""
        since_launch = {
            name: round(self.times[name] - self.launched_at, 3) if name in self.times else None for name in MILESTONES
        }
        stopped = self.times.get("stopped")
        return {**since_launch, "stop_to_exit": None if stopped is None else round(time.monotonic() - stopped, 3)}


def format_phases(phases: dict) -> str:
    def seconds(name: str) -> str:
        return "-" if phases[name] is None else f"{phases[name]:.1f} s"

    return (
        f"from launch: first env step {seconds('first_env_step')}, first update {seconds('first_update')}, "
        f"first eval {seconds('first_evaluation')}; stop to exit {seconds('stop_to_exit')}"
    )
