"""Where an Atari worker's time goes: a breakdown of its second, and the two ceilings beside it.

One worker of the Atari preset on Pong runs in this process, on one core as a worker does (one torch
thread), through the code the trainer runs: ActorLearner's rollouts and gradients, the shared Adam's
step, the weights read back. Its phases are timed by wrapping the methods that do them:
- emulation: ALE's vector env step (the emulator, frame skip, its C++ preprocessing and frame stack);
- the batch's Python: VectorEnvBatch.step around it (episode bookkeeping, resets, the observation);
- acting: the policy's forward pass a step, and sampling the action;
- backward: the policy's backward pass over the rollout (the convnet's autograd included);
- the loss and the rest: returns, log-probabilities, the loss and its gradient, buffers;
- optimizer step and weights hand-off: the shared Adam's step and the copy of the shared weights.
Beside it, measured alone on this machine: the emulator (ALE's vector env with random actions, one
process per core) and each candidate network's forward plus backward a sample, float32 and bfloat16
(autocast), at the batch sizes a worker of the preset uses (its envs to act, envs x t-max transitions to
learn).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import torch
from torch import nn

from a3c.config.settings import Config
from a3c.learn.learner import ActorLearner
from a3c.learn.optim import current_lr
from a3c.learn.policies.numpy_policy import CONVOLUTION_CHUNK
from a3c.learn.seeding import worker_seeds
from a3c.nets.actor_critic import ScaleFrames, convolutions
from a3c.parallel.processes import shared_model

from harness.launch import environment, print_table, save_json
from speed.atari_bench import ENV, env_alone


class Timers:
    """Seconds spent in each wrapped method, by phase."""

    def __init__(self):
        self.seconds = defaultdict(float)

    def wrap(self, owner, name: str, phase: str) -> None:
        method = getattr(owner, name)

        def timed(*args, **kwargs):
            began = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds[phase] += time.perf_counter() - began

        setattr(owner, name, timed)


def worker_breakdown(seconds: float) -> dict:
    """One worker's phases over `seconds` of Hogwild updates on its own (no other worker: no turns, no lag)."""
    torch.set_num_threads(1)
    config = Config.for_env(ENV, num_processes=1, eval_episodes=0)
    learner = ActorLearner(config, worker_seeds(config, 0, 0))
    model, optimizer = shared_model(config, learner.envs.spec)
    for name, norm in model.statistics().items():
        setattr(learner.model, name, norm)
    timers = Timers()
    timers.wrap(learner.envs.env, "step", "emulation")
    timers.wrap(learner.envs, "step", "batch")  # includes emulation: subtracted below
    timers.wrap(learner.policy, "act", "acting: forward")
    timers.wrap(learner.distribution, "sample", "acting: sampling")
    timers.wrap(learner.policy, "backward", "backward")
    env_steps, updates, began = 0, 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        started = time.perf_counter()
        learner.load_weights(optimizer.params[0])
        timers.seconds["weights hand-off"] += time.perf_counter() - started
        grad, report = learner.next_gradient()
        started = time.perf_counter()
        optimizer.step([grad], lr=current_lr(config, env_steps, time.perf_counter() - began))
        timers.seconds["optimizer step"] += time.perf_counter() - started
        env_steps += report.env_steps
        updates += 1
    total = time.perf_counter() - began
    phases = dict(timers.seconds)
    phases["batch's Python"] = phases.pop("batch") - phases["emulation"]
    phases["loss and the rest"] = total - sum(phases.values())
    return {"seconds": total, "env_steps": env_steps, "updates": updates, "phases": phases}


