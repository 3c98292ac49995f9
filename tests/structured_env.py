"""Test-only environments with Dict and Tuple observations, registered with gymnasium when this module is
imported. Each episode is one step; the right action pays 1, another 0.

- FrameAndVector-v0: a Dict of "frame", a uint8 frame [1, 6, 6] whose left or right half is lit (a bit),
  and "vector", a float32 one-hot of a second bit. The right action of Discrete(2) is the two bits' XOR:
  neither part alone beats random play's 0.5.
- CueAndBit-v0: a Tuple of a Discrete(3) cue and a MultiBinary(1) bit; the right action of Discrete(3)
  is (cue + bit) mod 3. Random play earns 1/3.
- CueAndText-v0: a Dict of a cue and a Text part, which the trainer refuses, naming the part.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

SIDE = 6


class FrameAndVectorEnv(gym.Env):
    metadata = {"render_modes": []}
    observation_space = gym.spaces.Dict(
        {
            "frame": gym.spaces.Box(0, 255, (1, SIDE, SIDE), np.uint8),
            "vector": gym.spaces.Box(0.0, 1.0, (2,), np.float32),
        }
    )
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.bits = self.np_random.integers(2, size=2)
        frame = np.zeros((1, SIDE, SIDE), dtype=np.uint8)
        frame[:, :, self.bits[0] * SIDE // 2 : (self.bits[0] + 1) * SIDE // 2] = 255
        return {"frame": frame, "vector": np.eye(2, dtype=np.float32)[self.bits[1]]}, {}

    def step(self, action):
        obs = {"frame": np.zeros((1, SIDE, SIDE), np.uint8), "vector": np.zeros(2, np.float32)}
        return obs, float(int(action) == self.bits[0] ^ self.bits[1]), True, False, {}


class CueAndBitEnv(gym.Env):
    metadata = {"render_modes": []}
    observation_space = gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.MultiBinary(1)))
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cue, self.bit = int(self.np_random.integers(3)), self.np_random.integers(2, size=1).astype(np.int8)
        return (self.cue, self.bit), {}

    def step(self, action):
        return (0, np.zeros(1, np.int8)), float(int(action) == (self.cue + int(self.bit[0])) % 3), True, False, {}


class CueAndTextEnv(CueAndBitEnv):
    observation_space = gym.spaces.Dict({"cue": gym.spaces.Discrete(3), "note": gym.spaces.Text(8)})


for _id, _entry in (
    ("FrameAndVector-v0", FrameAndVectorEnv),
    ("CueAndBit-v0", CueAndBitEnv),
    ("CueAndText-v0", CueAndTextEnv),
):
    if _id not in gym.registry:
        gym.register(id=_id, entry_point=_entry, reward_threshold=0.95)
