"""The one writer of training metrics: CSV rows, TensorBoard, the console, the summary.

Lives in the main process; workers and the evaluator send it plain numbers
through a queue. metrics.csv gets a row each time the global env-step count
crosses a multiple of log_interval, so with one worker and a seed its
non-timing columns are reproducible; the console line is time-based.
"""

from __future__ import annotations

import csv
import math
import os
import statistics
import time
from collections import deque
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from a3c.errors import writing
from a3c.learn.distributions import NOISE_EFFECTS
from a3c.parallel.messages import Evaluation, Failure, Update
from a3c.run.console import Console

# what the rollouts' NoisyNet draws did to the policy, beside the entropy, what their epsilon was scaled by, and
# the novelty's error on where they went (--novelty-coef)
EXPLORATION_COLUMNS = [*NOISE_EFFECTS, "noise_scale", "novelty"]
TRAIN_COLUMNS = [
    "env_steps",
    "wall_seconds",
    "updates",
    "episodes",
    "mean_return",
    "mean_length",
    "policy_loss",
    "value_loss",
    "entropy",
    *EXPLORATION_COLUMNS,
    "grad_norm",
    "lr",
    "steps_per_second",
    # what the learner does: its time per rollout and per update, its update rates, and the
    # policy lag (shared-model updates between a gradient's weight read and its application)
    "replay_updates",
    "updates_per_second",
    "replay_updates_per_second",
    "rollout_ms",
    "update_ms",
    "policy_lag",
]
# what the writer gathers from the updates between two rows
PENDING = (
    "returns",
    "lengths",
    "policy",
    "value",
    "entropy",
    *EXPLORATION_COLUMNS,
    "grad_norm",
    "rollout",
    "update",
    "lag",
    "replayed",
)
# read off the wall clock: they differ between two runs that are otherwise the same
TIMING_COLUMNS = [
    "wall_seconds",
    "steps_per_second",
    "updates_per_second",
    "replay_updates_per_second",
    "rollout_ms",
    "update_ms",
]
EVAL_COLUMNS = [
    "env_steps",
    "wall_seconds",
    "mean_return",
    "std_return",
    "min_return",
    "max_return",
    "episodes",
    "confirmation",
]
NONFINITE_IN_A_ROW_LIMIT = 20


def mean_or_nan(values) -> float:
    return statistics.fmean(values) if values else math.nan


class CsvLog:
    """Appends rows, flushed at once; continues an existing file (resume)."""

    def __init__(self, path: Path, columns: list[str]):
        self.path = path
        with writing(path):
            upgrade_header(path, columns)
            self.file = open(path, "a", newline="")
            self.writer = csv.DictWriter(self.file, fieldnames=columns)
            if self.file.tell() == 0:
                self.writer.writeheader()

    def write(self, row: dict) -> None:
        with writing(self.path):
            self.writer.writerow({k: round(v, 6) if isinstance(v, float) else v for k, v in row.items()})
            self.file.flush()

    def close(self) -> None:
        with writing(self.path):
            self.file.close()


def upgrade_header(path: Path, columns: list[str]) -> None:
    """A file written by an older version (a resumed run) gets today's columns; its rows leave the new ones empty."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        if reader.fieldnames == columns:
            return
        rows = list(reader)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns, restval="", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def drop_rows_after(path: Path, env_steps: int) -> None:
    """Remove the rows a resumed run will write again: those past its checkpoint's env steps."""
    if not path.exists():
        return
    with open(path, newline="") as file:
        rows = list(csv.reader(file))
    if not rows:
        return
    kept = [rows[0]] + [row for row in rows[1:] if row and int(row[0]) <= env_steps]
    tmp = path.with_suffix(".tmp")
    with writing(path):
        with open(tmp, "w", newline="") as file:
            csv.writer(file).writerows(kept)
        os.replace(tmp, path)


