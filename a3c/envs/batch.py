"""A worker's K envs stepped together: a loop, gymnasium's numpy-vectorised envs, or ALE's C++ vector env."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import gymnasium as gym
import numpy as np

from a3c.envs.families import is_atari
from a3c.envs.make import env_spec, make_atari_vector, make_env
from a3c.envs.masks import ACTION_MASK, action_mask_problem
from a3c.envs.spec import EnvSpec
from a3c.errors import EnvError, first_line


@dataclass
class StepResult:
    """One step of every environment in a batch."""

    obs: np.ndarray  # [K, *obs_shape], the observation to act on next (its action mask: the batch's action_mask)
    rewards: np.ndarray  # [K], float32
    terminated: np.ndarray  # [K], bool
    truncated: np.ndarray  # [K], bool
    final_obs: np.ndarray  # [K, *obs_shape], the last observation where truncated, else zeros
    finished_returns: list  # undiscounted returns of episodes that ended at this step
    finished_lengths: list
    valid: np.ndarray  # [K], bool: False where this step only reset an env (no transition to learn)


def has_vector_entry_point(env_id: str) -> bool:
    if is_atari(env_id):  # ALE's vector env has no gym.make_vec entry; make_env_batch makes it
        return False
    spec = gym.registry.get(env_id.split(":")[-1])  # "module:EnvId" is registered as EnvId
    return spec is not None and spec.vector_entry_point is not None


def make_vector_env(env_id: str, num_envs: int) -> tuple[gym.vector.VectorEnv, EnvSpec]:
    """A gymnasium vector env (next-step autoreset) of checked envs, numpy-vectorised where possible,
    and the spec of its envs."""
    spec = env_spec(env_id)  # the one-line errors of make_env
    if has_vector_entry_point(env_id) and spec.action_mask is None:  # a mask is read from a loop's infos
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point"), spec
    return gym.vector.SyncVectorEnv([lambda: make_env(env_id, training=False)] * num_envs), spec


# from this many envs on, gymnasium's vectorised step beats a loop over single envs
# (docs/design/choices.md, "The vectorised environment threshold")
VECTOR_ENTRY_POINT_MIN_ENVS = 8


def make_env_batch(env_id: str, seeds: list[int], vector_seed: int):
    """K = len(seeds) environments for one worker: ALE's vector env for Atari (env k reset with
    seeds[k]); gymnasium's numpy-vectorised implementation (reset with `vector_seed`) where the env
    has one and K is large enough for it to pay; else a loop (env k reset with seeds[k])."""
    if is_atari(env_id):
        spec = env_spec(env_id)  # the one-line errors of make_env, the extra's included
        ale_seeds = np.array(seeds, dtype=np.int64) % 2**31  # ALE takes int32, and -1 for "unseeded"
        return VectorEnvBatch(make_atari_vector(env_id, len(seeds), training=True), spec, ale_seeds)
    if (
        len(seeds) >= VECTOR_ENTRY_POINT_MIN_ENVS
        and has_vector_entry_point(env_id)
        and env_spec(env_id).action_mask is None
    ):
        vector_env = gym.make_vec(env_id, num_envs=len(seeds), vectorization_mode="vector_entry_point")
        return VectorEnvBatch(vector_env, env_spec(env_id), vector_seed)
    return EnvBatch(env_id, seeds)


class EnvBatch:
    """K environments stepped in one loop, reset in place when an episode ends.

    A plain loop measured faster than gymnasium's SyncVectorEnv for small K
    because it skips the info-dict merging; the final observation of a
    truncated episode is kept so the learner can bootstrap from it.

    An env that raises, or whose observation or action space breaks its declared
    spaces, raises an EnvError of one line naming the env and the step: a user's
    simulator is checked where a vector env of our own choosing is trusted.
    """

    def __init__(self, env_id: str, seeds: list[int]):
        self.env_id = env_id
        self.envs = [make_env(env_id) for _ in seeds]
        self.spec = env_spec(env_id)
        size = len(self.envs)
        self.steps = 0  # batch steps taken: where a fault is reported
        self.fitting_dtypes = {np.dtype(self.spec.obs_dtype)}  # those seen to cast to the declared one
        self._returns = np.zeros(size, dtype=np.float64)
        self._lengths = np.zeros(size, dtype=np.int64)
        self.obs = np.zeros((size, *self.spec.obs_shape), dtype=self.spec.obs_dtype)
        # [K, actions]: the legal actions in self.obs, True where legal; None for an env without masks
        self.action_mask = None if self.spec.action_mask is None else np.zeros((size, self.spec.num_actions), bool)
        for i, (env, seed) in enumerate(zip(self.envs, seeds)):
            self.obs[i] = self.reset(i, self.action_mask, seed)
            env.action_space.seed(seed)
        self.check_finite(self.obs)

    def __len__(self) -> int:
        return len(self.envs)

    def fault(self, i: int, what: str) -> EnvError:
        return EnvError(
            f"env {self.env_id} (number {i} of this worker's {len(self.envs)}) at its step {self.steps:,}: {what}"
        )

    def checked(self, i: int, obs) -> np.ndarray:
        """`obs` as an array, if its shape and dtype fit the observation space (the finite check is batched
        in step: a numpy call per env and step cost more than the env step of CartPole)."""
        obs, spec = np.asarray(obs), self.spec
        if obs.shape == spec.obs_shape and obs.dtype in self.fitting_dtypes:
            return obs
        if obs.shape != spec.obs_shape or not np.can_cast(obs.dtype, spec.obs_dtype, "same_kind"):
            raise self.fault(
                i,
                f"an observation of shape {obs.shape} and dtype {obs.dtype}, where its space "
                f"declares {spec.obs_shape} and {np.dtype(spec.obs_dtype)}",
            )
        self.fitting_dtypes.add(obs.dtype)
        return obs

    def check_finite(self, obs: np.ndarray) -> None:
        """Raise, naming the first env, if a float observation of the batch `obs` is NaN or infinite."""
        if obs.dtype.kind == "f" and not np.isfinite(obs).all():
            i = int(np.argmin(np.isfinite(obs).reshape(len(obs), -1).all(axis=1)))
            raise self.fault(i, "a NaN or infinite observation")

    def reset(self, i: int, masks: Optional[np.ndarray], seed: Optional[int] = None) -> np.ndarray:
        """Env i's first observation, its action mask written into `masks[i]`."""
        env = self.envs[i]
        try:
            obs, info = env.reset(seed=seed)
        except Exception as error:
            raise self.fault(i, f"reset raised {type(error).__name__}: {first_line(error)}") from error
        if env.action_space != self.spec.action_space:
            raise self.fault(i, f"its action space became {env.action_space}, from {self.spec.action_space}")
        if masks is None and ACTION_MASK in info:  # once an episode: a mask that comes only sometimes
            raise self.fault(i, f"an {ACTION_MASK} in its info, where its first reset gave none")
        self.read_mask(i, info, masks)
        return self.checked(i, obs)

    def read_mask(self, i: int, info: dict, masks: Optional[np.ndarray]) -> None:
        if masks is not None:
            problem = action_mask_problem(info.get(ACTION_MASK), self.spec)
            if problem is not None:
                raise self.fault(i, problem)
            masks[i] = info[ACTION_MASK]

    def step(self, actions: np.ndarray) -> StepResult:
        size = len(self.envs)
        next_obs = np.empty_like(self.obs)
        final_obs = np.zeros_like(self.obs)
        rewards = np.empty(size, dtype=np.float32)
        terminated = np.zeros(size, dtype=bool)
        truncated = np.zeros(size, dtype=bool)
        finished_returns, finished_lengths = [], []
        next_masks = None if self.action_mask is None else np.empty_like(self.action_mask)
        env_actions = self.spec.env_actions(actions)
        self.steps += 1
        for i, env in enumerate(self.envs):
            try:
                obs, reward, term, trunc, info = env.step(env_actions[i])
            except Exception as error:
                raise self.fault(i, f"step raised {type(error).__name__}: {first_line(error)}") from error
            obs = self.checked(i, obs)
            rewards[i] = reward
            self._returns[i] += reward
            self._lengths[i] += 1
            if term or trunc:
                terminated[i], truncated[i] = term, trunc and not term
                if truncated[i]:
                    final_obs[i] = obs
                finished_returns.append(float(self._returns[i]))
                finished_lengths.append(int(self._lengths[i]))
                self._returns[i], self._lengths[i] = 0.0, 0
                obs = self.reset(i, next_masks)  # the last step's mask is of no use: the reset's is acted on
            elif next_masks is not None:
                self.read_mask(i, info, next_masks)
            next_obs[i] = obs
        self.check_finite(next_obs)
        if truncated.any():
            self.check_finite(final_obs)
        self.obs, self.action_mask = next_obs, next_masks
        return StepResult(
            next_obs,
            rewards,
            terminated,
            truncated,
            final_obs,
            finished_returns,
            finished_lengths,
            np.ones(size, dtype=bool),
        )

    def close(self) -> None:
        for env in self.envs:
            env.close()


