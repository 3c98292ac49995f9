"""Invalid-action masks: where an env gives them (its info, or a Dict observation's key), and the start-up
probe that checks them."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from a3c.envs.spec import EnvSpec
from a3c.errors import EnvError, first_line

ACTION_MASK = "action_mask"  # the info key (and Dict observation key) of an invalid-action mask


class ActionMaskInObservation(gym.Wrapper):
    """A Dict observation with an "action_mask" key: the mask moves into the info, where an env that gives
    its mask in the info has it, so one path reads both; the observation is the Dict's one other part, or
    a Dict of its other parts."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        rest = {key: space for key, space in env.observation_space.spaces.items() if key != ACTION_MASK}
        self.key = next(iter(rest)) if len(rest) == 1 else None
        self.observation_space = rest[self.key] if self.key is not None else gym.spaces.Dict(rest)

    def split(self, obs: dict, info: dict) -> tuple[Any, dict]:
        rest = obs[self.key] if self.key is not None else {k: v for k, v in obs.items() if k != ACTION_MASK}
        return rest, {**info, ACTION_MASK: obs[ACTION_MASK]}

    def reset(self, **kwargs):
        return self.split(*self.env.reset(**kwargs))

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        obs, info = self.split(obs, info)
        return obs, reward, terminated, truncated, info


def with_action_mask_moved(env: gym.Env) -> gym.Env:
    """`env`, wrapped by ActionMaskInObservation where its observation is a Dict with an action mask."""
    space = env.observation_space
    if not (isinstance(space, gym.spaces.Dict) and ACTION_MASK in space.spaces):
        return env
    if len(space.spaces) == 1:
        raise EnvError(
            f"unsupported observation space {space}: beside its {ACTION_MASK!r}, a Dict observation "
            f"needs a part to observe"
        )
    return ActionMaskInObservation(env)


def action_mask_problem(mask, spec: "EnvSpec") -> Optional[str]:
    """What is wrong with one env's action mask, in words, or None: a mask is a bool (or 0/1) array of the
    action space's size (a multi-part action's parts one after another) that allows an action in each part."""
    if mask is None:
        return f"no {ACTION_MASK} in its info, where its first reset gave one"
    mask = np.asarray(mask)
    if mask.shape != (spec.num_actions,):
        return (
            f"an {ACTION_MASK} of shape {mask.shape}, where its action space {spec.action_space} "
            f"needs ({spec.num_actions},)"
        )
    if not np.isin(mask, (0, 1)).all():
        return f"an {ACTION_MASK} of values other than 0 and 1 (or False and True)"
    bounds = np.cumsum((0, *(spec.action_parts or (spec.num_actions,))))
    if not all(mask[start:end].any() for start, end in zip(bounds[:-1], bounds[1:])):
        return f"an {ACTION_MASK} that allows no action" + (" in a part" if spec.action_parts else "")
    return None


def with_action_mask(spec: EnvSpec, env: gym.Env, env_id: str) -> EnvSpec:
    """`spec` with the source of the env's action mask, if its first reset gives one; its masks are then
    checked over MASK_PROBE_STEPS legal steps (probe_action_masks)."""
    try:
        _, info = env.reset(seed=0)
    except Exception as error:
        raise EnvError(f"env {env_id} at its first reset raised {type(error).__name__}: {first_line(error)}") from error
    if spec.action_mask is None and ACTION_MASK not in info:
        return spec
    spec = dataclasses.replace(spec, action_mask=spec.action_mask or "info")
    if spec.continuous:
        raise EnvError(
            f"env {env_id} gives an {ACTION_MASK}, which needs a Discrete, MultiDiscrete or MultiBinary "
            f"action space, not {spec.action_space}"
        )
    probe_action_masks(spec, env, env_id, info)
    return spec


# steps an env with masks is played at start-up, taking the first legal action: a mask it forgets after
# its first reset or step (a common slip) is refused there, in one line and exit code 2, not in a worker
MASK_PROBE_STEPS = 100


def probe_action_masks(spec: EnvSpec, env: gym.Env, env_id: str, info: dict) -> None:
    """Raise an EnvError naming the reset or step where a mask is missing or wrong."""
    where = "its first reset"
    for step in range(1, MASK_PROBE_STEPS + 1):
        problem = action_mask_problem(info.get(ACTION_MASK), spec)
        if problem is not None:
            raise EnvError(f"env {env_id} at {where}: {problem}")
        try:
            _, _, terminated, truncated, info = env.step(spec.env_actions(first_legal_action(spec, info[ACTION_MASK])))
            if terminated or truncated:  # an episode's last step needs no mask: the next reset's is acted on
                _, info = env.reset()
        except Exception as error:
            raise EnvError(
                f"env {env_id} at its step {step} raised {type(error).__name__}: {first_line(error)}"
            ) from error
        where = f"its reset after step {step}" if terminated or truncated else f"its step {step}"


def first_legal_action(spec: EnvSpec, mask) -> np.ndarray:
    """The first legal choice of each part of the action (a Discrete space's one part): what the probe plays."""
    mask = np.asarray(mask, dtype=bool)
    if spec.action_parts is None:
        return mask.argmax()
    return np.array([part.argmax() for part in np.split(mask, np.cumsum(spec.action_parts)[:-1])])