def progress_bar(fraction: float, width: int = 20) -> str:
    filled = int(round(min(max(fraction, 0.0), 1.0) * width))
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def time_left(used: float, elapsed: float) -> float:
    """Seconds until the budget is spent, at the pace so far: exact for --max-minutes, the mean rate's
    estimate for --max-steps (the budget's share is whichever is further along)."""
    return math.inf if used <= 0 else max(0.0, elapsed * (1 - used) / used)


def format_duration(seconds: float) -> str:
    """`2h05m`, `7m20s`, `45s`; `-` for an unknown time."""
    if not math.isfinite(seconds):
        return "-"
    whole = int(round(seconds))
    hours, minutes, rest = whole // 3600, whole % 3600 // 60, whole % 60
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


@dataclass(frozen=True)
class MetricsSettings:
    """Where the writer writes and how often: fixed for the whole run, so one value carries them all."""

    run_dir: Path  # metrics.csv, eval.csv and tb/ go here
    log_interval: int  # a metrics.csv row each time the env-step count crosses a multiple of it
    print_interval: float  # seconds between two console lines
    budget_used: Callable[[int, float], float]  # the share of the budget spent at env steps and seconds: the bar
    lr_at: Callable[[int, float], float]  # the learning rate at env steps and seconds: the lr column
    tensorboard: bool = False  # also write the rows as TensorBoard scalars, under run_dir/tb


