"""Test-only environments that misbehave the way real simulators do, registered on import
(gymnasium.make("tests.hostile_envs:Hang-v0") imports this module).

Each is the Cue task of tests/cue_env.py (one-hot cue of 3, one-step episodes) until it turns:
- Hang-v0: its first step never returns (a simulator deadlock), once per run and only in the process
  named by $A3C_TEST_HANG_IN (e.g. "a3c-worker-0", "a3c-evaluator"); the file $A3C_TEST_HANG_MARKER
  records that the hang happened, so a restarted process runs on.
- WrongShape-v0: from its BREAK_STEP-th step its observations have 4 entries, not 3.
- WrongDtype-v0: from its BREAK_STEP-th step its observations are strings.
- NaNObs-v0: from its BREAK_STEP-th step its observations are NaN (those after a reset too).
- ShiftingActions-v0: after its first episodes its action space grows to Discrete(5).
- ResetRaises-v0: its second reset raises RuntimeError.
- SlowStart-v0: making it takes START_SECONDS (a simulator that loads); each making appends the making
  process's name and time.monotonic() to the file $A3C_TEST_STARTS.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

from .cue_env import CueEnv

BREAK_STEP = 50
START_SECONDS = 0.3


class TurningCue(CueEnv):
    def __init__(self, fault: str):
        super().__init__()
        self.fault = fault
        self.steps = self.resets = 0

    def reset(self, *, seed=None, options=None):
        self.resets += 1
        if self.fault == "reset" and self.resets == 2:
            raise RuntimeError("the simulator lost its licence")
        if self.fault == "actions" and self.resets > 2:
            self.action_space = gym.spaces.Discrete(5)
        obs, info = super().reset(seed=seed, options=options)
        return (self.broken(obs) if self.fault == "nan" and self.steps >= BREAK_STEP else obs), info

    def step(self, action):
        self.steps += 1
        if self.fault == "hang":
            hang_once()
        obs, reward, terminated, truncated, info = super().step(action)
        if self.steps >= BREAK_STEP:
            obs = self.broken(obs)
        return obs, reward, terminated, truncated, info

    def broken(self, obs):
        if self.fault == "shape":
            return np.zeros(4, dtype=np.float32)
        elif self.fault == "dtype":
            return np.array(["a", "b", "c"])
        elif self.fault == "nan":
            return np.full(3, np.nan, dtype=np.float32)
        return obs


class SlowStartCue(CueEnv):
    def __init__(self):
        log = os.environ.get("A3C_TEST_STARTS")
        if log is not None:
            with open(log, "a") as file:
                file.write(f"{multiprocessing.current_process().name} {time.monotonic()}\n")
        time.sleep(START_SECONDS)
        super().__init__()


def hang_once() -> None:
    marker = os.environ.get("A3C_TEST_HANG_MARKER")
    if multiprocessing.current_process().name != os.environ.get("A3C_TEST_HANG_IN") or marker is None:
        return
    try:
        Path(marker).touch(exist_ok=False)
    except FileExistsError:
        return  # it hung once already
    while True:
        time.sleep(3600)


for env_id, fault in [
    ("Hang-v0", "hang"),
    ("WrongShape-v0", "shape"),
    ("WrongDtype-v0", "dtype"),
    ("NaNObs-v0", "nan"),
    ("ShiftingActions-v0", "actions"),
    ("ResetRaises-v0", "reset"),
]:
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=TurningCue, kwargs={"fault": fault})
if "SlowStart-v0" not in gym.registry:
    gym.register(id="SlowStart-v0", entry_point=SlowStartCue)
