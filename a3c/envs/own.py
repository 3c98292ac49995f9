"""The package's own envs, registered with gymnasium by id on demand (any size a pattern allows):
DeepSea and its picture (a3c/envs/deep_sea.py) and KeyDoor (a3c/envs/key_door.py)."""

from __future__ import annotations

import gymnasium as gym

from a3c.envs.deep_sea import deep_sea_registration
from a3c.envs.key_door import key_door_registration


def register_own(env_id: str) -> None:
    """Register `env_id` with gymnasium, once, where it is one of the package's own."""
    registration = deep_sea_registration(env_id) or key_door_registration(env_id)
    if registration is not None and env_id not in gym.registry:
        gym.register(id=env_id, **registration)
