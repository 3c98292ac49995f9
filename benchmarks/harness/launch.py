"""What every suite does: launching the trainer's CLI as a user would (and SB3's runs beside it), timing processes,
the machine's record, results files under benchmarks/results/."""

from __future__ import annotations

import csv
import datetime
import json
import os
import signal
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import matplotlib

from a3c.config.options import as_option, option_name, option_value

from harness.trainer_runs import cpu_features

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
PYTHON = sys.executable
# Classic A3C: one env per worker, 20-step rollouts (ikostrikov/pytorch-a3c's --num-steps 20)
CLASSIC_A3C = {"envs_per_process": 1, "t_max": 20}
# CartPole's preset overrides these defaults of Config: learning/solve.py runs them side by side with it, and the
# throughput benchmarks measure the pipeline with them, comparable across versions
DEFAULTS_WITHOUT_PRESET = {"envs_per_process": 8, "t_max": 10, "replay_ratio": 0}
GRACE_SECONDS = 15.0  # after a timeout: time for a SIGINT-ed trainer to stop its workers and write its summary


def trainer_command(run_dir: Path, repo: Path = REPO, **options) -> list[str]:
    """`python main.py --run-dir DIR --opt-name value ...` for keyword options opt_name=value (a bool: --opt-name
    or --no-opt-name); `repo`:
    the checkout whose main.py runs (another one for a side-by-side run of older code)."""
    command = [PYTHON, str(repo / "main.py"), "--run-dir", str(run_dir)]
    for name, value in options.items():
        if isinstance(value, bool):  # an on/off flag: --name or --no-name, as the presets print it
            command.append(as_option(name, value))
        else:
            command += [option_name(name), option_value(value)]
    return command


def start(command: list[str], cwd: Path = REPO) -> subprocess.Popen:
    """Start a process in its own session, so a stuck one can be ended with all its children. `cwd`: the
    checkout whose code it runs, as Ray's workers import the package from the trainer's directory first."""
    return subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )


def finish(process: subprocess.Popen, timeout: float) -> tuple[str, bool]:
    """Wait for the process; past the timeout interrupt it (SIGINT: the trainer stops cleanly and
    writes its summary), then kill its whole group if it lingers. Returns (output, timed_out)."""
    try:
        return process.communicate(timeout=timeout)[0], False
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        try:
            return process.communicate(timeout=GRACE_SECONDS)[0], True
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            return process.communicate()[0], True


def run_timed(command: list[str], timeout: float, cwd: Path = REPO) -> tuple[float, str, bool]:
    """Whole-process wall-clock seconds (launch to exit), output, timed_out; run in the checkout `cwd`."""
    began = time.monotonic()
    process = start(command, cwd)
    output, timed_out = finish(process, timeout)
    wall = time.monotonic() - began
    if process.returncode != 0 and not timed_out:
        raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}:\n{output}")
    return wall, output, timed_out


def run_sb3(env: str, algo: str, seed: int, timeout: float, target: float, eval_interval: float) -> tuple[float, dict]:
    """sb3_solve.py's whole-process seconds and its JSON line. A run stopped at the timeout prints how far it
    got; one killed outright prints nothing and counts as unsolved, without a curve."""
    command = [
        PYTHON,
        str(REPO / "benchmarks" / "learning" / "sb3_solve.py"),
        "--env",
        env,
        "--algo",
        algo,
        "--seed",
        str(seed),
        "--target",
        str(target),
        "--eval-interval",
        str(eval_interval),
    ]
    wall, output, _ = run_timed(command, timeout)
    lines = output.strip().splitlines()
    try:
        return wall, json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return wall, {"solved": False, "env_steps": None, "final_eval": float("nan"), "curve": []}


def read_summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def run_rows(run_dir: Path, name: str = "metrics.csv") -> list[dict]:
    """The rows of a run's CSV file (metrics.csv, eval.csv) as dicts; none if it has not written the file yet."""
    path = run_dir / name
    if not path.exists():
        return []
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def steady_rate(run_dir: Path, from_steps: float) -> float:
    """Env steps/s between the first row of metrics.csv at `from_steps` or later (start-up behind) and
    the last row before the one written at shutdown."""
    with open(run_dir / "metrics.csv") as file:
        rows = [(int(r["env_steps"]), float(r["wall_seconds"])) for r in csv.DictReader(file)]
    window = [row for row in rows[:-1] if row[0] >= from_steps]
    (steps0, wall0), (steps1, wall1) = window[0], window[-1]
    return (steps1 - steps0) / (wall1 - wall0)


def environment() -> dict:
    """When and where a benchmark ran: recorded in every results file."""
    versions = {}
    for package in ("torch", "gymnasium", "stable-baselines3", "numpy"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "versions": versions,
        "load_average_at_start": os.getloadavg(),
        "cpu": cpu_features(),
    }


def print_table(headers: list[str], rows: list[list]) -> None:
    cells = [[str(c) for c in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def save_json(name: str, data: dict) -> None:
    """benchmarks/results/<name>.json, with the load average at the end added."""
    data["load_average_at_end"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n")
    print(f"\nwrote {RESULTS / f'{name}.json'}")


def save_results(name: str, data: dict, figure) -> None:
    """benchmarks/results/<name>.json and <name>.png."""
    save_json(name, data)
    figure.savefig(RESULTS / f"{name}.png", dpi=120, bbox_inches="tight")
    print(f"wrote {RESULTS / f'{name}.png'}")
