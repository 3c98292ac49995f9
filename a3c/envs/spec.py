"""Making gymnasium environments, checking their spaces, and stepping several in one worker."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from a3c.errors import EnvError, first_line
from a3c.envs.parts import FlatObservation, with_flat_observation
from a3c.envs.families import is_atari, is_minatar


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
        parts = None if self.obs_parts is None else [f"{part.key}: {part.kind} {list(part.shape)}"
                                                     for part in self.obs_parts]
        return {"observation_space": str(self.observation_space), "action_space": str(self.action_space),
                "observation_parts": parts, "action_mask": self.action_mask}

    def env_actions(self, actions: np.ndarray) -> np.ndarray:
        """The policy's actions as the env takes them: offset by the Discrete (or MultiDiscrete) start,
        or clipped to the Box bounds (the loss keeps the unclipped sample)."""
        if self.continuous:
            return np.clip(actions, self.action_low, self.action_high)
        return (actions + self.action_start).astype(self.action_dtype, copy=False)


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
        raise EnvError(f"unsupported observation space {space}: beside its {ACTION_MASK!r}, a Dict observation "
                       f"needs a part to observe")
    return ActionMaskInObservation(env)


def wrapped_by(env: gym.Env, kind: type) -> Optional[gym.Wrapper]:
    """The wrapper of type `kind` around `env`, if any."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, kind):
            return env
        env = env.env
    return None


def action_mask_problem(mask, spec: "EnvSpec") -> Optional[str]:
    """What is wrong with one env's action mask, in words, or None: a mask is a bool (or 0/1) array of the
    action space's size (a multi-part action's parts one after another) that allows an action in each part."""
    if mask is None:
        return f"no {ACTION_MASK} in its info, where its first reset gave one"
    mask = np.asarray(mask)
    if mask.shape != (spec.num_actions,):
        return f"an {ACTION_MASK} of shape {mask.shape}, where its action space {spec.action_space} needs ({spec.num_actions},)"
    if not np.isin(mask, (0, 1)).all():
        return f"an {ACTION_MASK} of values other than 0 and 1 (or False and True)"
    bounds = np.cumsum((0, *(spec.action_parts or (spec.num_actions,))))
    if not all(mask[start:end].any() for start, end in zip(bounds[:-1], bounds[1:])):
        return f"an {ACTION_MASK} that allows no action" + (" in a part" if spec.action_parts else "")
    return None


def rendering(render_mode: Optional[str]) -> dict:
    """gym.make's render_mode only when asked for: an env without the argument must still be made."""
    return {} if render_mode is None else {"render_mode": render_mode}


NOOP_MAX = 30  # random no-ops after a reset: different starts from a deterministic emulator


def make_atari(env_id: str, training: bool, render_mode: Optional[str] = None) -> gym.Env:
    """The standard preprocessing: noop reset, frame skip 4, 84x84 grayscale, 4 stacked frames;
    a lost life ends the episode in training only (evaluation plays whole games)."""
    try:
        import ale_py
    except ImportError:
        raise EnvError(f"{env_id} needs the Atari extras: pip install -r requirements-atari.txt") from None
    gym.register_envs(ale_py)
    env = gym.make(env_id, frameskip=1, disable_env_checker=True, **rendering(render_mode))
    env = gym.wrappers.AtariPreprocessing(env, noop_max=NOOP_MAX, frame_skip=4, screen_size=84,
                                          terminal_on_life_loss=training, grayscale_obs=True)
    return gym.wrappers.FrameStackObservation(env, 4, padding_type="zero")  # as ALE's vector env pads


def make_atari_vector(env_id: str, size: int, training: bool):
    """`size` envs of `env_id` stepped in ALE's C++ with make_atari's preprocessing (the same frames;
    tests/test_atari.py compares them), in one thread: the worker processes already fill the cores.
    The game's version settings (sticky actions, action set, frame limit) come from its registration."""
    import ale_py
    from ale_py.vector_env import AtariVectorEnv
    gym.register_envs(ale_py)
    version = gym.spec(env_id).kwargs
    return AtariVectorEnv(version["game"], size, num_threads=1,
                          repeat_action_probability=version.get("repeat_action_probability", 0.0),
                          full_action_space=version.get("full_action_space", False),
                          max_num_frames_per_episode=version.get("max_num_frames_per_episode", 108_000),
                          noop_max=NOOP_MAX, episodic_life=training, reward_clipping=False, use_fire_reset=False)


