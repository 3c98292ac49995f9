"""Who may use the Ray instance a run starts or joins: a token for every client, the loopback for a local one.

Ray runs whatever code a client of its ports sends, so a client that reaches them can run code on every
machine of the cluster. A local instance is therefore started with Ray's token authentication and with its
node address on the loopback, where Ray binds every server of the node (docs/guides/clusters.md,
"Security"). A cluster the run joins is asked first, over one gRPC call to its control store without the
token, whether it requires one: one that does not is joined only with --ray-allow-unauthenticated.

Nothing here imports Ray: the probe is plain gRPC, which Ray installs.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import MutableMapping, Optional

from a3c.errors import ConfigError

GUIDE = "docs/guides/clusters.md#security"
PROBE_TIMEOUT_SECONDS = 5.0
# A control-store call that every Ray version with tokens serves, that reads nothing and changes nothing
PROBE_METHOD = "/ray.rpc.NodeInfoGcsService/GetClusterId"
# Ray's node address where Ray clusters are off (its Windows and macOS default): the loopback, where every
# server of the node then binds (checked: tests/test_ray_access.py lists the listening sockets)
LOOPBACK_NODE = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def find_token(environ: MutableMapping[str, str], home: Path) -> tuple[Optional[str], Optional[str]]:
    """The token Ray would use and where it is read, in Ray's order: RAY_AUTH_TOKEN, the file at
    RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token; (None, None) where none of them holds one."""
    if environ.get("RAY_AUTH_TOKEN", "").strip():
        return environ["RAY_AUTH_TOKEN"].strip(), "RAY_AUTH_TOKEN"
    if "RAY_AUTH_TOKEN_PATH" in environ:
        path = Path(environ["RAY_AUTH_TOKEN_PATH"]).expanduser()
        source = f"RAY_AUTH_TOKEN_PATH ({path})"
    else:
        path = home / ".ray" / "auth_token"
        source = str(path)
    token = read_text(path)
    return token, source if token else None


def read_text(path: Path) -> Optional[str]:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def secure_local_instance(environ: MutableMapping[str, str], home: Path) -> str:
    """Set `environ` (this process's, before Ray is imported: Ray's processes inherit it) for a local instance
    that only its run can use; returns the line that says so.

    The token is the user's where Ray finds one; else one for this process, never written to a file."""
    environ.update(LOOPBACK_NODE)
    environ["RAY_AUTH_MODE"] = "token"  # Ray's own default for a local instance, set whatever the shell says
    source = find_token(environ, home)[1]
    if source is None:
        environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        source = "a token of this run"
    return f"Ray: a local instance on the loopback, token authentication on ({source})"


def call(address: str, method: str, token: Optional[str], timeout: float = PROBE_TIMEOUT_SECONDS):
    """The gRPC status code of one call of `method` (an empty request) at `address`, with Ray's token or
    without one."""
    import grpc  # Ray's dependency: imported only for --backend ray

    metadata = [("authorization", f"Bearer {token}")] if token else None
    with grpc.insecure_channel(address) as channel:
        try:
            channel.unary_unary(method)(b"", metadata=metadata, timeout=timeout)
        except grpc.RpcError as error:
            return error.code()
    return grpc.StatusCode.OK


def prepare_join(
    address: str, allow_unauthenticated: bool, environ: MutableMapping[str, str], home: Path
) -> tuple[str, bool]:
    """Ask the cluster at `address` (HOST:PORT) whether it requires a token, and check ours against it.

    Returns the line that says what was found, and whether it is a warning; sets RAY_AUTH_MODE=token in
    `environ` where the cluster requires a token. Raises ConfigError (one line that points at the guide) for a
    cluster without authentication unless `allow_unauthenticated`, and for a missing or refused token.
    With Ray's TLS on, where the probe's plain gRPC gets no answer, the check is left to TLS's own: the
    cluster then takes only peers whose certificate its CA signed."""
    import grpc

    if environ.get("RAY_USE_TLS", "").lower() in ("1", "true"):
        return f"Ray: TLS on (RAY_USE_TLS): the cluster at {address} takes only peers its CA signed", False
    without = call(address, PROBE_METHOD, None)
    if without == grpc.StatusCode.OK:
        if not allow_unauthenticated:
            raise ConfigError(
                f"--ray-address {address}: the Ray cluster there accepts clients without a token, so whoever "
                f"reaches its ports can run code on its machines; start it with RAY_AUTH_MODE=token ({GUIDE}), "
                "or pass --ray-allow-unauthenticated to join it anyway"
            )
        line = (
            f"warning: the Ray cluster at {address} requires no authentication: whoever reaches its ports can "
            f"run code on its machines ({GUIDE}); joining it as --ray-allow-unauthenticated says"
        )
        return line, True
    if without != grpc.StatusCode.UNAUTHENTICATED:
        raise ConfigError(f"--ray-address {address}: Ray's control store did not answer ({without.name.lower()})")
    token, source = find_token(environ, home)
    if token is None:
        raise ConfigError(
            f"--ray-address {address}: the Ray cluster there requires a token and none is set here "
            f"(RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token; {GUIDE})"
        )
    if call(address, PROBE_METHOD, token) != grpc.StatusCode.OK:
        raise ConfigError(f"--ray-address {address}: the Ray cluster there refuses the token of {source} ({GUIDE})")
    environ["RAY_AUTH_MODE"] = "token"
    return f"Ray: the cluster at {address} requires token authentication; joined with the token of {source}", False
