"""A host's link delayed and rate-limited in user space, for kernels without netem (this project's machine).

    link_shaper.py --delay-ms 20 --rate-mbit 100 HOST:PORT [HOST:PORT ...]

Each HOST:PORT names a host's network namespace, whose interface `eth0` is a TAP device, and the TAP device
PORT in the namespace this script runs in (the switch's, where PORT is a port of the bridge). The script
carries the Ethernet frames between each pair: what the host sends waits its turn on the link (--rate-mbit)
and then --delay-ms before it reaches the bridge, as `tc qdisc add dev eth0 root netem delay D rate R` on the
host's interface would hold it; what the host receives passes at once (the sender's own link has held it).
Between two hosts a frame so takes the delay once one way. As netem, a link queues at most QUEUE_FRAMES
frames and drops the rest; a frame that cannot be written (a host's link set down: a cut) is dropped too.

It prints "ready" once every TAP device is attached, and runs until SIGTERM or SIGINT. It shares the hosts'
cores: its CPU time (netns_hosts.py's shaper_cpu_seconds) is part of what a bench on these hosts measures.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import heapq
import os
import selectors
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000
CLONE_NEWNET = 0x40000000
QUEUE_FRAMES = 1000  # netem's default limit
READS_PER_WAKE = 64  # frames read from one device before the others get their turn
FRAME_BYTES = 65536


def departure(now: float, link_free_at: float, size: int, rate_bits_per_second: float) -> float:
    """When a frame of `size` bytes has left a link that is busy until `link_free_at`: it waits for the link,
    then takes its own length at the link's rate (no rate: at once)."""
    start = max(now, link_free_at)
    return start + (8 * size / rate_bits_per_second if rate_bits_per_second else 0.0)


def enter_namespace(handle: int) -> None:
    """This thread's network namespace becomes the one the file descriptor `handle` refers to (os.setns is
    Python 3.12's)."""
    if ctypes.CDLL(None, use_errno=True).setns(handle, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"setns: {os.strerror(error)}")


def attach_tap(name: str) -> int:
    """A non-blocking file descriptor of the TAP device `name` in this thread's namespace."""
    descriptor = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(descriptor, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return descriptor


@dataclass
class Link:
    """One host's link: the frames it sent wait on it (shaped); those it receives do not."""

    host_side: int  # the host's eth0
    switch_side: int  # its port on the bridge
    free_at: float = 0.0  # when the frames already queued have left the link
    queued: int = 0


@dataclass(order=True)
class Delivery:
    """A frame a host sent, due at its bridge port at `due` (`order` keeps equal times first in, first out)."""

    due: float
    order: int
    link: Link = field(compare=False)
    frame: bytes = field(compare=False)


class Shaper:
    """Every link's frames, carried between the host and its port until `stop()` says so."""

    def __init__(self, links: list[Link], delay_seconds: float, rate_bits_per_second: float):
        self.delay, self.rate = delay_seconds, rate_bits_per_second
        self.pending: list[Delivery] = []
        self.order = 0
        self.selector = selectors.DefaultSelector()
        for link in links:
            self.selector.register(link.host_side, selectors.EVENT_READ, (link, True))
            self.selector.register(link.switch_side, selectors.EVENT_READ, (link, False))

    def run(self, stop: Callable[[], bool]) -> None:
        while not stop():
            now = time.monotonic()
            timeout = max(self.pending[0].due - now, 0.0) if self.pending else 0.5
            for key, _ in self.selector.select(timeout):
                link, sent_by_host = key.data
                self.read(key.fd, link, sent_by_host)
            self.deliver_due()

    def read(self, descriptor: int, link: Link, sent_by_host: bool) -> None:
        for _ in range(READS_PER_WAKE):
            try:
                frame = os.read(descriptor, FRAME_BYTES)
            except OSError:  # nothing more waiting (BlockingIOError), or the device is down
                return
            if not sent_by_host:
                write(link.host_side, frame)
            elif link.queued < QUEUE_FRAMES:  # beyond it the frame is dropped
                link.free_at = departure(time.monotonic(), link.free_at, len(frame), self.rate)
                link.queued += 1
                self.order += 1
                heapq.heappush(self.pending, Delivery(link.free_at + self.delay, self.order, link, frame))

    def deliver_due(self) -> None:
        now = time.monotonic()
        while self.pending and self.pending[0].due <= now:
            delivery = heapq.heappop(self.pending)
            delivery.link.queued -= 1
            write(delivery.link.switch_side, delivery.frame)


def write(descriptor: int, frame: bytes) -> None:
    try:
        os.write(descriptor, frame)
    except OSError:  # the device is down (a cut link) or full: the frame is lost, as on a wire
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, default=0.0, help="what a host sends, delayed one way")
    parser.add_argument("--rate-mbit", type=float, default=0.0, help="each host's link rate (0: none)")
    parser.add_argument("pairs", nargs="+", help="HOST:PORT, the host's namespace and its port's TAP device here")
    args = parser.parse_args()
    links = []
    with open("/proc/self/ns/net") as home:  # opened before the first move: the path follows the thread
        for pair in args.pairs:
            host, port = pair.split(":")
            with open(f"/var/run/netns/{host}") as there:
                enter_namespace(there.fileno())
            host_side = attach_tap("eth0")
            enter_namespace(home.fileno())
            links.append(Link(host_side, attach_tap(port)))
    stopping = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, frame: stopping.append(signum))
    shaper = Shaper(links, args.delay_ms / 1000, args.rate_mbit * 1e6)
    print("ready", flush=True)
    shaper.run(lambda: bool(stopping))


if __name__ == "__main__":
    main()
