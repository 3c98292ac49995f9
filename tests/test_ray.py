"""The Ray backend through the CLI, on a module-wide Ray cluster of two one-CPU nodes that the runs join.

The cluster lives in a helper process, so pytest itself never connects to Ray
(a blocked ray.get would ignore pytest-timeout). .ci/run ends with
`ray stop --force` in case a test leaves a daemon behind.
"""

from __future__ import annotations

import csv
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from a3c.learn.checkpoint import load_checkpoint

from .conftest import REPO_ROOT, assert_one_line_usage_error, run_cli, start_cli, wait_for_metrics_rows

pytest.importorskip("ray", reason="the Ray backend needs pip install -r requirements-ray.txt")
pytestmark = [pytest.mark.slow, pytest.mark.machine_wide]

# the nodes' workers import tests.cue_env as a user's env package
RAY_ENV = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(REPO_ROOT))
# Two nodes of one CPU each on this machine, one Ray "node" per raylet; "remove" on stdin takes the second away,
# "add" starts a new second node.
CLUSTER = """
import sys
from ray.cluster_utils import Cluster
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
second = cluster.add_node(num_cpus=1)
print(cluster.address, flush=True)
for line in sys.stdin:
    if line.strip() == "add":
        second = cluster.add_node(num_cpus=1)
        print("added", flush=True)
    else:
        cluster.remove_node(second)
        print("removed", flush=True)
cluster.shutdown()
"""
RUN_FILES = ["config.json", "metrics.csv", "eval.csv", "summary.json", "checkpoints/last.pt", "checkpoints/best.pt"]
RANDOM_CARTPOLE_RETURN = 22


