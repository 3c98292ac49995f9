"""A test-only environment with invalid-action masks, registered with gymnasium when this module is imported.

- MaskedCue-v0: episodes of EPISODE steps. Each step shows a one-hot cue of ACTIONS and makes LEGAL of the
  ACTIONS actions legal, drawn anew (info["action_mask"]). The cue ranks the actions from itself upwards
  (cue, cue + 1, ... mod ACTIONS): the first legal one in that order pays 1 / EPISODE, another legal one 0,
  an illegal one -1 and ends the episode. Random legal play earns 0.5; the greedy argmax over the legal
  actions of a policy that ranks them earns 1; a policy blind to the mask keeps ending its episodes.
  It renders (rgb_array) a square an action: the cue's white, the legal ones grey.
- MaskedCueDict-v0: the same with the mask in the observation, a Dict of "cue" and "action_mask";
  MaskedCueParts-v0 adds a part, "step" (a Discrete count of the episode's steps).
- MaskedMultiCue-v0: two MaskedCue games at once, a MultiDiscrete([4, 4]) action and a mask of 4 + 4.
- MaskedCueWrongSize-v0: a mask of ACTIONS - 1 entries; MaskedCueResetOnly-v0: a mask in the reset's info
  only; MaskedCueFirstEpisode-v0: masks in its first episode only. The trainer refuses each at start-up.
- MaskedCueStops-v0: its steps' masks stop after its LATE-th step; MaskedCueStarts-v0: its first reset
  gives no mask, its later ones do. Each fails the worker that steps it, in one line.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

ACTIONS, LEGAL, EPISODE = 4, 2, 5
LATE = 200  # past the steps the trainer plays at start-up (a3c.envs.spec.MASK_PROBE_STEPS)


class MaskedCueEnv(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    action_space = gym.spaces.Discrete(ACTIONS)

    def __init__(
        self, in_observation: bool = False, fault: str = "", step_part: bool = False, render_mode: str | None = None
    ):
        self.in_observation, self.fault, self.step_part = in_observation, fault, step_part
        self.render_mode = render_mode
        self.steps = self.resets = 0
        cue = gym.spaces.Box(0.0, 1.0, (ACTIONS,), np.float32)
        step = {"step": gym.spaces.Discrete(EPISODE)} if step_part else {}
        self.observation_space = (
            gym.spaces.Dict({"cue": cue, **step, "action_mask": gym.spaces.MultiBinary(ACTIONS)})
            if in_observation
            else cue
        )

    def draw(self) -> None:
        self.cue = int(self.np_random.integers(ACTIONS))
        self.mask = np.zeros(ACTIONS, dtype=np.int8)
        self.mask[self.np_random.choice(ACTIONS, LEGAL, replace=False)] = 1

    def best(self) -> int:
        """The first legal action from the cue upwards."""
        return next(a % ACTIONS for a in range(self.cue, self.cue + ACTIONS) if self.mask[a % ACTIONS])

    def observe(self, resetting: bool) -> tuple:
        cue = np.zeros(ACTIONS, dtype=np.float32)
        cue[self.cue] = 1.0
        mask = self.mask[:-1] if self.fault == "size" else self.mask
        if self.in_observation:
            step = {"step": min(self.t, EPISODE - 1)} if self.step_part else {}
            return {"cue": cue, **step, "action_mask": mask}, {}
        missing = {
            "reset-only": not resetting,
            "stops": self.steps > LATE,
            "starts": self.resets == 1,
            "first-episode": self.resets > 1,
        }
        return cue, ({} if missing.get(self.fault) else {"action_mask": mask})

    def render(self):
        """A row of squares, one an action: white the cue's, grey the legal ones (a video's frame)."""
        shades = np.where(self.mask, 128, 0).astype(np.uint8)
        shades[self.cue] = 255
        return np.repeat(np.repeat(shades, 16)[None, :, None], 16, axis=0).repeat(3, axis=-1)  # [16, 16 * ACTIONS, 3]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.resets += 1
        self.draw()
        return self.observe(resetting=True)

    def step(self, action):
        self.steps += 1
        action = int(action)
        if not self.mask[action]:
            obs, info = self.observe(resetting=False)
            return obs, -1.0, True, False, info
        reward = 1.0 / EPISODE if action == self.best() else 0.0
        self.t += 1
        self.draw()
        obs, info = self.observe(resetting=False)
        return obs, reward, self.t == EPISODE, False, info


class MaskedMultiCueEnv(gym.Env):
    """PARTS MaskedCue games at once, played by a MultiDiscrete([ACTIONS] * PARTS) action: the cues side by
    side, the masks one after another, the rewards summed over the parts (an illegal part ends the episode)."""

    PARTS = 2
    metadata = {"render_modes": []}
    observation_space = gym.spaces.Box(0.0, 1.0, (PARTS * ACTIONS,), np.float32)
    action_space = gym.spaces.MultiDiscrete([ACTIONS] * PARTS)

    def __init__(self):
        self.games = [MaskedCueEnv() for _ in range(self.PARTS)]

    def joined(self, results: list[tuple]) -> tuple:
        return np.concatenate([obs for obs, *_ in results]), {
            "action_mask": np.concatenate([info["action_mask"] for *_, info in results])
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.joined([game.reset(seed=None if seed is None else seed + k) for k, game in enumerate(self.games)])

    def step(self, action):
        results = [game.step(part) for game, part in zip(self.games, action)]
        obs, info = self.joined([(obs, info) for obs, _, _, _, info in results])
        return obs, sum(result[1] for result in results), any(result[2] for result in results), False, info


if "MaskedMultiCue-v0" not in gym.registry:
    gym.register(id="MaskedMultiCue-v0", entry_point=MaskedMultiCueEnv, reward_threshold=1.9)


for _id, _kwargs in (
    ("MaskedCue-v0", {}),
    ("MaskedCueDict-v0", {"in_observation": True}),
    ("MaskedCueParts-v0", {"in_observation": True, "step_part": True}),
    ("MaskedCueWrongSize-v0", {"fault": "size"}),
    ("MaskedCueResetOnly-v0", {"fault": "reset-only"}),
    ("MaskedCueFirstEpisode-v0", {"fault": "first-episode"}),
    ("MaskedCueStops-v0", {"fault": "stops"}),
    ("MaskedCueStarts-v0", {"fault": "starts"}),
):
    if _id not in gym.registry:
        gym.register(id=_id, entry_point=MaskedCueEnv, kwargs=_kwargs, reward_threshold=0.95)
