"""--track mlflow and --track wandb with the real libraries, in their local and offline modes: what they hold
at the end of a short CartPole run is the run's config.json, its CSV rows and its files."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import struct
import sys
from pathlib import Path

import pytest

import a3c
from a3c.errors import ConfigError
from a3c.run.console import Console
from a3c.run.tracking import Tracker, require_tracker, start_process

from .conftest import assert_one_line_usage_error, run_cli, run_cli_without

# 2 workers, an evaluation every 0.2 s; a target low enough to be confirmed (confirmation rows) early on
CARTPOLE_RUN = dict(
    env="CartPole-v1",
    num_processes=2,
    envs_per_process=4,
    t_max=5,
    max_steps=20_000,
    log_interval=500,
    eval_interval=0.2,
    eval_episodes=5,
    target_return=25.0,
    confirm_episodes=5,
    tensorboard=False,
)
EXIT_CODES = {"interrupted": 130}  # the trainer's, for a stop by Ctrl-C


def csv_rows(path) -> list[dict]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def logged_rows(run_dir) -> dict[str, list[dict]]:
    """The rows of the run's CSVs as the tracker logs them, by group: their numbers, a NaN left out."""
    groups = {"train": csv_rows(run_dir / "metrics.csv"), "eval": [], "confirmation": []}
    for row in csv_rows(run_dir / "eval.csv"):
        groups["confirmation" if row.pop("confirmation") == "1" else "eval"].append(row)
    return {
        group: [{key: float(value) for key, value in row.items() if not math.isnan(float(value))} for row in rows]
        for group, rows in groups.items()
    }


def assert_same_rows(logged: list[dict], written: list[dict]) -> None:
    assert [sorted(row) for row in logged] == [sorted(row) for row in written]
    for row, csv_row in zip(logged, written):
        assert row == pytest.approx(csv_row, rel=1e-6, abs=1e-6)  # the CSV keeps 6 decimals


def train(tmp_path, track: str) -> Path:
    result = a3c.train(a3c.Config(**CARTPOLE_RUN, track=track, run_dir=str(tmp_path / "run")), verbose=False)
    assert result.summary["stop_reason"] in ("solved", "max_steps")
    written = logged_rows(result.run_dir)
    assert len(written["train"]) >= 2 and written["eval"] and written["confirmation"]
    return result.run_dir


@pytest.fixture
def mlflow_store(tmp_path, monkeypatch):
    """A fresh MLflow store in tmp_path (its artifacts in ./mlruns, so the working directory too)."""
    mlflow = pytest.importorskip("mlflow", reason="--track mlflow needs pip install -r requirements-track.txt")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    return mlflow.MlflowClient(uri)


def mlflow_runs(client) -> dict:
    return {run.info.run_name: run for run in client.search_runs([client.get_experiment_by_name("a3c").experiment_id])}


def mlflow_rows(client, run_id: str, group: str, columns: list[str]) -> list[dict]:
    """The group's rows rebuilt from each metric's history: step and value."""
    rows: dict[int, dict] = {}
    for column in columns:
        for metric in client.get_metric_history(run_id, f"{group}/{column}"):
            rows.setdefault(metric.step, {"env_steps": float(metric.step)})[column] = metric.value
    return [rows[step] for step in sorted(rows)]


