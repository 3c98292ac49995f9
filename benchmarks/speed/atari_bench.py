"""Atari throughput: env (agent) steps/s of the trainer on Pong at 8 processes, beside the environment alone.

Contenders, interleaved over --repeats in one invocation (the machine's speed drifts between sittings):
- this checkout with the Atari preset (ALE's vector env, the LSTM on 16 envs x t-max 20, centred frames, the
  newest frame only, the convolutions in bfloat16 where the CPU has it) on 8 processes;
- the preset on 4 and on 2 processes: what the processes beyond the cores cost or give;
- on 4 processes: the preset in float32 (what a CPU without bfloat16 gets), on four stacked frames (the
  preset of versions 0.18-0.22), with `--convnet small` (four 3 x 3 convolutions on frames averaged to
  42 x 42), with the novelty bonus (its networks' cost), and feed-forward on 16 envs x t-max 5 (the LSTM's cost);
- with --baseline DIR, another checkout run with its own preset (for example `git worktree add /tmp/old
  <commit>`: the code before ALE's vector env).
Each run trains for real through the CLI (no evaluator, no target); its rate is the steady state of
metrics.csv after the first quarter of the budget (start-up: ALE makes and seeds each env in about 0.8 s).
Beside them, the env alone with random actions, one process per core: gymnasium's Atari wrappers stepped
in a loop (the evaluator's env) and ALE's vector env (the workers'), 16 envs a process.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import numpy as np

from harness.launch import (
    REPO,
    environment,
    print_table,
    read_summary,
    run_timed,
    save_json,
    steady_rate,
    trainer_command,
)

ENV = "ALE/Pong-v5"
PROCESSES = 8
ENVS = 16
FRAMES_PER_STEP = 4  # the frame skip
WARMUP_FRACTION = 0.25


def train_rate(repo: Path, steps: int, **options) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        command = trainer_command(
            run_dir,
            repo,
            **{"env": ENV, "num_processes": PROCESSES, "max_steps": steps, "eval_episodes": 0, "target_return": "none",
               "log_interval": steps // 20, "print_interval": 3600, **options},
        )  # fmt: skip
        wall, output, _ = run_timed(command, timeout=600)
        if not (run_dir / "summary.json").exists():
            raise SystemExit(f"{repo}: the run failed:\n{output[-2000:]}")
        return {
            "steady": steady_rate(run_dir, WARMUP_FRACTION * steps),
            "process_seconds": round(wall, 1),
            "whole": read_summary(run_dir)["steps_per_second"],
        }


def random_steps(kind: str, seconds: float) -> int:
    """Agent steps of Pong with random actions in `seconds`, ENVS envs in one process: ALE's vector env
    (kind "vector") or gymnasium's wrappers in a loop."""
    from a3c.envs.make import make_atari, make_atari_vector

    rng = np.random.default_rng(0)
    if kind == "vector":
        vector_env = make_atari_vector(ENV, ENVS, training=True)
        vector_env.reset(seed=np.arange(ENVS))
        step_all, envs = (lambda: vector_env.step(rng.integers(0, 6, ENVS))), [vector_env]
    else:
        envs = [make_atari(ENV, training=True) for _ in range(ENVS)]
        for seed, env in enumerate(envs):
            env.reset(seed=seed)

        def step_all():
            for env in envs:
                _, _, terminated, truncated, _ = env.step(int(rng.integers(6)))
                if terminated or truncated:
                    env.reset()

    steps, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        step_all()
        steps += ENVS
    for env in envs:
        env.close()
    return steps


def env_alone(kind: str, seconds: float) -> float:
    """Total random-action steps/s of one process per core."""
    cores = os.cpu_count()
    with multiprocessing.get_context("spawn").Pool(cores) as pool:
        return sum(pool.starmap(random_steps, [(kind, seconds)] * cores)) / seconds


def contenders_of(baseline: Path | None, only: list[str] | None) -> dict[str, tuple[Path, dict]]:
    """The contenders by label: the checkout's code and its trainer options (--baseline adds another checkout,
    --only keeps the labels holding a text)."""
    four = {"num_processes": 4}
    contenders = {
        "this checkout, preset (one frame, the LSTM, 16 envs x t-max 20, bfloat16 where the CPU has it)": (REPO, {}),
        "this checkout, preset, 4 processes (two a core, as atari_learn.py runs it)": (REPO, four),
        "this checkout, preset, 2 processes (one a core, the default here)": (REPO, {"num_processes": 2}),
        "this checkout, preset, 4 processes, --precision float32 (a CPU without bfloat16)": (
            REPO,
            {**four, "precision": "float32"},
        ),
        "this checkout, preset, 4 processes, --frames 4 (versions 0.18-0.22)": (REPO, {**four, "frames": 4}),
        "this checkout, preset, 4 processes, --convnet small": (REPO, {**four, "convnet": "small"}),
        "this checkout, preset, 4 processes, --novelty-coef 0.1 (the novelty bonus's cost)": (
            REPO,
            {**four, "novelty_coef": 0.1},
        ),
        "this checkout, feed-forward, 16 envs x t-max 5, 4 processes": (
            REPO,
            {**four, "envs_per_process": 16, "t_max": 5, "core": "none"},
        ),
    }
    if baseline is not None:
        contenders[f"baseline {baseline}, its preset"] = (baseline, {})
    if only:
        contenders = {label: run for label, run in contenders.items() if any(text in label for text in only)}
    return contenders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=40_000, help="env steps a run (about a minute here)")
    parser.add_argument("--baseline", type=Path, help="another checkout of a3c, run with its own preset")
    parser.add_argument("--only", action="append", metavar="TEXT", help="the contenders whose name holds TEXT")
    parser.add_argument("--out", default="atari", help="results name")
    args = parser.parse_args()
    contenders = contenders_of(args.baseline, args.only)
    info = environment()
    runs = {label: [] for label in contenders}
    for _ in range(args.repeats):
        for label, (repo, options) in contenders.items():
            runs[label].append(train_rate(repo, args.steps, **options))
            print(f"  {label}: {runs[label][-1]['steady']:,.0f} steps/s", flush=True)
    alone = {"gymnasium wrappers, loop": env_alone("loop", 10.0), "ALE vector env": env_alone("vector", 10.0)}

    medians = {label: statistics.median(r["steady"] for r in rs) for label, rs in runs.items()}
    reference_label = list(contenders)[-1 if args.baseline is not None else 0]  # the baseline, or the preset
    reference = medians[reference_label]
    print(
        f"\n{ENV}, {PROCESSES} processes unless named, steady env steps/s, median of {args.repeats}; "
        f"{info['cores']} cores; frames/s = 4 x steps/s"
    )
    print_table(
        ["contender", "steps/s", "frames/s", f"x {reference_label.split(',')[0]}", "runs"],
        [
            [
                label,
                f"{rate:,.0f}",
                f"{rate * FRAMES_PER_STEP:,.0f}",
                f"{rate / reference:.2f}",
                " ".join(f"{r['steady']:,.0f}" for r in runs[label]),
            ]
            for label, rate in medians.items()
        ]
        + [
            [
                f"env alone: {label}, {ENVS} envs x {info['cores']} processes",
                f"{rate:,.0f}",
                f"{rate * FRAMES_PER_STEP:,.0f}",
                "",
                "",
            ]
            for label, rate in alone.items()
        ],
    )
    save_json(
        args.out,
        {
            **info,
            "env": ENV,
            "processes": PROCESSES,
            "steps": args.steps,
            "runs": runs,
            "medians": medians,
            "env_alone": alone,
        },
    )


if __name__ == "__main__":
    main()
