"""Shared setup: one torch thread per process before anything forks (docs/design/facts.md, fact 3)."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported anywhere in this process

from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

REPO_ROOT = Path(__file__).resolve().parent.parent
# the benchmarks' packages (harness, learning, speed, scale, faults), imported as their scripts import them
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))


def _swallow(*args, **kwargs) -> None:
    pass


@pytest.fixture
def quiet():
    """A print_fn for a3c.run.trainer.train that drops the progress output."""
    return _swallow


def run_cli(*args: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    """python main.py ARGS from the repo root, as a user runs it; `env`: its environment variables."""
    env = env or dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "main.py", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def run_cli_without(module: str, *args: str) -> subprocess.CompletedProcess:
    """python main.py ARGS with `import module` failing, whether it is installed or not."""
    code = (
        f"import runpy, sys; sys.modules[{module!r}] = None; sys.argv = ['main.py', *sys.argv[1:]]; "
        "runpy.run_path('main.py', run_name='__main__')"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=50
    )


# A CartPole run that goes on until it is stopped: the faults and signals tests stop it
LONG_RUN = [
    "--env",
    "CartPole-v1",
    "--num-processes",
    "2",
    "--target-return",
    "none",
    "--max-steps",
    "50000000",
    "--print-interval",
    "0.5",
    "--no-tensorboard",
]


def start_cli(*args: str, env: dict | None = None, new_session: bool = False) -> subprocess.Popen:
    """python main.py ARGS, running; `new_session`: in a process group of its own (the trainer and its
    children), which the test may signal as a whole."""
    env = env or dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen(
        [sys.executable, "main.py", *args],
        cwd=REPO_ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=new_session,
    )


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def wait_for_children(process: subprocess.Popen, count: int, timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = children(process.pid)
        if len(found) >= count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"the trainer did not start {count} processes")


def wait_for_metrics_rows(run_dir: Path, rows: int, timeout: float = 60, name: str = "metrics.csv") -> None:
    """Until RUN_DIR/`name` (metrics.csv, or eval.csv) holds more than `rows` rows."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = run_dir / name
        if path.exists() and len(path.read_text().splitlines()) > rows:
            return
        time.sleep(0.1)
    raise AssertionError(f"no new rows in {name}: the run made no progress")


def interrupt(process: subprocess.Popen) -> str:
    """Ctrl-C a running trainer; it must stop cleanly (exit code 130). Returns its stderr."""
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    return err


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


def all_ended_soon(pids: list[int], timeout: float = 5.0) -> bool:
    """Whether every one of `pids` ends within `timeout` seconds: a trainer that quits at once SIGKILLs its
    children without waiting for them, and a loaded machine takes a moment to end a killed process."""
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def metrics_rows(run_dir: Path, name: str = "metrics.csv") -> list[dict]:
    with open(run_dir / name, newline="") as file:
        return list(csv.DictReader(file))


def assert_one_line_usage_error(result: subprocess.CompletedProcess, *words: str) -> str:
    """Exit code 2, no traceback, exactly one 'Error: ...' line that holds every word."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(error_lines) == 1, result.stderr
    for word in words:
        assert word in error_lines[0], error_lines[0]
    return error_lines[0]


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs: a disk that fills up for real (ENOSPC from the kernel)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if result.returncode != 0:
        pytest.skip(f"mounting a small tmpfs needs root: {result.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "--lazy", str(mount)], check=False)


def fill(disk) -> Path:
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as file:
        try:
            while True:
                file.write(bytes(1 << 16))
        except OSError:
            pass
    return filler


def namespaces_can_be_made() -> str:
    """Why this machine cannot make network namespaces; empty if it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "needs iproute2's ip and tc"
    name = f"a3c-probe-{os.getpid()}"  # its own: several test processes may ask at once
    probe = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return "" if probe.returncode == 0 else f"ip netns add failed: {probe.stderr.strip()}"


def our_namespaces() -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith("a3c-")]
