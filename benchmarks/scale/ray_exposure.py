"""What of a Ray instance a client without its token can use: the sockets it listens on, and how each answers.

    ray_exposure.py probe HOST:PORT [HOST:PORT ...] [--token-file FILE]   # one JSON line: {"HOST:PORT": answer}

An answer is "refused" (the server turned the call away for want of a valid token: gRPC's UNAUTHENTICATED,
HTTP's 401 or 403), "accepted" (it served the call, or failed it for another reason once it had taken it),
or "no answer" (nothing on the port speaks gRPC or HTTP to us). Ray checks the token in each service's
handlers, so a gRPC server answers an unknown method with UNIMPLEMENTED whatever the token: each port is
called with one read-only method of each of Ray's gRPC services until one is the port's own.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from a3c.backends.ray_access import call

# One call of each service a Ray node serves (the control store, the node manager, the object manager, a
# worker, Ray Client's server, the agents), each reading nothing a client could use and changing nothing
RAY_CALLS = (
    "/ray.rpc.NodeInfoGcsService/GetClusterId",
    "/ray.rpc.NodeManagerService/GetSystemConfig",
    "/ray.rpc.ObjectManagerService/Pull",  # of nothing: an empty request names no object
    "/ray.rpc.CoreWorkerService/GetCoreWorkerStats",
    "/ray.rpc.RayletDriver/ClusterInfo",
    "/ray.rpc.ReporterService/HealthCheck",
    "/ray.rpc.LogService/ListLogs",
)
CALL_TIMEOUT_SECONDS = 3.0


@dataclass(frozen=True)
class Socket:
    host: str  # the address it is bound to, as `ss` writes it ("*", "0.0.0.0", "[::ffff:127.0.0.1]", ...)
    port: int
    process: str
    pid: int

    @property
    def loopback(self) -> bool:
        return self.host.strip("[]").removeprefix("::ffff:") in ("127.0.0.1", "::1", "localhost")


def listening_sockets(namespace_command: tuple[str, ...] = ()) -> list[Socket]:
    """Every listening TCP socket (of a network namespace, with `namespace_command` its prefix), with the
    process that holds it."""
    listed = subprocess.run([*namespace_command, "ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    sockets = []
    for line in listed.splitlines():
        fields = line.split()
        host, port = fields[3].rsplit(":", 1)
        holder = re.search(r'\("([^"]*)",pid=(\d+)', line)
        process, pid = (holder.group(1), int(holder.group(2))) if holder else ("", 0)
        sockets.append(Socket(host, int(port), process, pid))
    return sockets


def descendants(pid: int) -> set[int]:
    """`pid` and every process below it."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        todo.extend(children.get(current, []))
    return found


def answer(address: str, token: str | None = None) -> str:
    """How the server at HOST:PORT answers a client with `token`, or with none."""
    import grpc

    for method in RAY_CALLS:
        code = call(address, method, token, CALL_TIMEOUT_SECONDS)
        if code == grpc.StatusCode.UNAUTHENTICATED:
            return "refused"
        if code == grpc.StatusCode.UNAVAILABLE:  # no gRPC server there
            return http_answer(address, token)
        if code != grpc.StatusCode.UNIMPLEMENTED:  # served, or failed once the server had taken the call
            return "accepted"
    return "no answer"


def http_answer(address: str, token: str | None) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        urllib.request.urlopen(urllib.request.Request(f"http://{address}/", headers=headers), timeout=3)
    except urllib.error.HTTPError as error:
        return "refused" if error.code in (401, 403) else "accepted"
    except (OSError, ValueError):
        return "no answer"
    return "accepted"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="action", required=True)
    probe = actions.add_parser("probe", help="how each HOST:PORT answers a client without (or with) the token")
    probe.add_argument("addresses", nargs="+")
    probe.add_argument("--token-file", help="call with this file's token")
    args = parser.parse_args()
    token = Path(args.token_file).read_text().strip() if args.token_file else None
    print(json.dumps({address: answer(address, token) for address in args.addresses}))


if __name__ == "__main__":
    main()
