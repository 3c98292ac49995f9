"""Experiment tracking, --track mlflow or --track wandb: the run's config as parameters, every row of
metrics.csv and eval.csv as metrics against env steps, and summary.json, checkpoints/best.pt and
videos/* as artifacts at the end.

The library runs in a process of its own, which the Tracker callback feeds JSON lines on its stdin:
the run dir, each row as it is written, then the summary. The trainer forks its workers after the run
starts, in waves and again on restarts, and the libraries run threads (W&B a service process too): a
fork while such a thread holds a lock can deadlock the child. Starting a subprocess is fork+exec, safe
at any time, and the library's import (MLflow's with its SQLite store: about 2 s of CPU) does not hold
up the trainer: the command line starts the process before it imports torch, so both imports run at
once, on two cores.
The process's output goes to RUN_DIR/tracking.log; the run it tracks is named after the run dir.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

from a3c.errors import ConfigError, first_line
from a3c.run.callbacks import Callback

LOG_NAME = "tracking.log"
PROJECT = "a3c"  # MLflow's experiment and W&B's project, unless MLFLOW_EXPERIMENT_NAME or WANDB_PROJECT says otherwise
GROUPS = ("train", "eval", "confirmation")  # the metric prefixes, as in tb/: metrics.csv, evaluations, confirmations
SQL_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")  # MLflow stores that need SQLAlchemy and alembic
# the tracking process imports this very package: the folder it was imported from comes first on its path
CHILD_CODE = "import sys; sys.path[0] = sys.argv.pop(1); from a3c.run.tracking import main; main(sys.argv[1:])"
PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
END_WAIT_NOTICE_SECONDS = 1.0
PREEMPTED_EXIT_CODE = 75  # EX_TEMPFAIL, "try again": a run stopped at a scheduler's warning, to be resumed
_started: dict[str, subprocess.Popen] = {}  # by prestart(), for the run's Tracker to take


class TrackingError(RuntimeError):
    """The tracking process died; its last line says why (the CSVs still hold every row)."""


def mlflow_database() -> bool:
    """Whether MLflow's store is a database: its default (sqlite:///mlflow.db) is, a tracking server is not."""
    scheme = os.environ.get("MLFLOW_TRACKING_URI", "sqlite:///mlflow.db").split(":", 1)[0].split("+")[0]
    return scheme in SQL_SCHEMES


def tracker_modules(kind: str) -> list[str]:
    """What --track KIND imports; a database store needs SQLAlchemy and alembic, which mlflow-skinny leaves out."""
    if kind == "wandb":
        return ["wandb"]
    return ["mlflow", *(("sqlalchemy", "alembic") if mlflow_database() else ())]


def require_tracker(kind: str) -> None:
    """Refuse a missing library before anything is written. find_spec, not an import: the import
    (threads, seconds of CPU) belongs to the tracking process."""
    if kind == "none":
        return
    missing = [name for name in tracker_modules(kind) if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"--track {kind} needs {', '.join(missing)}: pip install -r requirements-track.txt")


