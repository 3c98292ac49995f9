"""Callbacks in the Python API: they see the run's start, every CSV row and the end, and may stop it."""

from __future__ import annotations

import csv
import json
import re

import pytest

import a3c
from a3c.config.settings import for_spaces
from a3c.envs.make import env_spec
from a3c.learn.checkpoint import load_checkpoint
from a3c.run.metrics import EVAL_COLUMNS, TRAIN_COLUMNS

from .conftest import REPO_ROOT

CUE_RUN = dict(
    env="tests.cue_env:Cue-v0",
    num_processes=2,
    envs_per_process=4,
    t_max=5,
    eval_interval=0.2,
    eval_episodes=5,
    log_interval=500,
    target_return=None,
    tensorboard=False,
)


class Recorder(a3c.Callback):
    def __init__(self):
        self.calls = []

    def on_start(self, config, run_dir):
        self.calls.append(("start", config, run_dir))

    def on_metrics(self, row):
        self.calls.append(("metrics", row))

    def on_evaluation(self, row):
        self.calls.append(("evaluation", row))

    def on_end(self, summary):
        self.calls.append(("end", summary))

    def rows(self, kind: str) -> list[dict]:
        return [call[1] for call in self.calls if call[0] == kind]


def csv_rows(path) -> list[dict]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def same_row(row: dict, written: dict, columns: list[str]) -> bool:
    return all(
        float(written[c]) == pytest.approx(float(row[c]), nan_ok=True, rel=1e-6, abs=1e-6)  # CSV: 6 decimals
        for c in columns
    )


class RecordUntilEvaluated(Recorder):
    """Stops the run once it has seen 10 metrics rows and an evaluation: a fixed budget of env steps
    ended before the evaluator's first evaluation on a loaded CI machine."""

    def on_evaluation(self, row):
        super().on_evaluation(row)
        return len(self.rows("metrics")) >= 10


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_callback_sees_the_start_every_row_and_the_summary(tmp_path):
    recorder = RecordUntilEvaluated()
    config = a3c.Config(**CUE_RUN, max_steps=50_000_000, run_dir=str(tmp_path / "run"))
    result = a3c.train(config, verbose=False, callbacks=[recorder])
    kind, started_with, run_dir = recorder.calls[0]
    decided = for_spaces(config, env_spec(config.env)).replace(target_return=None)  # auto made concrete
    assert kind == "start" and started_with == decided and run_dir == result.run_dir
    assert recorder.calls[-1] == ("end", json.loads((result.run_dir / "summary.json").read_text()))
    metrics, evaluations = csv_rows(run_dir / "metrics.csv"), csv_rows(run_dir / "eval.csv")
    assert len(recorder.rows("metrics")) == len(metrics) >= 10 and evaluations
    assert all(same_row(row, written, TRAIN_COLUMNS) for row, written in zip(recorder.rows("metrics"), metrics))
    assert len(recorder.rows("evaluation")) == len(evaluations)
    assert all(same_row(row, written, EVAL_COLUMNS) for row, written in zip(recorder.rows("evaluation"), evaluations))


class StopAfter(a3c.Callback):
    def __init__(self, rows: int):
        self.rows = rows

    def on_metrics(self, row):
        self.rows -= 1
        return self.rows == 0


class Raises(a3c.Callback):
    def on_evaluation(self, row):
        raise RuntimeError("the tracking server is down")


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("callback, stop_reason", [(StopAfter(3), "callback"), (Raises(), "callback_failed")])
def test_a_callback_stops_the_run_cleanly_by_asking_or_by_raising(tmp_path, capfd, callback, stop_reason):
    config = a3c.Config(**CUE_RUN, max_steps=50_000_000, run_dir=str(tmp_path / "run"))
    result = a3c.train(config, verbose=False, callbacks=[callback])
    assert result.summary["stop_reason"] == stop_reason and result.summary["env_steps"] < 1_000_000
    assert load_checkpoint(result.run_dir / "checkpoints" / "last.pt")["env_steps"] == result.summary["env_steps"]
    err = capfd.readouterr().err
    assert "Traceback" not in err
    if stop_reason == "callback_failed":
        (line,) = [line for line in err.splitlines() if line.startswith("callback Raises")]
        assert line == ("callback Raises raised RuntimeError in on_evaluation: the tracking server is down; stopping")


def test_the_guides_callback_stops_as_it_says():
    guide = (REPO_ROOT / "docs" / "guides" / "python-api.md").read_text()
    code = re.search(r"## Callbacks.*?```python\n(.*?)```", guide, re.S).group(1)
    namespace = {"__name__": "guide"}  # the class only: its __main__ block would train
    exec(compile(code, "python-api.md", "exec"), namespace)
    callback = namespace["StopWhenSteady"]()
    row = {"mean_return": 480.0, "confirmation": 0}
    assert [bool(callback.on_evaluation(r)) for r in (row, {**row, "confirmation": 1}, row, row)] == [
        False,
        False,
        False,
        True,
    ]  # three evaluations, the confirmation not counted
