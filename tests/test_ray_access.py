"""Who may use the Ray instance of a run (a3c/backends/ray_access.py): the token where Ray reads it, a local
instance's sockets on the loopback and closed to a client without its token, and a cluster joined only once it
has said that it requires a token and taken ours (a gRPC server here stands in for a cluster's control store;
tests/test_cluster_hosts.py joins real clusters on separate network hosts)."""

from __future__ import annotations

import os
import signal
from concurrent import futures
from pathlib import Path

import pytest
from scale import ray_exposure as exposure

from a3c.backends.ray_access import GUIDE, PROBE_METHOD, find_token, prepare_join, secure_local_instance
from a3c.errors import ConfigError

from .conftest import LONG_RUN, start_cli, wait_for_metrics_rows

pytestmark = pytest.mark.machine_wide

TOKEN = "f" * 64


def user_token_file(home: Path, token: str = TOKEN) -> Path:
    path = home / ".ray" / "auth_token"
    path.parent.mkdir(parents=True)
    path.write_text(token + "\n")
    return path


def test_the_token_is_read_where_ray_reads_it_first(tmp_path):
    default = user_token_file(tmp_path, "from-home")
    given = tmp_path / "shared" / "token"
    given.parent.mkdir()
    given.write_text("from-path")
    assert find_token({}, tmp_path) == ("from-home", str(default))
    assert find_token({"RAY_AUTH_TOKEN_PATH": str(given)}, tmp_path) == ("from-path", f"RAY_AUTH_TOKEN_PATH ({given})")
    both = {"RAY_AUTH_TOKEN": "from-env", "RAY_AUTH_TOKEN_PATH": str(given)}
    assert find_token(both, tmp_path) == ("from-env", "RAY_AUTH_TOKEN")
    # a path that is set but holds nothing is no token (Ray then finds none either), nor is an empty variable
    assert find_token({"RAY_AUTH_TOKEN": " ", "RAY_AUTH_TOKEN_PATH": str(tmp_path / "none")}, tmp_path) == (None, None)


def test_a_local_instance_has_a_token_of_its_run_unless_the_user_has_one(tmp_path):
    first, second = {"RAY_AUTH_MODE": "disabled"}, {}
    line = secure_local_instance(first, tmp_path)
    secure_local_instance(second, tmp_path)
    assert first["RAY_AUTH_MODE"] == second["RAY_AUTH_MODE"] == "token"  # whatever the shell said
    assert first["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"  # Ray's node address: the loopback
    assert len(first["RAY_AUTH_TOKEN"]) == 64 and first["RAY_AUTH_TOKEN"] != second["RAY_AUTH_TOKEN"]
    assert "a token of this run" in line and not (tmp_path / ".ray").exists()  # never written to a file
    user_token_file(tmp_path)
    own = {}
    assert str(tmp_path / ".ray" / "auth_token") in secure_local_instance(own, tmp_path)
    assert "RAY_AUTH_TOKEN" not in own


@pytest.fixture
def control_store():
    """A gRPC server answering PROBE_METHOD as Ray's control store does: with the token TOKEN required
    (`requires["token"]`) or without authentication (None)."""
    grpc = pytest.importorskip("grpc", reason="the Ray backend needs pip install -r requirements-ray.txt")
    requires = {"token": TOKEN}

    def get_cluster_id(request, context):
        sent = dict(context.invocation_metadata()).get("authorization")
        if requires["token"] is not None and sent != f"Bearer {requires['token']}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "InvalidAuthToken")
        return b""

    service, method = PROBE_METHOD.strip("/").split("/")
    handler = grpc.unary_unary_rpc_method_handler(get_cluster_id)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(service, {method: handler})])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", requires
    server.stop(None)


def test_a_cluster_that_requires_a_token_is_joined_with_the_right_one_only(control_store, tmp_path):
    address, _ = control_store
    with pytest.raises(ConfigError, match=f"requires a token and none is set here .*{GUIDE}"):
        prepare_join(address, False, {}, tmp_path)
    with pytest.raises(ConfigError, match="refuses the token of RAY_AUTH_TOKEN "):
        prepare_join(address, False, {"RAY_AUTH_TOKEN": "0" * 64}, tmp_path)
    user_token_file(tmp_path)
    environ = {}
    line, warning = prepare_join(address, False, environ, tmp_path)
    assert "requires token authentication" in line and not warning
    assert environ["RAY_AUTH_MODE"] == "token"  # so that Ray's client sends it


def test_a_cluster_without_authentication_is_joined_only_when_the_user_says_so(control_store, tmp_path):
    address, requires = control_store
    requires["token"] = None
    with pytest.raises(ConfigError, match=f"accepts clients without a token.*{GUIDE}.*--ray-allow-unauthenticated"):
        prepare_join(address, False, {}, tmp_path)
    environ = {}
    line, warning = prepare_join(address, True, environ, tmp_path)
    assert warning and line.startswith("warning: ") and "requires no authentication" in line
    assert "RAY_AUTH_MODE" not in environ


def test_with_rays_tls_on_the_cluster_is_left_to_its_certificates(tmp_path):
    # no server at all: with TLS, a plain call would get no answer, so none is made
    line, warning = prepare_join("127.0.0.1:1", False, {"RAY_USE_TLS": "1"}, tmp_path)
    assert line.startswith("Ray: TLS on") and not warning


def environment_of(pid: int) -> dict:
    entries = Path(f"/proc/{pid}/environ").read_text().split("\0")
    return dict(entry.split("=", 1) for entry in entries if "=" in entry)


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_a_local_instance_listens_on_the_loopback_only_and_refuses_clients_without_its_token(tmp_path):
    pytest.importorskip("ray", reason="the Ray backend needs pip install -r requirements-ray.txt")
    run_dir = tmp_path / "run"
    environment = {name: value for name, value in os.environ.items() if not name.startswith("RAY_AUTH")}
    trainer = start_cli(
        *LONG_RUN, "--backend", "ray", "--run-dir", str(run_dir), env=dict(environment, OMP_NUM_THREADS="1")
    )
    try:
        wait_for_metrics_rows(run_dir, 1, timeout=90)  # the node group trains: every server of Ray is up
        ours = exposure.descendants(trainer.pid)
        sockets = [socket for socket in exposure.listening_sockets() if socket.pid in ours]
        answers = {socket: exposure.answer(f"127.0.0.1:{socket.port}") for socket in sockets}
        store = next(socket for socket in sockets if socket.process == "gcs_server")
        token = environment_of(store.pid)["RAY_AUTH_TOKEN"]  # the run's, which Ray's processes inherited
        with_token = exposure.answer(f"127.0.0.1:{store.port}", token)
    finally:
        trainer.send_signal(signal.SIGINT)
        out, err = trainer.communicate(timeout=60)
    assert trainer.returncode == 130, err
    # the control store, the node manager and object manager, the driver's and the workers' servers
    assert {"gcs_server", "raylet", "python"} <= {socket.process for socket in sockets}, sockets
    assert [socket for socket in sockets if not socket.loopback] == [], sockets
    assert {socket: said for socket, said in answers.items() if said != "refused"} == {}, err
    assert with_token == "accepted"  # the probe tells a refusal from a server it may use
    assert "Ray: a local instance on the loopback, token authentication on (a token of this run)" in out
