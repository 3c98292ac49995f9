"""The namespace hosts of benchmarks/scale/netns_hosts.py share this machine's cores as separate machines would:
each host's processes are a CPU group of their own, made with the host and removed with it."""

from __future__ import annotations

import subprocess

import pytest
from scale import netns_hosts

from .conftest import namespaces_can_be_made, our_namespaces

pytestmark = pytest.mark.machine_wide


def cpu_group_of(cgroup_file: str) -> str:
    """The cpu controller's group in a /proc/PID/cgroup text (cgroup v1's cpu line, or v2's single one)."""
    for line in cgroup_file.splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(",") or controllers == "":
            return path
    raise AssertionError(f"no cpu controller in {cgroup_file!r}")


@pytest.mark.skipif(bool(namespaces_can_be_made()), reason=namespaces_can_be_made() or "")
def test_each_host_runs_in_a_cpu_group_of_its_own_and_the_take_down_removes_them():
    if netns_hosts.cpu_groups_root() is None:
        pytest.skip("this kernel offers no cpu controller: the hosts share the cores as one machine's processes")
    if our_namespaces() or netns_hosts.our_cpu_groups():
        pytest.skip("hosts of an earlier run are here (netns_cluster.py down)")
    hosts = netns_hosts.host_names(1)
    try:
        netns_hosts.make_hosts(hosts, 0.0, 0.0)
        for host in hosts:
            seen = subprocess.run(
                netns_hosts.in_namespace(host, ["cat", "/proc/self/cgroup"]), capture_output=True, text=True, check=True
            ).stdout
            assert cpu_group_of(seen) == f"/{host}"
    finally:
        netns_hosts.take_down()
    assert netns_hosts.our_cpu_groups() == []
    assert our_namespaces() == []