class VectorEnvBatch:
    """A vector env (gymnasium's entry point, or ALE's) which resets an ended env on the NEXT step.

    That reset step ignores the action and yields no transition: it is reported
    as not valid, so the learner masks it out of the loss and restarts the
    LSTM state after it.
    """

    def __init__(self, env: gym.vector.VectorEnv, spec: EnvSpec, seed: int | np.ndarray):
        """`seed`: one int for gymnasium's vector envs, which draw every env's start from one rng;
        one per env for ALE's."""
        self.spec = spec
        self.env = env
        self.obs, _ = self.env.reset(seed=seed)
        self.action_mask = None  # envs with masks are stepped by EnvBatch
        size = self.env.num_envs
        self._returns = np.zeros(size, dtype=np.float64)
        self._lengths = np.zeros(size, dtype=np.int64)
        self._resetting = np.zeros(size, dtype=bool)

    def __len__(self) -> int:
        return self.env.num_envs

    def step(self, actions: np.ndarray) -> StepResult:
        obs, rewards, terminated, truncated, _ = self.env.step(self.spec.env_actions(actions))
        valid = ~self._resetting
        self._returns += rewards
        self._lengths += valid
        ended = terminated | truncated
        truncated = truncated & ~terminated
        final_obs = np.zeros_like(obs)  # untouched pages cost nothing: most steps truncate nothing
        final_obs[truncated] = obs[truncated]
        finished_returns = self._returns[ended].tolist()
        finished_lengths = self._lengths[ended].tolist()
        self._returns[ended], self._lengths[ended] = 0.0, 0
        self._resetting = ended
        self.obs = obs
        return StepResult(
            obs, rewards.astype(np.float32), terminated, truncated, final_obs, finished_returns, finished_lengths, valid
        )

    def close(self) -> None:
        self.env.close()
