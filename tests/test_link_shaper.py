"""The user-space link of benchmarks/scale/link_shaper.py: the delay and the rate of a LAN or WAN between
namespace hosts where the kernel has no netem (benchmarks/scale/netns_hosts.py uses it there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from scale import link_shaper, netns_hosts

from .conftest import namespaces_can_be_made

pytestmark = pytest.mark.machine_wide

DELAY_MS, RATE_MBIT = 20.0, 10.0

SERVERS = """
import socket, threading
def echo():
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.bind(("0.0.0.0", 9999))
    while True:
        data, sender = udp.recvfrom(65536); udp.sendto(data, sender)
threading.Thread(target=echo, daemon=True).start()
tcp = socket.socket(); tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); tcp.bind(("0.0.0.0", 9998))
tcp.listen()
while True:
    connection, _ = tcp.accept()
    while connection.recv(65536):
        pass
    connection.sendall(b"k"); connection.close()
"""

CLIENT = """
import json, socket, sys, time
host, what, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
if what == "rtt":
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.settimeout(0.5)
    times = []
    for _ in range(count):
        start = time.monotonic(); udp.sendto(b"x" * 100, (host, 9999))
        try:
            udp.recvfrom(100); times.append(time.monotonic() - start)
        except socket.timeout:
            times.append(None)
    print(json.dumps(times))
else:
    connection = socket.create_connection((host, 9998), timeout=10); start = time.monotonic()
    connection.sendall(b"x" * 1_000_000); connection.shutdown(socket.SHUT_WR); connection.recv(1)
    print(json.dumps(time.monotonic() - start))
"""


def test_a_frame_waits_for_the_link_then_takes_its_length_at_the_rate():
    rate = 10e6  # 1,250 bytes take 1 ms
    assert link_shaper.departure(5.0, 0.0, 1250, rate) == pytest.approx(5.001)  # an idle link: at once
    assert link_shaper.departure(5.0, 5.001, 1250, rate) == pytest.approx(5.002)  # behind the frame before
    assert link_shaper.departure(5.0, 4.0, 1250, 0.0) == 5.0  # no rate: no wait


@pytest.mark.slow
@pytest.mark.skipif(bool(namespaces_can_be_made()), reason=namespaces_can_be_made() or "")
@pytest.mark.timeout(120)
def test_two_hosts_see_the_delay_each_way_the_rate_and_a_cut_and_nothing_is_left():
    if netns_hosts.our_namespaces():
        pytest.skip("namespaces of an earlier run are here (netns_cluster.py down)")
    if netns_hosts.netem_available():
        pytest.skip("this kernel has netem: netns_hosts.py shapes links with it, not with link_shaper.py")
    if not os.path.exists("/dev/net/tun"):
        pytest.skip("no /dev/net/tun: TAP devices cannot be made here")
    head, worker = netns_hosts.host_names(1)
    started = [netns_hosts.make_hosts([head, worker], DELAY_MS, RATE_MBIT)]  # the shaper, then the servers
    try:
        started.append(subprocess.Popen(netns_hosts.in_namespace(worker, [sys.executable, "-c", SERVERS])))

        def client(what: str, count: int = 8):
            command = [sys.executable, "-c", CLIENT, netns_hosts.address(1), what, str(count)]
            done = subprocess.run(netns_hosts.in_namespace(head, command), capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout)

        client("rtt")  # the servers are up and the bridge has learnt both hosts
        round_trips = sorted(client("rtt"))
        assert 2 * DELAY_MS / 1000 <= round_trips[len(round_trips) // 2] < 2 * DELAY_MS / 1000 + 0.05
        megabyte_seconds = client("tcp")
        assert 8e6 / (RATE_MBIT * 1e6) <= megabyte_seconds < 4.0  # a megabyte at 10 Mbit/s takes 0.8 s at least
        assert netns_hosts.shaper_cpu_seconds() > 0
        netns_hosts.set_link(worker, up=False)
        assert client("rtt", 2) == [None, None]
        netns_hosts.set_link(worker, up=True)
        assert None not in client("rtt", 3)[1:]
    finally:
        for process in started:  # reaped here: take_down waits while any process of a host is left
            process.kill()
            process.wait()
        netns_hosts.take_down()
    assert netns_hosts.our_namespaces() == []