def start_process(kind: str) -> subprocess.Popen:
    """The tracking process, importing its library; until it is told the run dir, its output is dropped."""
    return subprocess.Popen(
        [sys.executable, "-c", CHILD_CODE, PACKAGE_ROOT, kind],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def prestart(kind: str) -> None:
    """Start --track's process now, for the run's Tracker: the command line calls this before it imports
    torch, while the second core waits. A run refused meanwhile closes the pipe, and the process ends
    without having written anything."""
    if kind != "none" and kind not in _started:
        _started[kind] = start_process(kind)


class Tracker(Callback):
    """The trainer's side: starts the tracking process, writes it a line per row, and waits for it at the
    end. A dead tracking process is reported once, by raising from the hook (the run stops,
    callback_failed); its later hooks do nothing."""

    def __init__(self, kind: str, console, exit_codes: dict):
        self.kind, self.console, self.exit_codes = kind, console, exit_codes
        self.__name__ = f"--track {kind}"  # how the trainer's line about a failure names this callback
        self.process = None
        self.log_file = None

    def on_start(self, config, run_dir: Path) -> None:
        self.log_file = run_dir / LOG_NAME
        self.process = _started.pop(self.kind, None) or start_process(self.kind)
        self.send({"run_dir": str(run_dir)})
        self.console.message(f"tracking with {self.kind} as run {run_dir.name}; its log: {self.log_file}")

    def on_metrics(self, row: dict) -> None:
        self.send({"group": "train", "row": row})

    def on_evaluation(self, row: dict) -> None:
        self.send({"group": "confirmation" if row["confirmation"] else "eval", "row": row})

    def on_end(self, summary: dict) -> None:
        self.send({"summary": summary, "exit_code": self.exit_codes.get(summary["stop_reason"], 0)})
        if self.process is None:
            return
        self.process.stdin.close()
        code = self.wait()
        if code:
            raise self.died(code)

    def send(self, message: dict) -> None:
        if self.process is None:  # dead, and reported
            return
        if self.process.poll() is not None:
            raise self.died(self.process.returncode)
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise self.died(self.process.wait()) from None

    def wait(self) -> int:
        """The process's exit code once it has logged the end; Ctrl-C leaves it to finish alone (it
        ignores SIGINT), as 0."""
        try:
            return self.process.wait(timeout=END_WAIT_NOTICE_SECONDS)
        except subprocess.TimeoutExpired:
            self.console.message(
                f"waiting for {self.kind} to log the end of the run (Ctrl-C leaves it to "
                f"finish alone; its log: {self.log_file})"
            )
        try:
            return self.process.wait()
        except KeyboardInterrupt:
            self.console.message(f"left {self.kind} to finish alone; its log: {self.log_file}")
            return 0

    def died(self, code: int) -> TrackingError:
        process, self.process = self.process, None
        with contextlib.suppress(OSError):  # the pipe is broken: its buffered line cannot be flushed
            process.stdin.close()
        return TrackingError(f"the {self.kind} tracking process exited with code {code}: {last_line(self.log_file)}")


def last_line(path: Path) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


# The tracking process


def metric_values(row: dict) -> dict[str, float]:
    """A row's measurements: its numbers but env_steps (the step) and the confirmation flag (the group);
    NaN, where no episode finished since the last row, is no measurement (tb/ leaves it out too)."""
    return {
        key: float(value)
        for key, value in row.items()
        if key not in ("env_steps", "confirmation") and not math.isnan(value)
    }


def outputs(run_dir: Path) -> list[Path]:
    """The files logged at the end, those that exist."""
    files = [run_dir / "summary.json", run_dir / "checkpoints" / "best.pt", *sorted((run_dir / "videos").glob("*"))]
    return [path for path in files if path.is_file()]


class MlflowRun:
    """A run of MLflow's tracking store: MLFLOW_TRACKING_URI, or MLflow's default (./mlflow.db)."""

    def __init__(self):
        """The imports (1.2 s of CPU, and 0.7 s more for a database store), while the trainer imports torch;
        the store is opened once the run starts, so that a run refused meanwhile leaves no ./mlflow.db."""
        import mlflow

        if mlflow_database():
            import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
        self.mlflow = mlflow

    def start(self, run_dir: Path, config: dict) -> None:
        from mlflow.entities import Param

        self.client = self.mlflow.MlflowClient()
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or PROJECT
        self.run_id = self.client.create_run(experiment_id(self.client, name), run_name=run_dir.name).info.run_id
        self.client.log_batch(self.run_id, params=[Param(key, str(value)) for key, value in config.items()])
        print(f"mlflow: run {self.run_id} of experiment {name} in {self.client.tracking_uri}", flush=True)

    def log(self, group: str, step: int, values: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(
            self.run_id, metrics=[Metric(f"{group}/{key}", value, now, step) for key, value in values.items()]
        )

    def finish(self, run_dir: Path, files: list[Path], exit_code: int) -> None:
        for path in files:
            folder = path.parent.relative_to(run_dir).as_posix()
            self.client.log_artifact(self.run_id, str(path), None if folder == "." else folder)
        # a signal's exit code (Ctrl-C: 130, SIGTERM: 143) or a scheduler's warning's (75) is a run stopped from
        # outside
        stopped = exit_code > 128 or exit_code == PREEMPTED_EXIT_CODE
        self.client.set_terminated(self.run_id, "FINISHED" if exit_code == 0 else "KILLED" if stopped else "FAILED")


def experiment_id(client, name: str) -> str:
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    from mlflow.exceptions import MlflowException

    try:
        return client.create_experiment(name)
    except MlflowException:  # another run created it meanwhile
        return client.get_experiment_by_name(name).experiment_id


class WandbRun:
    """A W&B run, in the project WANDB_PROJECT or a3c, its files in RUN_DIR/wandb unless WANDB_DIR is set;
    W&B reads the rest of its environment itself (WANDB_MODE=offline: no network)."""

    def __init__(self):
        """The import, and W&B's service process started (0.2 s), while the trainer imports torch."""
        import wandb

        wandb.setup()
        self.wandb = wandb

    def start(self, run_dir: Path, config: dict) -> None:
        self.run = self.wandb.init(
            project=os.environ.get("WANDB_PROJECT") or PROJECT,
            name=run_dir.name,
            config=config,
            dir=None if os.environ.get("WANDB_DIR") else run_dir,
        )
        for group in GROUPS:  # each group against its own env steps: an evaluation's may be older than the last row's
            self.run.define_metric(f"{group}/env_steps")
            self.run.define_metric(f"{group}/*", step_metric=f"{group}/env_steps")

    def log(self, group: str, step: int, values: dict[str, float]) -> None:
        self.run.log({f"{group}/env_steps": step, **{f"{group}/{key}": value for key, value in values.items()}})

    def finish(self, run_dir: Path, files: list[Path], exit_code: int) -> None:
        if files:
            artifact = self.wandb.Artifact(re.sub(r"[^A-Za-z0-9_.-]", "_", run_dir.name), type="a3c-run")
            for path in files:
                artifact.add_file(str(path), name=path.relative_to(run_dir).as_posix())
            self.run.log_artifact(artifact)
        self.run.finish(exit_code=exit_code)


RUNS = {"mlflow": MlflowRun, "wandb": WandbRun}


def track(run, run_dir: Path, lines) -> None:
    """Log the run as the trainer's lines come; without its end (the trainer died), the run failed."""
    run.start(run_dir, json.loads((run_dir / "config.json").read_text()))
    for line in lines:
        message = json.loads(line)
        if "summary" in message:
            run.finish(run_dir, outputs(run_dir), message["exit_code"])
            return
        run.log(message["group"], message["row"]["env_steps"], metric_values(message["row"]))
    run.finish(run_dir, [], 1)


def output_to(path: Path) -> None:
    """This process's stdout and stderr from now on (W&B's service, started before, logs to files of its own)."""
    with open(path, "ab") as log:  # a resumed run's process appends to the log
        for fd in (1, 2):
            os.dup2(log.fileno(), fd)


def main(argv: list[str]) -> None:
    # however the run is stopped, the trainer's end (the summary, or the end of stdin) ends this process
    # the trainer's STOP_SIGNALS, spelled here: importing a3c.parallel would load torch into this process
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
        signal.signal(signum, signal.SIG_IGN)
    (kind,) = argv
    try:
        run = RUNS[kind]()  # the import, while the trainer starts
    except Exception as error:  # said in the run's log, once there is one
        run = error
    line = sys.stdin.readline()
    if not line:  # the trainer stopped before the run started (a setting it refused)
        return
    run_dir = Path(json.loads(line)["run_dir"])
    output_to(run_dir / LOG_NAME)
    try:
        if isinstance(run, Exception):
            raise run
        track(run, run_dir, sys.stdin)
    except Exception as error:
        traceback.print_exc()
        print(f"{type(error).__name__}: {first_line(error)}", file=sys.stderr, flush=True)
        os._exit(1)  # at once: the libraries' exit handlers would print after the line the trainer reports
