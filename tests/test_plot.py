"""a3c.tools.plot: the curves read from a run directory and drawn into the image."""

from __future__ import annotations

import csv
import json
import math

import pytest

from a3c.run.metrics import EVAL_COLUMNS, TRAIN_COLUMNS
from a3c.tools.plot import PlotError, draw_figure, plot_runs, read_curves

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def train_row(env_steps, wall_seconds, mean_return):
    row = dict.fromkeys(TRAIN_COLUMNS, 0.5)
    row.update(env_steps=env_steps, wall_seconds=wall_seconds, mean_return=mean_return)
    return row


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def make_run(root, name, env, train, evals, summary=None):
    """A run dir; train rows are (steps, seconds, return), return "" or "nan" for no episode."""
    run_dir = root / name
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps({"env": env, "seed": 0}))
    write_csv(run_dir / "metrics.csv", TRAIN_COLUMNS, [train_row(*row) for row in train])
    write_csv(run_dir / "eval.csv", EVAL_COLUMNS, [dict(zip(EVAL_COLUMNS, row)) for row in evals])
    if summary is not None:
        (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


@pytest.fixture
def two_runs(tmp_path):
    first = make_run(
        tmp_path,
        "cartpole-a",
        "CartPole-v1",
        train=[(1000, 0.5, ""), (2000, 1.0, 21.5), (3000, 1.5, "nan"), (4000, 2.0, 80.25)],
        evals=[(1500, 0.7, 30.0, 5.0, 20.0, 40.0), (3500, 1.8, 120.0, 10.0, 100.0, 140.0)],
        summary={"env": "CartPole-v1", "solved": False},
    )
    second = make_run(
        tmp_path,
        "acrobot-b",
        "Acrobot-v1",
        train=[(500, 0.25, -500.0), (1000, 0.5, -350.5), (1500, 0.75, "")],
        evals=[],
    )  # header only: the evaluator had not reported yet
    return first, second


def lines_by_label(ax):
    return {line.get_label(): line for line in ax.get_lines()}


def test_read_curves_skips_rows_without_episodes(two_runs):
    first, second = two_runs
    curves = read_curves(first)
    assert curves.name == "cartpole-a" and curves.env == "CartPole-v1"
    assert curves.train_steps == [2000, 4000]
    assert curves.train_seconds == [1.0, 2.0]
    assert curves.train_return == [21.5, 80.25]
    assert curves.eval_steps == [1500, 3500]
    assert curves.eval_seconds == [0.7, 1.8]
    assert curves.eval_return == [30.0, 120.0]
    assert curves.eval_std == [5.0, 10.0]

    curves = read_curves(second)
    assert curves.env == "Acrobot-v1"
    assert curves.train_steps == [500, 1000] and curves.train_return == [-500.0, -350.5]
    assert curves.eval_steps == [] and curves.eval_return == []


def test_plot_runs_writes_a_png(two_runs, tmp_path):
    out = tmp_path / "plots" / "curves.png"  # the parent folder does not exist yet
    assert plot_runs(list(two_runs), out) == out
    data = out.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000  # two panels, axes, legend: not a blank few-byte image


def test_figure_draws_the_csv_values_of_each_run(two_runs):
    first, second = two_runs
    fig = draw_figure([read_curves(first), read_curves(second)])
    by_steps, by_seconds = fig.axes
    assert by_steps.get_xlabel() == "env steps"
    assert by_seconds.get_xlabel() == "wall-clock seconds"
    assert by_steps.get_ylabel() == "return"
    assert "CartPole-v1" in fig.get_suptitle() and "Acrobot-v1" in fig.get_suptitle()

    for ax, first_x, first_eval_x, second_x in (
        (by_steps, [2000, 4000], [1500, 3500], [500, 1000]),
        (by_seconds, [1.0, 2.0], [0.7, 1.8], [0.25, 0.5]),
    ):
        lines = lines_by_label(ax)
        # the header-only eval.csv of the second run draws no eval line
        assert set(lines) == {
            "cartpole-a (CartPole-v1) train",
            "cartpole-a (CartPole-v1) eval",
            "acrobot-b (Acrobot-v1) train",
        }
        train, evals = lines["cartpole-a (CartPole-v1) train"], lines["cartpole-a (CartPole-v1) eval"]
        assert list(train.get_xdata()) == first_x
        assert list(train.get_ydata()) == [21.5, 80.25]
        assert list(evals.get_xdata()) == first_eval_x
        assert list(evals.get_ydata()) == [30.0, 120.0]
        assert evals.get_linewidth() > train.get_linewidth() and evals.get_marker() not in ("", "None")
        other = lines["acrobot-b (Acrobot-v1) train"]
        assert list(other.get_xdata()) == second_x
        assert list(other.get_ydata()) == [-500.0, -350.5]
        assert other.get_color() != train.get_color()  # one colour per run
        assert train.get_color() == evals.get_color()

    # the +- std band around the eval curve: spans 30 +- 5 and 120 +- 10
    (band,) = by_steps.collections
    ys = band.get_paths()[0].vertices[:, 1]
    assert math.isclose(ys.min(), 25.0) and math.isclose(ys.max(), 130.0)

    legend = [text.get_text() for text in by_steps.get_legend().get_texts()]
    assert legend == ["cartpole-a (CartPole-v1) train", "cartpole-a (CartPole-v1) eval", "acrobot-b (Acrobot-v1) train"]


def test_run_without_eval_csv_or_config_still_plots(tmp_path):
    run_dir = tmp_path / "bare"
    run_dir.mkdir()
    write_csv(run_dir / "metrics.csv", TRAIN_COLUMNS, [train_row(100, 0.1, 9.0)])
    curves = read_curves(run_dir)
    assert curves.env is None and curves.label == "bare"
    assert curves.train_return == [9.0] and curves.eval_return == []
    out = plot_runs([run_dir], tmp_path / "bare.png")
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_env_falls_back_to_summary_json(tmp_path):
    run_dir = make_run(tmp_path, "r", "x", train=[(10, 0.1, 1.0)], evals=[])
    (run_dir / "config.json").unlink()
    (run_dir / "summary.json").write_text(json.dumps({"env": "MountainCar-v0"}))
    assert read_curves(run_dir).env == "MountainCar-v0"


def test_missing_metrics_csv_raises_plot_error_naming_the_dir(two_runs, tmp_path):
    empty = tmp_path / "not-a-run"
    empty.mkdir()
    out = tmp_path / "out.png"
    with pytest.raises(PlotError, match="not-a-run.*metrics.csv") as info:
        plot_runs([two_runs[0], empty], out)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)
    assert not out.exists()  # nothing written when any run is unreadable
    with pytest.raises(PlotError, match="metrics.csv"):
        read_curves(tmp_path / "does-not-exist")


def test_bad_csv_and_bad_arguments_raise_plot_error(two_runs, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "metrics.csv").write_text("env_steps,wall_seconds\n1,2\n")
    with pytest.raises(PlotError, match="missing column.*mean_return"):
        read_curves(broken)
    (broken / "metrics.csv").write_text("env_steps,wall_seconds,mean_return\n1,2,lots\n")
    with pytest.raises(PlotError, match="not a number"):
        read_curves(broken)
    with pytest.raises(PlotError, match="no run directories"):
        plot_runs([], tmp_path / "out.png")
    with pytest.raises(PlotError, match="unsupported image format"):
        plot_runs([two_runs[0]], tmp_path / "out.xyz")
