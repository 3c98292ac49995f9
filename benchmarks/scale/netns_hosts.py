"""Separate network hosts on this one machine, made of Linux network namespaces (root only): the hosts that
netns_cluster.py starts Ray on, and what a benchmark does to them (cut a link, kill a host's processes, count its
bytes).

Each host is a namespace of its own with one link (a veth pair, or two TAP devices) to a bridge in a further
namespace, the hosts at 10.213.7.1, .2, ... (addresses inside the namespaces only: nothing outside them is ever
addressed). With a delay and a rate, each host's link delays what the host sends and limits its rate (`tc netem`;
on a kernel without netem, link_shaper.py does it in user space over TAP devices): between two hosts a packet
takes the delay one way, twice it there and back. The take-down ends every process in the hosts' namespaces and
deletes the namespaces, with their links. The hosts share this machine's cores, memory, disk and /dev/shm: only
their network is their own. Each host's processes are also a CPU group of their own (a cgroup with the cpu
controller, where the kernel has one), so that the hosts share the cores as separate machines' loads would not
mix: one host's busy processes cannot take the cores another host's process is waiting for. Without it, Linux
weighs the cores by terminal session (autogroup): Ray's processes of every host, started from one session, took a
trainer's evaluator on the head, in a session of its own, down to a tenth of a core while it had episodes
to play (docs/results, "Ray on hosts of their own: learning Acrobot").
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PREFIX = "a3c-"  # every namespace made here, and only those, is named so
SWITCH = PREFIX + "switch"  # the namespace holding the bridge the hosts' links meet at
SUBNET = "10.213.7"
SHAPER = str(Path(__file__).with_name("link_shaper.py"))
END_GRACE_SECONDS = 5.0


def ip(*words: str, namespace: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    command = ["ip", *(["-n", namespace] if namespace else []), *words]
    return subprocess.run(command, check=check, capture_output=True, text=True)


def in_namespace(namespace: str, command: list[str]) -> list[str]:
    """`command` on the host `namespace`: in its network namespace and, where the host has one, its CPU group."""
    entered = ["ip", "netns", "exec", namespace, *command]
    group = cpu_group(namespace)
    if group is None or not group.is_dir():
        return entered
    # joined before entering: inside, `ip netns exec` mounts a /sys of the namespace's own, without the cgroups
    return ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", *entered]


def cpu_groups_root() -> Path | None:
    """Where this kernel's cpu controller makes CPU groups: cgroup v1's cpu hierarchy, or v2's root where it
    offers the controller; None where neither does."""
    v1 = Path("/sys/fs/cgroup/cpu")
    if (v1 / "cpu.shares").exists():
        return v1
    v2 = Path("/sys/fs/cgroup")
    controllers = v2 / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return v2
    return None


def cpu_group(host: str) -> Path | None:
    root = cpu_groups_root()
    return None if root is None else root / host


def make_cpu_group(host: str) -> None:
    """The host's CPU group, of the default weight as every host's (none where the kernel has no controller)."""
    group = cpu_group(host)
    if group is None:
        return
    if group.parent == Path("/sys/fs/cgroup"):  # v2: the root hands the cpu controller to its children
        (group.parent / "cgroup.subtree_control").write_text("+cpu")
    group.mkdir(exist_ok=True)


def our_cpu_groups() -> list[Path]:
    root = cpu_groups_root()
    return [] if root is None else sorted(path for path in root.glob(PREFIX + "*") if path.is_dir())


def host_names(workers: int) -> list[str]:
    return [PREFIX + "head", *(f"{PREFIX}worker{n}" for n in range(1, workers + 1))]


def outsider_names(outsiders: int) -> list[str]:
    """Hosts on the same network that run no Ray: a client the cluster does not know."""
    return [f"{PREFIX}outsider{n}" for n in range(1, outsiders + 1)]


def address(index: int) -> str:
    return f"{SUBNET}.{index + 1}"


def our_namespaces() -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(PREFIX)]


def make_hosts(hosts: list[str], delay_ms: float, rate_mbit: float) -> subprocess.Popen | None:
    """The switch's namespace with its bridge, and each host's namespace linked to it; a delay on a kernel
    without netem is link_shaper.py's, which is returned, running."""
    in_user_space = bool(delay_ms) and not netem_available()
    ip("netns", "add", SWITCH)
    ip("link", "add", "bridge", "type", "bridge", namespace=SWITCH)
    ip("link", "set", "bridge", "up", namespace=SWITCH)
    for index, host in enumerate(hosts):
        ip("netns", "add", host)
        make_cpu_group(host)
        ip("link", "set", "lo", "up", namespace=host)
        if in_user_space:  # two TAP devices that link_shaper.py joins
            ip("tuntap", "add", "dev", f"port{index}", "mode", "tap", namespace=SWITCH)
            ip("tuntap", "add", "dev", "eth0", "mode", "tap", namespace=host)
        else:  # made inside the switch's namespace, one end then moved to the host's: nothing appears outside them
            ip("link", "add", f"port{index}", "type", "veth", "peer", "name", "eth0", namespace=SWITCH)
            ip("link", "set", "eth0", "netns", host, namespace=SWITCH)
        ip("link", "set", f"port{index}", "master", "bridge", "up", namespace=SWITCH)
        ip("addr", "add", f"{address(index)}/24", "dev", "eth0", namespace=host)
        ip("link", "set", "eth0", "up", namespace=host)
        # Ray finds a host's own address by the route to a public one (a UDP socket's connect: nothing is
        # sent); the route ends at the bridge, which has no way out of the switch's namespace
        ip("route", "add", "default", "dev", "eth0", namespace=host)
        if not in_user_space:
            shape_link(host, delay_ms, rate_mbit)
    return start_shaper(hosts, delay_ms, rate_mbit) if in_user_space else None


