"""The network diagnostics of checkpoints (a3c/tools/diagnostics.py), one row each, on the policy's own play.

    diagnose.py runs/<run>/checkpoints/last.pt runs/<run>/checkpoints/best.pt
    diagnose.py --every 1 --run "--env Acrobot-v1 --core lstm --max-steps 60000 --seed 0"

Each checkpoint's stock network plays --envs of its env for --steps steps, sampling its (noise-free)
policy, and the diagnostics are taken over those observations, the recurrent state restarted where
an episode began: the share of LSTM gate pre-activations beyond +-3, mean |c|, the share of |h|
above 0.95, the features' rms, the logits' spread over the batch and NoisyNet's noise against it,
and the policy's mean entropy. With --run, a training run of main.py with those options whose
last.pt is copied every --every seconds, then diagnosed copy by copy: how the network's scale moves
while it learns.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import gymnasium as gym
import numpy as np
import torch

from a3c.agent import model_from_checkpoint
from a3c.learn.checkpoint import load_checkpoint
from a3c.tools.diagnostics import COLUMNS, network_diagnostics

from harness.launch import PYTHON, REPO, print_table


@torch.no_grad()
def diagnose(path: Path, envs: int, steps: int, seed: int) -> dict:
    payload = load_checkpoint(path)
    model, config, _ = model_from_checkpoint(payload)
    model.eval()
    vector_env = gym.make_vec(config.env, envs)
    obs, _ = vector_env.reset(seed=seed)
    state, starting = model.initial_state(envs), np.ones(envs, dtype=bool)
    generator = torch.Generator().manual_seed(seed)
    seen, starts, entropies = [], [], []
    for _ in range(steps):
        seen.append(obs)
        starts.append(starting)
        keep = torch.from_numpy(~starting).unsqueeze(1).float()
        state = tuple(part * keep for part in state)
        head, _, state = model(model.normalize(torch.as_tensor(obs, dtype=torch.float32)), state)
        probs = torch.softmax(head, dim=-1)
        entropies.append(-(probs * probs.clamp_min(1e-12).log()).sum(-1).mean().item())
        obs, _, terminated, truncated, _ = vector_env.step(
            torch.multinomial(probs, 1, generator=generator)[:, 0].numpy()
        )
        starting = terminated | truncated
    vector_env.close()
    found = network_diagnostics(
        model, torch.as_tensor(np.stack(seen), dtype=torch.float32), torch.from_numpy(np.stack(starts)), generator
    )
    return {"env_steps": payload["env_steps"], **found, "entropy": float(np.mean(entropies))}


def copies_of_a_run(options: str, every: float, folder: Path) -> list[Path]:
    """Train with `options`, copying last.pt every `every` seconds; the copies, in order."""
    run_dir = folder / "run"
    process = subprocess.Popen(
        [
            PYTHON,
            str(REPO / "main.py"),
            "--run-dir",
            str(run_dir),
            "--no-tensorboard",
            "--checkpoint-interval",
            str(every),
            *shlex.split(options),
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
    )
    copies = []
    while process.poll() is None:
        time.sleep(every)
        last = run_dir / "checkpoints" / "last.pt"
        if last.exists():
            copies.append(folder / f"{len(copies):04d}.pt")
            shutil.copy(last, copies[-1])
    return copies


def add_checkpoint_options(parser: argparse.ArgumentParser, every: float) -> None:
    """The checkpoints to read: named ones, and with --run the copies of a run trained for it."""
    parser.add_argument("checkpoints", nargs="*", type=Path)
    parser.add_argument("--run", metavar="OPTIONS", help="train with these main.py options and read its copies")
    parser.add_argument("--every", type=float, default=every, help="seconds between copies of last.pt (--run)")


@contextmanager
def checkpoints_given(args: argparse.Namespace) -> Iterator[list[Path]]:
    """The checkpoints of add_checkpoint_options' arguments: the named ones, then the run's copies (trained
    first), which last as long as the context."""
    with tempfile.TemporaryDirectory() as tmp:
        yield args.checkpoints + (copies_of_a_run(args.run, args.every, Path(tmp)) if args.run else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_checkpoint_options(parser, every=1.0)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=123)
    args = parser.parse_args()
    with checkpoints_given(args) as paths:
        rows, seen = [], set()
        for path in paths:
            found = diagnose(path, args.envs, args.steps, args.seed)
            if found["env_steps"] not in seen:  # a copy taken before the next write repeats the last
                seen.add(found["env_steps"])
                rows.append([f"{found['env_steps']:,}"] + [f"{found[key]:.3f}" for key in [*COLUMNS, "entropy"]])
    print_table(["env steps", *COLUMNS, "entropy"], rows)


if __name__ == "__main__":
    main()