def nature_convs(channels: int) -> nn.Sequential:
    """The DQN Nature paper's convnet on 84 x 84 frames."""
    return nn.Sequential(
        nn.Conv2d(channels, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
        nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten(),
    )  # fmt: skip


# name: (the convolutions for a number of channels, the frames' side, the frames stacked)
CANDIDATES = {
    "A3C paper, 84 x 84 (the preset)": (lambda channels: convolutions(channels, 84, "a3c", False), 84, 4),
    "A3C paper, 84 x 84, one frame": (lambda channels: convolutions(channels, 84, "a3c", False), 84, 1),
    "Nature DQN, 84 x 84": (nature_convs, 84, 4),
    "4 x conv3 s2, 84 x 84 averaged to 42 (--convnet small)": (
        lambda channels: convolutions(channels, 84, "small", False),
        84,
        4,
    ),
}


def samples_per_second(model: nn.Module, frames: torch.Tensor, bfloat16: bool, backward: bool, seconds: float) -> float:
    """Samples/s of `model` on `frames`: forward alone, or forward plus backward in chunks of the trainer's
    update (CONVOLUTION_CHUNK); under bfloat16 autocast or not."""

    def once():
        for chunk in frames.split(CONVOLUTION_CHUNK if backward else len(frames)):
            with torch.set_grad_enabled(backward), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bfloat16):
                out = model(chunk)
            if backward:
                out.float().sum().backward()

    for _ in range(3):
        once()
    began, calls = time.perf_counter(), 0
    while time.perf_counter() - began < seconds:
        once()
        calls += 1
    return len(frames) * calls / (time.perf_counter() - began)


class EncoderAndCell(nn.Module):
    """A candidate convnet, a 256-wide layer and an LSTM cell of 256 from a zero state: a step's network."""

    def __init__(self, convs: nn.Sequential, side: int, channels: int):
        super().__init__()
        flat = convs(torch.zeros(1, channels, side, side)).shape[1]
        self.encoder = nn.Sequential(ScaleFrames(), convs, nn.Linear(flat, 256), nn.ReLU())
        self.cell = nn.LSTMCell(256, 256)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.cell(self.encoder(frames))[0]


def network_rates(seconds: float, batches: tuple[int, int]) -> list[dict]:
    """Samples/s of each candidate network, one thread: forward alone at the acting batch, forward plus
    backward at the update's (batches: the two sizes); float32 and bfloat16."""
    torch.set_num_threads(1)
    rows = []
    for name, (convs_of, side, channels) in CANDIDATES.items():
        model = EncoderAndCell(convs_of(channels), side, channels)
        params = sum(p.numel() for p in model.parameters())
        for bfloat16 in (False, True):
            act, learn = (torch.randint(0, 256, (batch, channels, side, side), dtype=torch.uint8) for batch in batches)
            rows.append({"network": name, "dtype": "bfloat16" if bfloat16 else "float32", "parameters": params,
                         "act": samples_per_second(model, act, bfloat16, False, seconds),
                         "learn": samples_per_second(model, learn, bfloat16, True, seconds)})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="of the worker's breakdown")
    parser.add_argument("--network-seconds", type=float, default=2.0, help="of each network measurement")
    args = parser.parse_args()
    info = environment()
    worker = worker_breakdown(args.seconds)
    rate = worker["env_steps"] / worker["seconds"]
    cores = os.cpu_count()
    alone = env_alone("vector", 10.0)
    print(
        f"\n{ENV}, the Atari preset, one worker on one core for {worker['seconds']:.0f} s: {rate:,.0f} env steps/s "
        f"({worker['updates']:,} updates); x {cores} cores: {rate * cores:,.0f}; ALE's vector env alone, "
        f"{cores} processes: {alone:,.0f}"
    )
    print_table(
        ["phase", "share", "us an env step"],
        [[phase, f"{seconds / worker['seconds']:.1%}", f"{1e6 * seconds / worker['env_steps']:,.0f}"]
         for phase, seconds in sorted(worker["phases"].items(), key=lambda item: -item[1])],
    )  # fmt: skip
    preset = Config.for_env(ENV)
    act, learn = preset.envs_per_process, preset.envs_per_process * preset.t_max  # a worker's envs; its rollout
    networks = network_rates(args.network_seconds, (act, learn))
    print(
        f"\nEach candidate encoder (convnet, 256 units, an LSTM cell of 256), one thread, samples/s (the update's "
        f"forward and backward in chunks of {CONVOLUTION_CHUNK}, as the trainer's):"
    )
    print_table(
        ["network", "dtype", "parameters", f"act (batch {act}, forward)", f"learn (batch {learn}, forward + backward)"],
        [[row["network"], row["dtype"], f"{row['parameters']:,}", f"{row['act']:,.0f}", f"{row['learn']:,.0f}"]
         for row in networks],
    )  # fmt: skip
    save_json("atari-phases", {**info, "env": ENV, "worker": worker, "env_alone": alone, "networks": networks,
                               "mkldnn": bool(torch.backends.mkldnn.is_available())})  # fmt: skip


if __name__ == "__main__":
    main()
