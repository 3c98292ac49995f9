"""Where the workers run: local processes sharing memory, or Ray actors (imported only when chosen)."""

from __future__ import annotations

from a3c.backends.local import LocalBackend
from a3c.config.settings import Config


def connect_backend(config: Config):
    """With --backend ray, the RayCluster, connected before anything is written: a bad address is a usage error."""
    if config.backend != "ray":
        return None
    from a3c.backends.ray import (
        connect,  # here only: the local backend never imports Ray
    )
    return connect(config)


def make_backend(ray_cluster, *backend_args) -> LocalBackend:
    """The backend of a run: Ray's where connect_backend gave a cluster, else the local one."""
    if ray_cluster is None:
        return LocalBackend(*backend_args)
    from a3c.backends.ray import RayBackend
    return RayBackend(ray_cluster, *backend_args)