def mlflow_files(client, run_id: str, folder=None) -> set[str]:
    found = set()
    for entry in client.list_artifacts(run_id, folder):
        found |= mlflow_files(client, run_id, entry.path) if entry.is_dir else {entry.path}
    return found


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_mlflow_holds_the_config_every_row_and_the_files(tmp_path, mlflow_store):
    run_dir = train(tmp_path, "mlflow")
    (run,) = mlflow_runs(mlflow_store).values()
    assert run.info.run_name == "run" and run.info.status == "FINISHED"
    config = json.loads((run_dir / "config.json").read_text())
    assert run.data.params == {key: str(value) for key, value in config.items()}
    for group, written in logged_rows(run_dir).items():
        columns = {column for row in written for column in row} - {"env_steps"}
        assert_same_rows(mlflow_rows(mlflow_store, run.info.run_id, group, sorted(columns)), written)
    assert mlflow_files(mlflow_store, run.info.run_id) == {"summary.json", "checkpoints/best.pt"}


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_the_tracking_process_logs_videos_and_how_the_run_ended(tmp_path, mlflow_store):
    """A run stopped by Ctrl-C is KILLED, one whose trainer vanished (no summary) FAILED; videos are files too."""
    run_dirs = {name: tmp_path / name for name in ("interrupted", "vanished")}
    trackers = {}
    for name, run_dir in run_dirs.items():
        (run_dir / "videos").mkdir(parents=True)
        (run_dir / "config.json").write_text(json.dumps(a3c.Config().to_dict()))
        (run_dir / "videos" / "1000.mp4").write_bytes(b"not really a video")
        trackers[name] = Tracker("mlflow", Console(lambda *a, **k: None), EXIT_CODES)
        trackers[name].on_start(a3c.Config(), run_dir)
    trackers["interrupted"].on_metrics({"env_steps": 1000, "mean_return": 20.5, "policy_loss": math.nan})
    (run_dirs["interrupted"] / "summary.json").write_text("{}")
    trackers["interrupted"].on_end({"stop_reason": "interrupted"})
    trackers["vanished"].process.stdin.close()  # as when the trainer is killed
    assert trackers["vanished"].process.wait(timeout=60) == 0
    runs = mlflow_runs(mlflow_store)
    assert runs["interrupted"].info.status == "KILLED" and runs["vanished"].info.status == "FAILED"
    assert runs["interrupted"].data.metrics == {"train/mean_return": 20.5}
    assert mlflow_files(mlflow_store, runs["interrupted"].info.run_id) == {"summary.json", "videos/1000.mp4"}


def test_a_tracking_process_whose_run_never_starts_ends_without_writing(tmp_path, monkeypatch):
    """Started before the trainer checks its settings, as the command line does: a run refused meanwhile
    closes the pipe before the run dir is told, and nothing is written (no ./mlflow.db, MLflow's default)."""
    pytest.importorskip("mlflow", reason="--track mlflow needs pip install -r requirements-track.txt")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    process = start_process("mlflow")
    process.stdin.close()
    assert process.wait(timeout=60) == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_tracking_process_that_dies_stops_the_run_with_one_line(tmp_path):
    pytest.importorskip("mlflow", reason="--track mlflow needs pip install -r requirements-track.txt")
    run_dir = tmp_path / "run"
    result = run_cli(
        "--env",
        "CartPole-v1",
        "--num-processes",
        "2",
        "--max-steps",
        "50000000",
        "--eval-interval",
        "0.2",
        "--eval-episodes",
        "3",
        "--target-return",
        "none",
        "--no-tensorboard",
        "--track",
        "mlflow",
        "--run-dir",
        str(run_dir),
        env={**os.environ, "MLFLOW_TRACKING_URI": "nowhere://at-all"},
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("callback --track mlflow")]
    assert re.match(
        r"callback --track mlflow raised TrackingError in on_(evaluation|metrics): the mlflow tracking "
        r"process exited with code 1: ",
        line,
    ), line
    assert "URI 'nowhere://at-all'" in line  # the library's own words, the last line of tracking.log
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "callback_failed"


# W&B's offline run file, run-<id>.wandb: a header, then LevelDB-log records of protobufs

WANDB_HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK, CHUNK_HEADER = 32 * 1024, 7
FULL, LAST = 1, 4  # the chunk types that end a record (2 and 3 begin and continue one)