class MinAtarFrames(gym.ObservationWrapper):
    """MinAtar's [10, 10, channels] booleans as [channels, 10, 10] uint8 frames of 0 and 255: the stock
    network's convnet reads channels first and scales frames by 1/255, as it does Atari's."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        height, width, channels = env.observation_space.shape
        self.observation_space = gym.spaces.Box(0, 255, (channels, height, width), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(observation, -1, 0)).astype(np.uint8) * np.uint8(255)


def make_minatar(env_id: str, render_mode: Optional[str] = None) -> gym.Env:
    try:
        import minatar.gym
    except ImportError:
        raise EnvError(f"{env_id} needs the MinAtar extra: pip install -r requirements-minatar.txt") from None
    if env_id not in gym.registry:
        minatar.gym.register_envs()  # gymnasium 1.x does not import it by itself
    return MinAtarFrames(gym.make(env_id, disable_env_checker=True, **rendering(render_mode)))


def make_env(env_id: str, training: bool = True, render_mode: Optional[str] = None) -> gym.Env:
    """gymnasium.make with one-line errors; accepts the 'module:EnvId' form and ALE/ ids.
    `render_mode="rgb_array"`: an env to film (a3c/tools/video.py)."""
    try:
        if is_atari(env_id):
            env = make_atari(env_id, training, render_mode)
        elif is_minatar(env_id):
            env = make_minatar(env_id, render_mode)
        else:
            env = gym.make(env_id, disable_env_checker=True, **rendering(render_mode))
    except (gym.error.Error, ImportError, ValueError, TypeError, AttributeError) as error:
        raise EnvError(f"cannot make environment {env_id!r}: {first_line(error)}") from None
    try:
        env = with_flat_observation(with_action_mask_moved(env))
        describe(env)
    except EnvError:
        env.close()
        raise
    return env


def describe(env: gym.Env) -> EnvSpec:
    """Read the spaces; refuse the ones the model cannot handle, naming them."""
    obs_space, action_space = env.observation_space, env.action_space
    flat = isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1
    frames = isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 3 and obs_space.dtype == np.uint8
    if not (flat or frames):
        raise EnvError(f"unsupported observation space {obs_space}: a flat Box, stacked uint8 frames, or a Dict or "
                       f"Tuple of such parts and Discrete, MultiDiscrete or MultiBinary ones is needed")
    structured = wrapped_by(env, FlatObservation)
    observation = {"obs_shape": tuple(int(n) for n in obs_space.shape),
                   "obs_dtype": np.uint8 if frames else np.float32,
                   # a --model is built for the env's own space: a Dict or Tuple where the network reads its parts
                   "observation_space": obs_space if structured is None else structured.structured_space,
                   "obs_parts": None if structured is None else structured.parts,
                   "action_space": action_space,
                   "action_mask": "observation" if wrapped_by(env, ActionMaskInObservation) else None}
    threshold = env.spec.reward_threshold if env.spec is not None else None
    threshold = None if threshold is None else float(threshold)
    if isinstance(action_space, gym.spaces.Discrete):
        return EnvSpec(num_actions=int(action_space.n), action_start=int(action_space.start),
                       reward_threshold=threshold, **observation)
    if isinstance(action_space, gym.spaces.MultiDiscrete) and action_space.nvec.ndim == 1:
        parts = tuple(int(n) for n in action_space.nvec)
        return EnvSpec(num_actions=sum(parts), action_start=np.asarray(action_space.start, dtype=np.int64),
                       reward_threshold=threshold, action_parts=parts, **observation)
    if isinstance(action_space, gym.spaces.MultiBinary) and len(action_space.shape) == 1:
        parts = (2,) * int(action_space.shape[0])  # a categorical of 2 per bit: a Bernoulli of logit l1 - l0
        return EnvSpec(num_actions=sum(parts), action_start=0, reward_threshold=threshold, action_parts=parts,
                       action_dtype=np.int8, **observation)
    if (isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1
            and np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        return EnvSpec(num_actions=int(action_space.shape[0]), action_start=0, reward_threshold=threshold,
                       continuous=True, action_low=action_space.low.astype(np.float32),
                       action_high=action_space.high.astype(np.float32), **observation)
    raise EnvError(f"unsupported action space {action_space}: a Discrete, a flat MultiDiscrete or MultiBinary, "
                   f"or a bounded flat Box is needed")


@functools.cache
def env_spec(env_id: str) -> EnvSpec:
    """The spec of `env_id`'s envs, from one made, reset and closed; once per process (and a forked worker
    inherits its trainer's): making an Atari env loads its ROM, about 0.25 s."""
    env = make_env(env_id)
    try:
        return with_action_mask(describe(env), env, env_id)
    finally:
        env.close()


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
        raise EnvError(f"env {env_id} gives an {ACTION_MASK}, which needs a Discrete, MultiDiscrete or MultiBinary "
                       f"action space, not {spec.action_space}")
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
            raise EnvError(f"env {env_id} at its step {step} raised {type(error).__name__}: "
                           f"{first_line(error)}") from error
        where = f"its reset after step {step}" if terminated or truncated else f"its step {step}"


