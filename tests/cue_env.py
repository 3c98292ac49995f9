"""Tiny test-only environments, registered with gymnasium when this module is imported.

gymnasium.make("tests.cue_env:Cue-v0") imports this module, which registers the ids;
forked worker processes inherit the registration.

- Cue-v0: a one-step cue task. The observation is a one-hot cue (float32 Box); the
  right action equals the cue index; reward 1 if right, else 0; the episode
  terminates after that one step. Random play earns 1 / num_cues on average.
- CueOffset-v0: the same with a Discrete action space that starts at 3.
- CueTruncated-v0: the same, but the episode never terminates; a TimeLimit of two
  steps truncates it, so the learner must bootstrap from the final observation.
- DictCue-v0: the same with a Dict observation space of one part, "cue".
- CueTextObs-v0, CueSequenceObs-v0, CueGraphObs-v0: the same declaring a Text, a Sequence and a Graph
  observation space, which the trainer refuses.
- CueCrash-v0: raises RuntimeError("cue env exploded") on its first step, to fail a worker.
- CueNaN-v0: pays a NaN reward, so every loss and gradient is NaN.
- CueText-v0, CueUnboundedBox-v0: the same with a Text action space, and with a Box action space
  without bounds, which the trainer refuses.
- MultiCue-v0: two cues of 3 at once, answered with a MultiDiscrete([3, 3]) action, 0.5 a right part.
- CopyBits-v0: 4 random bits, copied by a MultiBinary(4) action, 0.25 a right bit.
- ContinuousCue-v0: observe x in [-1, 1], act a in [-2, 2] (a Box), earn -(a - x)^2, one step.
- RecallCue-v0: a cue of 2 shown at the first step only, then DELAY blank steps; the last step pays 1
  if the action equals the cue. Only a network with memory beats random play's 0.5.
- CoinFlip-v0: one-step episodes paying 1 or 0 by a fair coin of the env's seeded rng, whatever
  the action; its reward_threshold 0.7 is reached by luck by 17% of 10-episode means (P(Bin(10, 0.5)
  >= 7)) and by a 100-episode mean with probability 4e-5.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

NUM_CUES = 3


class CueEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(
        self,
        num_cues: int = NUM_CUES,
        action_start: int = 0,
        terminate: bool = True,
        dict_obs: bool = False,
        crash: bool = False,
        nan_reward: bool = False,
        action_space=None,
        observation_space=None,
    ):
        self.num_cues = num_cues
        self.terminate = terminate
        self.dict_obs = dict_obs
        self.crash = crash
        self.nan_reward = nan_reward
        box = gym.spaces.Box(0.0, 1.0, (num_cues,), np.float32)
        self.observation_space = observation_space or (gym.spaces.Dict({"cue": box}) if dict_obs else box)
        self.action_space = action_space or gym.spaces.Discrete(num_cues, start=action_start)
        self.cue = 0

    def _obs(self):
        one_hot = np.zeros(self.num_cues, dtype=np.float32)
        one_hot[self.cue] = 1.0
        return {"cue": one_hot} if self.dict_obs else one_hot

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cue = int(self.np_random.integers(self.num_cues))
        return self._obs(), {}

    def step(self, action):
        if self.crash:
            raise RuntimeError("cue env exploded")
        reward = 1.0 if int(action) - int(self.action_space.start) == self.cue else 0.0
        if self.nan_reward:
            reward = float("nan")
        if not self.terminate:  # a fresh cue every step until the time limit cuts the episode
            self.cue = int(self.np_random.integers(self.num_cues))
        return self._obs(), reward, self.terminate, False, {}


def _register(env_id: str, **kwargs) -> None:
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=CueEnv, **kwargs)


_register("Cue-v0", reward_threshold=0.95)
_register("CueOffset-v0", kwargs={"action_start": 3})
_register("CueTruncated-v0", kwargs={"terminate": False}, max_episode_steps=2)
_register("DictCue-v0", kwargs={"dict_obs": True})
_register("CueCrash-v0", kwargs={"crash": True})
_register("CueNaN-v0", kwargs={"nan_reward": True})
_register("CueText-v0", kwargs={"action_space": gym.spaces.Text(4)})
_register("CueTextObs-v0", kwargs={"observation_space": gym.spaces.Text(4)})
_register("CueSequenceObs-v0", kwargs={"observation_space": gym.spaces.Sequence(gym.spaces.Discrete(3))})
_register("CueGraphObs-v0", kwargs={"observation_space": gym.spaces.Graph(gym.spaces.Box(0, 1, (2,)), None)})
_register("CueUnboundedBox-v0", kwargs={"action_space": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)})


class MultiCueEnv(gym.Env):
    """One step: two one-hot cues of NUM_CUES side by side; each part of the action that names its cue pays 0.5."""

    PARTS = 2
    metadata = {"render_modes": []}
    observation_space = gym.spaces.Box(0.0, 1.0, (PARTS * NUM_CUES,), np.float32)
    action_space = gym.spaces.MultiDiscrete([NUM_CUES] * PARTS)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cues = self.np_random.integers(NUM_CUES, size=self.PARTS)
        obs = np.zeros((self.PARTS, NUM_CUES), dtype=np.float32)
        obs[np.arange(self.PARTS), self.cues] = 1.0
        return obs.ravel(), {}

    def step(self, action):
        assert self.action_space.contains(action), action
        return np.zeros(self.observation_space.shape, np.float32), float(np.mean(action == self.cues)), True, False, {}


class CopyBitsEnv(gym.Env):
    """One step: BITS random bits as floats; each bit of the MultiBinary action that copies its bit pays 1 / BITS."""

    BITS = 4
    metadata = {"render_modes": []}
    observation_space = gym.spaces.Box(0.0, 1.0, (BITS,), np.float32)
    action_space = gym.spaces.MultiBinary(BITS)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.bits = self.np_random.integers(2, size=self.BITS).astype(np.int8)
        return self.bits.astype(np.float32), {}

    def step(self, action):
        assert self.action_space.contains(action), action
        return np.zeros(self.BITS, np.float32), float(np.mean(action == self.bits)), True, False, {}


for _id, _entry in (("MultiCue-v0", MultiCueEnv), ("CopyBits-v0", CopyBitsEnv)):
    if _id not in gym.registry:
        gym.register(id=_id, entry_point=_entry, reward_threshold=0.95)


class ContinuousCueEnv(gym.Env):
    """One step: observe x ~ U(-1, 1), act a in [-2, 2], earn -(a - x)^2; the greedy optimum earns 0."""

    metadata = {"render_modes": []}
    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = self.np_random.uniform(-1.0, 1.0, size=1).astype(np.float32)
        return self.x, {}

    def step(self, action):
        assert self.action_space.contains(np.asarray(action, dtype=np.float32)), action  # clipped by the trainer
        return self.x, -float((action[0] - self.x[0]) ** 2), True, False, {}


if "ContinuousCue-v0" not in gym.registry:
    gym.register(id="ContinuousCue-v0", entry_point=ContinuousCueEnv, reward_threshold=-0.02)


class CoinFlipEnv(CueEnv):
    def step(self, action):
        return self._obs(), float(self.np_random.integers(2)), True, False, {}


if "CoinFlip-v0" not in gym.registry:
    gym.register(id="CoinFlip-v0", entry_point=CoinFlipEnv, reward_threshold=0.7)


class RecallCueEnv(gym.Env):
    """The cue at step 0, zeros for DELAY steps, then an answer that pays 1 if right."""

    DELAY = 2
    metadata = {"render_modes": []}
    observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)  # the cue's one-hot, and a "now answer" flag
    action_space = gym.spaces.Discrete(2)

    def _obs(self):
        obs = np.zeros(3, dtype=np.float32)
        if self.t == 0:
            obs[self.cue] = 1.0
        obs[2] = float(self.t == self.DELAY)
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cue, self.t = int(self.np_random.integers(2)), 0
        return self._obs(), {}

    def step(self, action):
        if self.t < self.DELAY:
            self.t += 1
            return self._obs(), 0.0, False, False, {}
        return self._obs(), float(int(action) == self.cue), True, False, {}


if "RecallCue-v0" not in gym.registry:
    gym.register(id="RecallCue-v0", entry_point=RecallCueEnv, reward_threshold=0.95)
