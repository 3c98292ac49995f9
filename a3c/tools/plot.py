"""Learning curves of one or more run directories, drawn to an image with matplotlib.

Reading (read_curves) is plain csv/json and separate from drawing (draw_figure),
which builds a matplotlib Figure on the Agg canvas without touching pyplot's
global state; plot_runs does both and saves the figure. matplotlib is imported
inside draw_figure only, as it is slow to import.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from a3c.errors import PlotError


@dataclass
class Curves:
    """The series of one run. Training rows without a finished episode are left out."""

    name: str
    env: Optional[str] = None
    train_steps: list[float] = field(default_factory=list)
    train_seconds: list[float] = field(default_factory=list)
    train_return: list[float] = field(default_factory=list)
    eval_steps: list[float] = field(default_factory=list)
    eval_seconds: list[float] = field(default_factory=list)
    eval_return: list[float] = field(default_factory=list)
    eval_std: list[float] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.name} ({self.env})" if self.env else self.name


def _number(text: Optional[str]) -> float:
    """A CSV cell as a float; an empty cell is NaN."""
    text = (text or "").strip()
    return float(text) if text else math.nan


def _read_rows(path: Path, columns: list[str], optional: tuple[str, ...] = ()) -> list[list[float]]:
    """The given columns of each row of a CSV file with a header, as floats; then the `optional` ones,
    0 where the file (an older version's) lacks them."""
    try:
        with open(path, newline="") as file:
            reader = csv.DictReader(file)
            header, rows = reader.fieldnames or [], list(reader)
    except (OSError, csv.Error, UnicodeDecodeError) as error:
        raise PlotError(f"{path}: cannot read it ({error})") from None
    missing = [c for c in columns if c not in header]
    if missing:
        raise PlotError(f"{path}: missing column(s) {', '.join(missing)}")
    try:
        return [[_number(row[c]) for c in columns] + [_number(row.get(c) or "0") for c in optional] for row in rows]
    except ValueError as error:  # float() of a cell that is not a number
        raise PlotError(f"{path}: not a number in it ({error})") from None


def _read_env(run_dir: Path) -> Optional[str]:
    """The env id from config.json, else summary.json; None when neither says."""
    for name in ("config.json", "summary.json"):
        try:
            env = json.loads((run_dir / name).read_text()).get("env")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(env, str) and env:
            return env
    return None


def read_curves(run_dir: str | Path) -> Curves:
    """The training and evaluation return curves of a run directory.

    metrics.csv is required; eval.csv is optional (an evaluator-less run has
    none, or only its header).
    """
    run_dir = Path(run_dir)
    metrics = run_dir / "metrics.csv"
    if not metrics.is_file():
        raise PlotError(f"{run_dir}: no metrics.csv (not a run directory?)")
    curves = Curves(name=run_dir.resolve().name, env=_read_env(run_dir))
    for steps, seconds, ret in _read_rows(metrics, ["env_steps", "wall_seconds", "mean_return"]):
        if not math.isnan(ret):
            curves.train_steps.append(steps)
            curves.train_seconds.append(seconds)
            curves.train_return.append(ret)
    evals = run_dir / "eval.csv"
    if evals.is_file():
        for steps, seconds, ret, std, confirmation in _read_rows(
            evals, ["env_steps", "wall_seconds", "mean_return", "std_return"], optional=("confirmation",)
        ):
            if not math.isnan(ret) and not confirmation:  # a confirmation repeats its evaluation's point
                curves.eval_steps.append(steps)
                curves.eval_seconds.append(seconds)
                curves.eval_return.append(ret)
                curves.eval_std.append(0.0 if math.isnan(std) else std)
    return curves


def draw_figure(runs: list[Curves]):
    """A Figure with return against env steps (left) and wall-clock seconds (right).

    Per run, in its own colour: the training mean return as a thin line
    (labelled "<label> train") and the evaluation mean return as a thicker line
    with markers ("<label> eval") over a band of +- its std.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    by_steps, by_seconds = fig.subplots(1, 2, sharey=True)
    for i, run in enumerate(runs):
        color = f"C{i % 10}"
        for ax, train_x, eval_x in (
            (by_steps, run.train_steps, run.eval_steps),
            (by_seconds, run.train_seconds, run.eval_seconds),
        ):
            ax.plot(train_x, run.train_return, color=color, linewidth=0.8, alpha=0.6, label=f"{run.label} train")
            if run.eval_return:
                ax.plot(
                    eval_x,
                    run.eval_return,
                    color=color,
                    linewidth=2.0,
                    marker="o",
                    markersize=3.5,
                    label=f"{run.label} eval",
                )
                ax.fill_between(
                    eval_x,
                    [m - s for m, s in zip(run.eval_return, run.eval_std)],
                    [m + s for m, s in zip(run.eval_return, run.eval_std)],
                    color=color,
                    alpha=0.15,
                    linewidth=0,
                )
    by_steps.set_xlabel("env steps")
    by_seconds.set_xlabel("wall-clock seconds")
    by_steps.set_ylabel("return")
    for ax in (by_steps, by_seconds):
        ax.grid(True, alpha=0.3)
    envs = sorted({run.env for run in runs if run.env})
    fig.suptitle("Learning curves" + (f": {', '.join(envs)}" if envs else ""))
    if runs:
        by_steps.legend(fontsize="small", loc="best")
    return fig


def plot_runs(run_dirs: list[str | Path], out_path: str | Path) -> Path:
    """Draw the learning curves of run_dirs into out_path (PNG unless its suffix says otherwise)."""
    if not run_dirs:
        raise PlotError("no run directories to plot")
    out_path = Path(out_path)
    fmt = out_path.suffix[1:].lower() or "png"
    runs = [read_curves(run_dir) for run_dir in run_dirs]  # all read before anything is written
    fig = draw_figure(runs)
    if fmt not in fig.canvas.get_supported_filetypes():
        raise PlotError(f"{out_path}: unsupported image format {fmt!r}")
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out_path, format=fmt, dpi=120)
    except OSError as error:
        raise PlotError(f"{out_path}: cannot write it ({error})") from None
    return out_path