def wandb_records(path) -> list:
    """Every Record of a .wandb file: chunks of 32 KiB blocks (crc32, length, type), joined into records."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data.startswith(WANDB_HEADER)
    records, payload, at = [], b"", len(WANDB_HEADER)
    while at + CHUNK_HEADER <= len(data):
        if BLOCK - at % BLOCK < CHUNK_HEADER:  # a block's tail too short for a chunk: padding
            at += BLOCK - at % BLOCK
            continue
        _, length, kind = struct.unpack("<IHB", data[at : at + CHUNK_HEADER])
        if kind == 0:  # zeros: the end of what was written
            break
        payload += data[at + CHUNK_HEADER : at + CHUNK_HEADER + length]
        at += CHUNK_HEADER + length
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(payload)
            records.append(record)
            payload = b""
    return records


def of_type(records: list, kind: str) -> list:
    return [getattr(record, kind) for record in records if record.WhichOneof("record_type") == kind]


def wandb_rows(records: list) -> dict[str, list[dict]]:
    """The logged rows by group, without W&B's own keys (_step, _runtime, _timestamp)."""
    groups = {"train": [], "eval": [], "confirmation": []}
    for history in of_type(records, "history"):
        items = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in history.item}
        row = {key: float(value) for key, value in items.items() if not key.startswith("_")}
        (group,) = {key.split("/")[0] for key in row}
        groups[group].append({key.split("/", 1)[1]: value for key, value in row.items()})
    return groups


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_wandb_offline_holds_the_config_every_row_and_the_files(tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="--track wandb needs pip install -r requirements-track.txt")
    monkeypatch.setenv("WANDB_MODE", "offline")
    for name in ("WANDB_DIR", "WANDB_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    for name in ("WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):  # staged artifacts, settings: not in ~
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    run_dir = train(tmp_path, "wandb")
    (path,) = (run_dir / "wandb").glob("offline-run-*/run-*.wandb")
    records = wandb_records(path)
    (run,) = of_type(records, "run")
    assert run.display_name == "run" and run.project == "a3c"
    config = {item.key: json.loads(item.value_json) for item in run.config.update if item.key != "_wandb"}
    assert config == json.loads((run_dir / "config.json").read_text())
    logged = wandb_rows(records)
    for group, written in logged_rows(run_dir).items():
        assert_same_rows(logged[group], written)
    (artifact,) = of_type(records, "artifact")
    assert {entry.path for entry in artifact.manifest.contents} == {"summary.json", "checkpoints/best.pt"}
    assert [exit.exit_code for exit in of_type(records, "exit")] == [0]


def test_track_takes_none_mlflow_or_wandb(tmp_path):
    result = run_cli("--track", "bogus", "--run-dir", str(tmp_path / "run"))
    assert_one_line_usage_error(result, "--track", "bogus")
    with pytest.raises(ConfigError, match="--track must be one of none, mlflow, wandb"):
        a3c.Config(track="bogus")


@pytest.mark.parametrize(
    "kind, hidden, uri, missing",
    [
        ("mlflow", "mlflow", None, "mlflow"),
        ("wandb", "wandb", None, "wandb"),
        ("mlflow", "sqlalchemy", None, "sqlalchemy"),  # MLflow's default store is a database
        ("mlflow", "alembic", "postgresql://db/mlflow", "alembic"),
        ("mlflow", "sqlalchemy", "http://localhost:5000", None),  # a tracking server's client needs no database
    ],
)
def test_a_missing_library_is_named_with_the_extra(kind, hidden, uri, missing, monkeypatch):
    for other in ("mlflow", "sqlalchemy", "alembic") if kind == "mlflow" else ():
        if other != hidden:  # only the hidden one may be missing, for the message to name it alone
            pytest.importorskip(other, reason="needs the track extra: pip install -r requirements-track.txt")
    monkeypatch.setitem(sys.modules, hidden, None)  # its import fails, installed or not
    if uri is None:
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    else:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    if missing is None:
        require_tracker(kind)
        return
    with pytest.raises(ConfigError, match=rf"^--track {kind} needs {missing}: pip install -r requirements-track.txt$"):
        require_tracker(kind)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_missing_library_is_refused_before_the_run_starts(tmp_path):
    result = run_cli_without("mlflow", "--track", "mlflow", "--max-steps", "100", "--run-dir", str(tmp_path / "run"))
    assert_one_line_usage_error(result, "--track mlflow needs mlflow", "pip install -r requirements-track.txt")
    assert not (tmp_path / "run").exists()