def first_legal_action(spec: EnvSpec, mask) -> np.ndarray:
    """The first legal choice of each part of the action (a Discrete space's one part): what the probe plays."""
    mask = np.asarray(mask, dtype=bool)
    if spec.action_parts is None:
        return mask.argmax()
    return np.array([part.argmax() for part in np.split(mask, np.cumsum(spec.action_parts)[:-1])])


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


VECTOR_ENTRY_POINT_MIN_ENVS = 8  # CartPole, us a step: 1 env 19 (loop) / 66 (vector); 8: 72 / 65; 32: 480 / 50


def make_env_batch(env_id: str, seeds: list[int], vector_seed: int):
    """K = len(seeds) environments for one worker: ALE's vector env for Atari (env k reset with
    seeds[k]); gymnasium's numpy-vectorised implementation (reset with `vector_seed`) where the env
    has one and K is large enough for it to pay; else a loop (env k reset with seeds[k])."""
    if is_atari(env_id):
        spec = env_spec(env_id)  # the one-line errors of make_env, the extra's included
        ale_seeds = np.array(seeds, dtype=np.int64) % 2**31  # ALE takes int32, and -1 for "unseeded"
        return VectorEnvBatch(make_atari_vector(env_id, len(seeds), training=True), spec, ale_seeds)
    if (len(seeds) >= VECTOR_ENTRY_POINT_MIN_ENVS and has_vector_entry_point(env_id)
            and env_spec(env_id).action_mask is None):
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
        return EnvError(f"env {self.env_id} (number {i} of this worker's {len(self.envs)}) at its step "
                        f"{self.steps:,}: {what}")

    def checked(self, i: int, obs) -> np.ndarray:
        """`obs` as an array, if its shape and dtype fit the observation space (the finite check is batched
        in step: a numpy call per env and step cost more than the env step of CartPole)."""
        obs, spec = np.asarray(obs), self.spec
        if obs.shape == spec.obs_shape and obs.dtype in self.fitting_dtypes:
            return obs
        if obs.shape != spec.obs_shape or not np.can_cast(obs.dtype, spec.obs_dtype, "same_kind"):
            raise self.fault(i, f"an observation of shape {obs.shape} and dtype {obs.dtype}, where its space "
                                f"declares {spec.obs_shape} and {np.dtype(spec.obs_dtype)}")
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
        return StepResult(next_obs, rewards, terminated, truncated, final_obs,
                          finished_returns, finished_lengths, np.ones(size, dtype=bool))

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
        return StepResult(obs, rewards.astype(np.float32), terminated, truncated, final_obs,
                          finished_returns, finished_lengths, valid)

    def close(self) -> None:
        self.env.close()
