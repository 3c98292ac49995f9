"""The Ray backend on separate network hosts: a head and two worker hosts in network namespaces, Ray started on
each as the clusters guide tells a user (benchmarks/scale/netns_cluster.py), with the cluster's token or without
authentication, the trainer on the head's host, and a host on the same network that has no token."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest
from scale import netns_cluster, netns_hosts
from scale import ray_exposure as exposure

from .conftest import REPO_ROOT, namespaces_can_be_made, our_namespaces

pytest.importorskip("ray", reason="the Ray backend needs pip install -r requirements-ray.txt")
pytestmark = [pytest.mark.slow, pytest.mark.machine_wide]

SCRIPT = str(REPO_ROOT / "benchmarks" / "scale" / "netns_cluster.py")

# a client of the outsider's host: joins the cluster and runs a task there
CLIENT = """
import sys, ray
ray.init(address=sys.argv[1], log_to_driver=False)
print("ran", ray.get(ray.remote(lambda: 1).remote()), flush=True)
"""


def on_host(host: str, command: list[str], **options) -> subprocess.Popen:
    """A process on `host`, its environment this one's less Ray's token and mode, and `options`."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("RAY_AUTH")}
    return subprocess.Popen(
        netns_hosts.in_namespace(host, command),
        cwd=REPO_ROOT,
        env={**environment, "RAY_USAGE_STATS_ENABLED": "0", **options},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.skipif(bool(namespaces_can_be_made()), reason=namespaces_can_be_made() or "")
@pytest.mark.timeout(240)
def test_a_run_trains_on_three_hosts_with_the_token_and_a_host_without_it_is_refused_everywhere(tmp_path):
    wrong = tmp_path / "wrong_token"
    wrong.write_text("0" * 64)
    run_dir = tmp_path / "run"
    with netns_cluster.cluster(2, 1, 1, outsiders=1) as head:
        token = os.environ["RAY_AUTH_TOKEN_PATH"]  # the cluster's, as every host of it reads it
        trainer = subprocess.Popen(
            netns_hosts.in_namespace(
                netns_hosts.PREFIX + "head",
                [sys.executable, "main.py", "--env", "CartPole-v1", "--backend", "ray", "--ray-address", head]
                + ["--num-processes", "1", "--run-dir", str(run_dir), "--max-steps", "20000", "--target-return", "none"]
                + ["--sync-interval", "5", "--no-tensorboard"],
            ),
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        outsider = netns_hosts.outsider_names(1)[0]
        clients = {
            name: on_host(outsider, [sys.executable, "-c", CLIENT, head], **options)
            for name, options in {
                "without": {},
                "wrong": {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(wrong)},
                "with": {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": token},
            }.items()
        }
        exposed = [
            f"{netns_hosts.address(index)}:{socket.port}"
            for index, host in enumerate(netns_hosts.host_names(2))
            for socket in exposure.listening_sockets(tuple(netns_hosts.in_namespace(host, [])))
            if not socket.loopback
        ]
        probe = [sys.executable, str(REPO_ROOT / "benchmarks" / "scale" / "ray_exposure.py"), "probe"]
        answers = {
            name: json.loads(on_host(outsider, [*probe, *exposed, *options]).communicate(timeout=120)[0])
            for name, options in {"without": [], "wrong": ["--token-file", str(wrong)]}.items()
        }
        head_store = on_host(outsider, [*probe, head, "--token-file", token]).communicate(timeout=30)[0]
        said = {name: (client.communicate(timeout=120)[0], client.returncode) for name, client in clients.items()}
        trained = trainer.communicate(timeout=180)[0]
    # the control store, and each host's node manager, object manager and workers
    assert len(exposed) >= 9 and head in exposed, exposed
    for name in ("without", "wrong"):
        assert {address: answer for address, answer in answers[name].items() if answer != "refused"} == {}, name
        assert said[name][1] != 0 and "ran" not in said[name][0], said[name][0]
    assert json.loads(head_store) == {head: "accepted"}
    assert said["with"][1] == 0 and "ran 1\n" in said["with"][0], said["with"]
    assert trainer.returncode == 0 and "requires token authentication; joined with the token" in trained, trained
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] >= 20_000, summary
    assert all(group["env_steps"] > 0 and group["syncs"] > 0 for group in summary["group_figures"]), summary
    hosts = sorted(group["host"].split()[0] for group in summary["group_figures"])
    assert hosts == ["10.213.7.1", "10.213.7.2", "10.213.7.3"], summary["group_figures"]


@pytest.mark.skipif(bool(namespaces_can_be_made()), reason=namespaces_can_be_made() or "")
@pytest.mark.timeout(180)
def test_the_trainer_joins_a_cluster_without_authentication_only_when_told_and_the_cluster_leaves_nothing(tmp_path):
    trainer = [sys.executable, "main.py", "--env", "CartPole-v1", "--backend", "ray", "--ray-address", "{head}"]
    options = ["--num-processes", "1", "--max-steps", "2000", "--eval-episodes", "0", "--no-tensorboard"]
    script = [sys.executable, SCRIPT, "run", "--no-auth", "--workers", "1", "--cpus-per-host", "1", "--", "sh", "-c"]
    # both runs on one cluster: the first must leave nothing behind, the second must train
    refused, allowed = (shlex.join([*trainer, *options, "--run-dir", str(tmp_path / name)]) for name in "ab")
    result = subprocess.run(
        [*script, f"{refused} 2> {tmp_path / 'refused.err'}; {allowed} --ray-allow-unauthenticated"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=160,
    )
    refusal = (tmp_path / "refused.err").read_text()
    assert "accepts clients without a token" in refusal and "--ray-allow-unauthenticated" in refusal, refusal
    assert refusal.count("Error:") == 1 and "Traceback" not in refusal
    assert not (tmp_path / "a").exists()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warning: the Ray cluster at 10.213.7.1:6379 requires no authentication" in result.stderr
    assert json.loads((tmp_path / "b" / "summary.json").read_text())["env_steps"] >= 2000
    assert our_namespaces() == []
    left = subprocess.run(["pgrep", "-f", "ray/core/src/ray/raylet/raylet"], capture_output=True, text=True).stdout
    assert left == "", left