class TwoNodeCluster:
    """A helper process that runs the cluster, so pytest itself never connects to Ray."""

    def __init__(self, token_path: Path):
        """With token authentication, the token in the file at `token_path`."""
        self.process = subprocess.Popen(
            [sys.executable, "-c", CLUSTER],
            env=dict(RAY_ENV, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token_path)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.address = self.process.stdout.readline().strip()

    def remove_second_node(self) -> None:
        self.process.stdin.write("remove\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "removed"

    def add_second_node(self) -> None:
        self.process.stdin.write("add\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "added"

    def shutdown(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture(scope="module")
def token_path(tmp_path_factory):
    """The file of the token that this module's clusters require, which the runs find as a user's shell hands
    it to them (RAY_AUTH_TOKEN_PATH)."""
    path = tmp_path_factory.mktemp("ray") / "auth_token"
    path.write_text(secrets.token_hex(32))
    path.chmod(0o600)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_AUTH_TOKEN_PATH", str(path))
        yield path


@pytest.fixture(scope="module")
def ray_address(token_path):
    """The address of a two-node cluster shared by this module's runs."""
    cluster = TwoNodeCluster(token_path)
    try:
        yield cluster.address
    finally:
        cluster.shutdown()


def ray_run(run_dir: Path, ray_address: str, *args: str) -> list[str]:
    """One node group per node, of one worker each."""
    return [
        "--backend",
        "ray",
        "--ray-address",
        ray_address,
        "--num-processes",
        "1",
        "--print-interval",
        "0.5",
        "--no-tensorboard",
        "--run-dir",
        str(run_dir),
        *args,
    ]


def actor_pids(class_name: str) -> list[int]:
    """Ray names an actor's process `ray::ClassName...`."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(f"ray::{class_name}".encode()):
                pids.append(int(entry.name))
        except OSError:  # the process ended while we looked
            pass
    return pids


def wait_for_actors(class_name: str, count: int, excluding: tuple[int, ...] = (), timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(pids := [pid for pid in actor_pids(class_name) if pid not in excluding]) >= count:
            return pids
        time.sleep(0.1)
    raise AssertionError(f"no {count} {class_name} actors started")


@pytest.mark.timeout(90)
def test_two_node_groups_learn_and_sync_every_interval(tmp_path, ray_address):
    run_dir = tmp_path / "run"
    result = run_cli(
        *ray_run(
            run_dir,
            ray_address,
            "--max-steps",
            "150000",
            "--target-return",
            "200",
            "--eval-interval",
            "0.3",
            "--eval-episodes",
            "5",
            "--seed",
            "1",
            "--sync-interval",
            "10",
        ),
        timeout=80,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert [name for name in RUN_FILES if not (run_dir / name).exists()] == []
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["best_eval_return"] > 5 * RANDOM_CARTPOLE_RETURN, summary
    assert summary["stop_reason"] in ("solved", "max_steps")
    assert summary["node_groups"] == 2
    groups = summary["group_figures"]
    assert [group["group"] for group in groups] == [0, 1] and all(group["syncs"] >= 1 for group in groups)
    assert sum(group["env_steps"] for group in groups) == summary["env_steps"] and all(g["sync_ms"] > 0 for g in groups)
    assert all(f"node group {n} runs on {groups[n]['host']}" in result.stderr + result.stdout for n in (0, 1))
    # measured by the global model: each group's exchanges every 10 of its updates, plus the trainer's
    # reads for its mirror (10 a second) and a read and a last exchange per group
    syncs = summary["updates"] / 10
    assert syncs / 2 <= summary["global_model_calls"] <= syncs + 10 * summary["wall_seconds"] + 4, summary
    saved = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert saved["env_steps"] == summary["env_steps"]
    # the mean of the groups' optimizer states, with the most steps of either
    assert summary["updates"] / 2 <= float(saved["optimizer"]["steps"]) <= summary["updates"]


@pytest.mark.timeout(90)
def test_a_cluster_run_resumes_on_the_cluster_named_again(tmp_path, ray_address):
    run_dir = tmp_path / "run"
    first = run_cli(*ray_run(run_dir, ray_address, "--target-return", "none", "--max-steps", "4000"), timeout=40)
    assert first.returncode == 0, first.stderr
    # --ray-address given again, without --backend: the saved run's backend is ray
    resumed = run_cli("--resume", str(run_dir), "--ray-address", ray_address, "--max-steps", "8000", timeout=40)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((run_dir / "summary.json").read_text())["node_groups"] == 2
    assert load_checkpoint(run_dir / "checkpoints" / "last.pt")["env_steps"] >= 8000


@pytest.mark.timeout(60)
def test_observation_statistics_merge_across_groups_over_two_shards_and_workers_replay(tmp_path, ray_address):
    run_dir = tmp_path / "run"
    result = run_cli(
        *ray_run(
            run_dir,
            ray_address,
            "--max-steps",
            "20000",
            "--target-return",
            "none",
            "--eval-episodes",
            "0",
            "--log-interval",
            "4000",
            "--replay-ratio",
            "1",
            "--normalize-obs",
            "--global-shards",
            "2",
        ),
        timeout=50,
    )
    assert result.returncode == 0, result.stderr
    with open(run_dir / "metrics.csv", newline="") as file:
        last = list(csv.DictReader(file))[-1]
    assert int(last["replay_updates"]) > 0 and float(last["policy_lag"]) >= 0
    saved = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    # both groups' observations (one group alone saw about half), less those a sync drops when it races a
    # worker's update of the statistics (Hogwild; a3c/backends/sync.py)
    assert 0.9 * saved["env_steps"] <= saved["model"]["obs_norm.count"] <= saved["env_steps"]


@pytest.mark.timeout(90)
def test_a_killed_node_group_is_replaced_and_the_run_resumes_on_its_own_instance(tmp_path, ray_address):
    run_dir = tmp_path / "run"
    earlier = tuple(actor_pids("NodeGroup"))  # an earlier run's, still ending
    process = start_cli(
        *ray_run(run_dir, ray_address, "--target-return", "none", "--max-steps", "50000000", "--log-interval", "2000")
    )
    try:
        killed = wait_for_actors("NodeGroup", 2, excluding=earlier)[0]
        wait_for_metrics_rows(run_dir, 2)
        os.kill(killed, signal.SIGKILL)
        wait_for_actors("NodeGroup", 2, excluding=(*earlier, killed))  # its replacement
        rows = len((run_dir / "metrics.csv").read_text().splitlines())
        wait_for_metrics_rows(run_dir, rows + 2)  # training goes on
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "starting a new one from the global weights (1/3)" in err, err
    saved = load_checkpoint(run_dir / "checkpoints" / "last.pt")

    # resume with the default: a local Ray instance of the trainer's own, stopped at the end
    result = run_cli(
        "--resume", str(run_dir), "--ray-address", "", "--max-steps", str(saved["env_steps"] + 4000), timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((run_dir / "summary.json").read_text())["node_groups"] == 1
    resumed = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert resumed["env_steps"] >= saved["env_steps"] + 4000
    assert float(resumed["optimizer"]["steps"]) > float(saved["optimizer"]["steps"])  # moments went on


@pytest.mark.timeout(60)
def test_a_worker_that_raises_in_a_node_group_is_restarted_until_its_restarts_run_out(tmp_path, ray_address):
    run_dir = tmp_path / "run"
    result = run_cli(
        *ray_run(
            run_dir,
            ray_address,
            "--env",
            "tests.cue_env:CueCrash-v0",
            "--max-worker-restarts",
            "1",
            "--eval-episodes",
            "0",
        ),
        timeout=50,
    )
    assert result.returncode == 1, result.stderr
    assert "cue env exploded" in result.stderr
    assert "restarting it from the shared weights (1/1)" in result.stderr
    assert "no restarts left (--max-worker-restarts 1)" in result.stderr
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "worker_failed"


@pytest.mark.timeout(60)
def test_losing_the_global_model_ends_the_run_and_keeps_the_last_checkpoint(tmp_path, ray_address):
    run_dir = tmp_path / "run"
    last_pt = run_dir / "checkpoints" / "last.pt"
    earlier = tuple(actor_pids("GlobalShard"))  # an earlier run's, still ending
    process = start_cli(
        *ray_run(
            run_dir, ray_address, "--target-return", "none", "--max-steps", "50000000", "--checkpoint-interval", "0.3"
        )
    )
    try:
        shard = wait_for_actors("GlobalShard", 1, excluding=earlier)[0]
        deadline = time.monotonic() + 30
        while not last_pt.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(shard, signal.SIGKILL)
        killed_at = time.time()
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 1, err
    assert "global model is lost" in err and "Traceback" not in err
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "global_model_failed"
    assert last_pt.stat().st_mtime < killed_at  # not overwritten with weights nobody can vouch for
    load_checkpoint(last_pt)


class Lines:
    """A running process's console lines, stdout's and stderr's, as they come (communicate() would wait for
    its end)."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self.readers = [
            threading.Thread(target=lambda stream=stream: self.lines.extend(stream), daemon=True)
            for stream in (process.stdout, process.stderr)
        ]
        for reader in self.readers:
            reader.start()

    def join(self) -> None:
        for reader in self.readers:
            reader.join(timeout=10)

    def wait_for(self, words: str, after: int = 0, timeout: float = 60) -> int:
        """The index of the first line from `after` on that holds `words`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((i for i, line in enumerate(self.lines[after:], after) if words in line), None)
            if found is not None:
                return found
            time.sleep(0.2)
        raise AssertionError(f"no line said {words!r}: {''.join(self.lines)}")


@pytest.mark.timeout(150)
def test_a_lost_node_whose_group_finds_no_free_cpus_trains_on_and_takes_a_node_that_comes_back(tmp_path, token_path):
    cluster = TwoNodeCluster(token_path)  # its own: this test takes a node away and brings one back
    run_dir = tmp_path / "run"
    try:
        process = start_cli(
            *ray_run(
                run_dir,
                cluster.address,
                "--target-return",
                "none",
                "--max-steps",
                "50000000",
                "--log-interval",
                "2000",
                "--placement-timeout",
                "10",
            )
        )
        lines = Lines(process)
        try:
            wait_for_metrics_rows(run_dir, 2)
            cluster.remove_second_node()  # the other node's one CPU is busy with the other group
            waited = lines.wait_for("did not start within --placement-timeout 10 s: no node has 1 free CPUs")
            assert "training on with 1 group(s), and starting it where a node has room" in lines.lines[waited]
            rows = len((run_dir / "metrics.csv").read_text().splitlines())
            wait_for_metrics_rows(run_dir, rows + 2)  # the group left trains on
            cluster.add_second_node()
            lines.wait_for("runs on", after=waited + 1)  # the waiting group placed on the new node
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
            lines.join()
        finally:
            process.kill()
    finally:
        cluster.shutdown()
    assert process.returncode == 130, "".join(lines.lines)
    assert not any("Traceback" in line for line in lines.lines)
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "interrupted"
    load_checkpoint(run_dir / "checkpoints" / "last.pt")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "address, words",
    [
        ("127.0.0.1:1", ["--ray-address", "no Ray cluster answers"]),
        ("not-an-address", ["--ray-address"]),
        (None, ["--num-processes 3 need as many CPUs"]),
    ],
)
def test_a_cluster_that_cannot_serve_is_a_one_line_usage_error(tmp_path, ray_address, address, words):
    run_dir = tmp_path / "run"
    result = run_cli(*ray_run(run_dir, address or ray_address, "--num-processes", "3"), timeout=30)
    assert_one_line_usage_error(result, *words)
    assert not run_dir.exists()


@pytest.mark.timeout(60)
def test_the_local_backend_never_imports_ray(tmp_path):
    # main.py ends a finished run with os._exit: report on the way out
    code = (
        "import os, runpy, sys\n"
        f"sys.argv = ['main.py', '--num-processes', '1', '--max-steps', '1000', '--eval-episodes', '1', "
        f"'--eval-interval', '0.1', '--no-tensorboard', '--run-dir', {str(tmp_path / 'run')!r}]\n"
        "exit_now = os._exit\n"
        "def report_and_exit(code):\n    print('ray' in sys.modules, flush=True)\n    exit_now(code)\n"
        "os._exit = report_and_exit\n"
        "runpy.run_path('main.py', run_name='__main__')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "False"
