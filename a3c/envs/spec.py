"""EnvSpec: what the network and the trainer need to know of an env's spaces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np


@dataclass(frozen=True)
class EnvSpec:
    """What the network needs to know about an environment."""

    obs_shape: tuple  # (size,) for a flat observation, (frames, height, width) for stacked frames
    num_actions: int  # the number of discrete actions (summed over the parts), or a continuous action's dimension
    action_start: int | np.ndarray  # a Discrete space's start; a MultiDiscrete's, one per part
    reward_threshold: Optional[float]
    continuous: bool = False
    action_low: Optional[np.ndarray] = None  # bounds of a continuous action
    action_high: Optional[np.ndarray] = None
    obs_dtype: type = np.float32  # uint8 for frames: four times less to copy and store
    observation_space: Any = None  # the gymnasium spaces themselves, which a user's --model is built for
    action_space: Any = None
    # MultiDiscrete: the choices of each part (a categorical each); MultiBinary: 2 for each bit; None otherwise
    action_parts: Optional[tuple[int, ...]] = None
    action_dtype: type = np.int64  # what the env takes: MultiBinary's int8
    # where the env's invalid-action mask comes from: "info" (info["action_mask"]), "observation" (a Dict
    # observation's "action_mask" key, moved into the info by ActionMaskInObservation), or None: no mask
    action_mask: Optional[str] = None
    # a Dict or Tuple observation's parts (a3c/envs/parts.py), carried as one flat float32 vector;
    # None for a flat Box or frames
    obs_parts: Optional[tuple] = None

    def record(self) -> dict:
        """What a checkpoint keeps of the spaces: both in words, the observation's parts as the network reads
        them (None for a flat Box or frames), and where the action mask comes from."""
        parts = (
            None
            if self.obs_parts is None
            else [f"{part.key}: {part.kind} {list(part.shape)}" for part in self.obs_parts]
        )
        return {
            "observation_space": str(self.observation_space),
            "action_space": str(self.action_space),
            "observation_parts": parts,
            "action_mask": self.action_mask,
        }

    def env_actions(self, actions: np.ndarray) -> np.ndarray:
        """The policy's actions as the env takes them: offset by the Discrete (or MultiDiscrete) start,
        or clipped to the Box bounds (the loss keeps the unclipped sample)."""
        if self.continuous:
            return np.clip(actions, self.action_low, self.action_high)
        return (actions + self.action_start).astype(self.action_dtype, copy=False)