class MetricsWriter:
    def __init__(
        self,
        settings: MetricsSettings,
        start_time: float,
        console: Console,
        env_steps: int = 0,
        counters: Optional[dict] = None,
        on_row: Callable[[str, dict], None] = lambda kind, row: None,
    ):
        """`start_time`: the time.monotonic() wall_seconds counts from. `env_steps` and `counters`: where a
        resumed run counts on from. `on_row(kind, row)`: after each row is written, "metrics" (of metrics.csv)
        or "evaluation" (of eval.csv: evaluations and confirmations), as a dict of the CSV's columns."""
        self.on_row = on_row
        self.train_log = CsvLog(settings.run_dir / "metrics.csv", TRAIN_COLUMNS)
        self.eval_log = CsvLog(settings.run_dir / "eval.csv", EVAL_COLUMNS)
        self.tb_dir = settings.run_dir / "tb" if settings.tensorboard else None
        self._tb = None
        self.settings, self.start_time, self.console = settings, start_time, console
        counters = counters or {}
        self.env_steps = env_steps
        self.updates = counters.get("updates", 0)
        self.replay_updates = counters.get("replay_updates", 0)
        self.episodes = counters.get("episodes", 0)
        self.best_eval: Optional[float] = counters.get("best_eval")
        self.nonfinite_updates = counters.get("nonfinite_updates", 0)
        self.nonfinite_in_a_row = 0
        self.recent_returns: deque = deque(maxlen=100)
        self._pending: dict[str, list] = {name: [] for name in PENDING}
        self._next_row_at = (env_steps // self.settings.log_interval + 1) * self.settings.log_interval
        now = time.monotonic()
        self._last_row = (env_steps, now)
        self._last_print = (env_steps, now)
        self.last_eval: Optional[float] = None
        self.confirmed: Optional[tuple[float, int]] = None  # (mean, episodes) of the solving or best confirmation
        self.solved_at: Optional[tuple[int, float]] = None
        self.errors: list[str] = []

    def counters(self) -> dict:
        """What a checkpoint keeps so that a resumed run counts on."""
        return {
            "updates": self.updates,
            "replay_updates": self.replay_updates,
            "episodes": self.episodes,
            "best_eval": self.best_eval,
            "nonfinite_updates": self.nonfinite_updates,
            "wall_seconds": self.elapsed(),
        }

    @property
    def diverged(self) -> bool:
        return self.nonfinite_in_a_row >= NONFINITE_IN_A_ROW_LIMIT

    def elapsed(self, now: Optional[float] = None) -> float:
        return (now if now is not None else time.monotonic()) - self.start_time

    def handle(self, message: Update | Evaluation | Failure) -> None:
        if isinstance(message, Update):
            self._on_update(message.report)
        elif isinstance(message, Evaluation):
            self._on_eval(message)
        elif isinstance(message, Failure):
            details = message.details.rstrip()
            self.errors.append(f"{message.source} failed:" + ("\n" if "\n" in details else " ") + details)
            self.console.message(self.errors[-1].rstrip(), error=True)

    def _on_update(self, report) -> None:
        self.env_steps += report.env_steps
        self.updates += 1
        self.replay_updates += report.replayed
        if report.applied:
            self.nonfinite_in_a_row = 0
        else:
            self.nonfinite_updates += 1
            self.nonfinite_in_a_row += 1
        self.episodes += len(report.finished_returns)
        self.recent_returns.extend(report.finished_returns)
        pending = self._pending
        pending["returns"] += report.finished_returns
        pending["lengths"] += report.finished_lengths
        pending["replayed"].append(report.replayed)
        pending["update"].append(report.update_seconds * 1000)
        if not report.replayed:
            pending["rollout"].append(report.rollout_seconds * 1000)
            for name in EXPLORATION_COLUMNS:
                pending[name].append(getattr(report, name))
        if report.applied:
            pending["policy"].append(report.policy_loss)
            pending["value"].append(report.value_loss)
            pending["entropy"].append(report.entropy)
            pending["grad_norm"].append(report.grad_norm)
            pending["lag"].append(report.policy_lag)
        if self.env_steps >= self._next_row_at:
            self._write_row()
            self._next_row_at = (self.env_steps // self.settings.log_interval + 1) * self.settings.log_interval

    def _write_row(self) -> None:
        now = time.monotonic()
        steps0, time0 = self._last_row
        pending = self._pending
        row = {
            "env_steps": self.env_steps,
            "wall_seconds": self.elapsed(now),
            "updates": self.updates,
            "episodes": self.episodes,
            "mean_return": mean_or_nan(pending["returns"]),
            "mean_length": mean_or_nan(pending["lengths"]),
            "policy_loss": mean_or_nan(pending["policy"]),
            "value_loss": mean_or_nan(pending["value"]),
            "entropy": mean_or_nan(pending["entropy"]),
            **{name: mean_or_nan(pending[name]) for name in EXPLORATION_COLUMNS},
            "grad_norm": mean_or_nan(pending["grad_norm"]),
            "lr": self.settings.lr_at(self.env_steps, self.elapsed(now)),
            "steps_per_second": (self.env_steps - steps0) / max(now - time0, 1e-9),
            "replay_updates": self.replay_updates,
            "updates_per_second": pending["replayed"].count(False) / max(now - time0, 1e-9),
            "replay_updates_per_second": pending["replayed"].count(True) / max(now - time0, 1e-9),
            "rollout_ms": mean_or_nan(pending["rollout"]),
            "update_ms": mean_or_nan(pending["update"]),
            "policy_lag": mean_or_nan(pending["lag"]),
        }
        self.train_log.write(row)
        for values in pending.values():
            values.clear()
        self._last_row = (self.env_steps, now)
        self._tensorboard("train", row)  # last: should it fail, close() must not write the row to metrics.csv again
        self.on_row("metrics", row)

    def _on_eval(self, evaluation: Evaluation) -> None:
        returns = evaluation.returns
        mean = statistics.fmean(returns)
        row = {
            "env_steps": evaluation.env_steps,
            "wall_seconds": evaluation.wall_seconds,
            "mean_return": mean,
            "std_return": statistics.pstdev(returns),
            "min_return": min(returns),
            "max_return": max(returns),
            "episodes": len(returns),
            "confirmation": int(evaluation.confirmation),
        }
        self.eval_log.write(row)
        if evaluation.confirmation:
            self._on_confirmation(evaluation, mean)
        else:
            self._tensorboard("eval", row)
            self.last_eval = mean
            self.best_eval = mean if self.best_eval is None else max(self.best_eval, mean)
        if evaluation.solved and self.solved_at is None:
            self.solved_at = (evaluation.env_steps, evaluation.wall_seconds)
        self.on_row("evaluation", row)

    def _on_confirmation(self, evaluation: Evaluation, mean: float) -> None:
        episodes = len(evaluation.returns)
        if self.solved_at is None and (self.confirmed is None or evaluation.solved or mean > self.confirmed[0]):
            self.confirmed = (mean, episodes)
        self._tensorboard("confirmation", {"env_steps": evaluation.env_steps, "mean_return": mean})
        self.console.message(
            f"confirmation of the evaluation at {evaluation.env_steps:,} env steps: mean "
            f"{mean:.1f} over {episodes} new episodes: "
            + ("solved" if evaluation.solved else "below the target, training on")
        )

    def _tensorboard(self, group: str, row: dict) -> None:
        if self.tb_dir is None:
            return
        if self._tb is None:
            from a3c.run.tensorboard_events import EventFile  # 80 ms of imports: only when used

            self._tb = EventFile(self.tb_dir)
        scalars = {
            f"{group}/{key}": value
            for key, value in row.items()
            if key != "env_steps" and not (isinstance(value, float) and math.isnan(value))
        }
        self._tb.write_scalars(row["env_steps"], scalars)

    def maybe_print(self) -> None:
        now = time.monotonic()
        if now - self._last_print[1] >= self.settings.print_interval:
            self.print_progress(now)

    def print_progress(self, now: Optional[float] = None) -> None:
        now = now if now is not None else time.monotonic()
        steps0, time0 = self._last_print
        rate = (self.env_steps - steps0) / max(now - time0, 1e-9)
        recent = f"{mean_or_nan(self.recent_returns):.1f}" if self.recent_returns else "-"
        last_eval = f"{self.last_eval:.1f}" if self.last_eval is not None else "-"
        used = self.settings.budget_used(self.env_steps, self.elapsed(now))
        bar = progress_bar(used) + " " if self.console.live else ""
        left = format_duration(time_left(used, self.elapsed(now)))
        self.console.progress(
            f"{bar}[{self.elapsed(now):7.1f}s] steps {self.env_steps:,} | {rate:,.0f} steps/s | "
            f"return {recent} (last {len(self.recent_returns)} episodes) | eval {last_eval} | "
            f"{min(used, 1.0):.0%} of the budget, {left} left"
        )
        self._last_print = (self.env_steps, now)

    def summary(self, env_id: str, env_steps: int, target_return: Optional[float], stop_reason: str) -> dict:
        wall = self.elapsed()
        solved_steps, solved_wall = self.solved_at if self.solved_at else (None, None)
        return {
            "env": env_id,
            "env_steps": env_steps,
            "wall_seconds": round(wall, 3),
            "steps_per_second": round(env_steps / max(wall, 1e-9), 1),
            "updates": self.updates,
            "episodes": self.episodes,
            "best_eval_return": self.best_eval,
            "last_eval_return": self.last_eval,
            "target_return": target_return,
            "solved": self.solved_at is not None,
            "confirmed_return": None if self.confirmed is None else round(self.confirmed[0], 6),
            "confirmed_episodes": None if self.confirmed is None else self.confirmed[1],
            "solved_env_steps": solved_steps,
            "solved_wall_seconds": None if solved_wall is None else round(solved_wall, 3),
            "nonfinite_updates": self.nonfinite_updates,
            "stop_reason": stop_reason,
        }

    def close(self) -> None:
        """Writes the last row, then closes every file, even where that row or another file failed (a full
        disk): a failing TensorBoard file leaves the CSVs closed."""
        try:
            if self._last_row[0] != self.env_steps:  # the steps since the last full interval
                self._write_row()
        finally:
            self._close_files()

    def _close_files(self) -> None:
        with ExitStack() as files:  # each close runs even when one before it raised; the error is raised after
            for file in (self.train_log, self.eval_log, self._tb):
                if file is not None:
                    files.callback(file.close)