def shape_link(host: str, delay_ms: float, rate_mbit: float) -> None:
    """A delay (netem) and a rate limit on what a host sends; a rate alone with tbf."""
    if delay_ms:
        shape = ["netem", "delay", f"{delay_ms:g}ms", *(["rate", f"{rate_mbit:g}mbit"] if rate_mbit else [])]
    elif rate_mbit:
        shape = ["tbf", "rate", f"{rate_mbit:g}mbit", "burst", "64kb", "latency", "50ms"]
    else:
        return
    subprocess.run(in_namespace(host, ["tc", "qdisc", "add", "dev", "eth0", "root", *shape]), check=True)


def start_shaper(hosts: list[str], delay_ms: float, rate_mbit: float) -> subprocess.Popen:
    """link_shaper.py in the switch's namespace, joining each host's eth0 to its port; returns once it runs."""
    pairs = [f"{host}:port{index}" for index, host in enumerate(hosts)]
    command = [sys.executable, SHAPER, "--delay-ms", f"{delay_ms:g}", "--rate-mbit", f"{rate_mbit:g}", *pairs]
    shaper = subprocess.Popen(in_namespace(SWITCH, command), stdout=subprocess.PIPE, text=True)
    if shaper.stdout.readline().strip() != "ready":
        shaper.kill()
        raise RuntimeError(f"link_shaper.py did not start (exit {shaper.wait()})")
    return shaper


def shaper_cpu_seconds() -> float:
    """The CPU seconds link_shaper.py has used so far (0 where the links are the kernel's)."""
    ticks = os.sysconf("SC_CLK_TCK")
    used = 0.0
    for pid in processes_named(SWITCH, SHAPER):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        used += (int(fields[11]) + int(fields[12])) / ticks  # utime and stime, the stat file's 14th and 15th
    return used


def netem_available() -> bool:
    """Whether tc can add a netem queueing discipline here (tried on a namespace's loopback)."""
    probe = PREFIX + "probe"
    ip("netns", "add", probe)
    try:
        added = subprocess.run(
            in_namespace(probe, ["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]),
            capture_output=True,
        )
        return added.returncode == 0
    finally:
        ip("netns", "del", probe)


def pids_in(namespace: str) -> list[int]:
    found = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True).stdout
    return [int(pid) for pid in found.split()]


def end_processes(namespaces: list[str]) -> int:
    """SIGTERM to every process in the namespaces, SIGKILL to those left after the grace; how many there were."""
    pids = [pid for namespace in namespaces for pid in pids_in(namespace)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + END_GRACE_SECONDS
        while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
            time.sleep(0.1)
    return len(pids)


def set_link(host: str, up: bool) -> None:
    """Cut a host's link (its packets go nowhere, its processes live on) or restore it."""
    ip("link", "set", "eth0", "up" if up else "down", namespace=host)


def processes_named(host: str, named: str = "") -> list[int]:
    """The host's processes whose command line holds `named` (all of them for "")."""
    found = []
    for pid in pids_in(host):
        try:
            if named in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                found.append(pid)
        except FileNotFoundError:
            pass
    return found


def kill_processes(host: str, named: str = "") -> list[int]:
    """SIGKILL the host's processes whose command line holds `named` (all of them: the host is lost)."""
    killed = []
    for pid in processes_named(host, named):
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except ProcessLookupError:
            pass
    return killed


def take_down() -> tuple[int, list[str]]:
    """End every process in our namespaces and delete them (their links go with them) and the hosts' CPU
    groups: how many processes and which namespaces there were."""
    namespaces = our_namespaces()
    ended = end_processes(namespaces)
    for namespace in namespaces:
        ip("netns", "del", namespace, check=False)
    for group in our_cpu_groups():  # empty now: its processes were the namespaces'
        group.rmdir()
    left = [*our_namespaces(), *(group.name for group in our_cpu_groups())]
    if left:
        raise RuntimeError(f"namespaces or CPU groups left after the take-down: {', '.join(left)}")
    return ended, namespaces


def link_bytes(host: str) -> tuple[int, int]:
    """The bytes a host's link has sent and received so far (its interface counters)."""
    found = json.loads(ip("-s", "-j", "link", "show", "eth0", namespace=host).stdout)[0]["stats64"]
    return found["tx"]["bytes"], found["rx"]["bytes"]
