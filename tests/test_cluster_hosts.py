"""The Ray backend on separate network hosts: a head and two worker hosts in network namespaces, Ray started on
each as the clusters guide tells a user (benchmarks/netns_cluster.py), the trainer on the head's host."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import REPO_ROOT, namespaces_can_be_made, our_namespaces

pytest.importorskip("ray", reason="the Ray backend needs pip install -r requirements-ray.txt")
pytestmark = pytest.mark.slow

SCRIPT = str(REPO_ROOT / "benchmarks" / "netns_cluster.py")


@pytest.mark.skipif(bool(namespaces_can_be_made()), reason=namespaces_can_be_made() or "")
@pytest.mark.timeout(240)
def test_cartpole_solves_on_three_hosts_and_the_cluster_leaves_nothing_behind(tmp_path):
    run_dir = tmp_path / "run"
    trainer = [sys.executable, "main.py", "--env", "CartPole-v1", "--backend", "ray", "--ray-address", "{head}"]
    options = ["--num-processes", "1", "--run-dir", str(run_dir), "--max-steps", "300000", "--no-tensorboard"]
    result = subprocess.run(
        [sys.executable, SCRIPT, "run", "--workers", "2", "--cpus-per-host", "1", "--", *trainer, *options],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["solved"], summary
    hosts = sorted(group["host"].split()[0] for group in summary["group_figures"])
    assert hosts == ["10.213.7.1", "10.213.7.2", "10.213.7.3"], summary["group_figures"]
    assert our_namespaces() == []
    left = subprocess.run(["pgrep", "-f", "ray/core/src/ray/raylet/raylet"], capture_output=True, text=True).stdout
    assert left == "", left
