"""Exploration: rewards that random play almost never finds, with NoisyNet on, off, and entropy dithering instead.

    explore.py                                    # every task, 5 seeds
    explore.py --env a3c/DeepSea20-v0 --seeds 3   # one task
    explore.py --only noise --only "no noise"     # two contenders

The tasks: DeepSea at N = 10, 20 and 30 (a3c/envs/deep_sea.py: random play finds the corner in 2 of 2^N
episodes, and a policy that dithers step by step no more often), and MountainCar-v0, gymnasium's
classic sparse task (-1 a step until the car reaches the flag, which random actions almost never do
within the episode's 200 steps; the RL Zoo has A2C and PPO settings for it). Frozen Lake is left out:
its 8x8 map is found by random play in about 1 of 500 episodes, too often to tell exploration apart,
and the Zoo has no settings for it.

The contenders, side by side, interleaved by seed: ours with the trainer's defaults (the NoisyNet heads on),
`--no-noise` (its entropy bonus the default 0.01), and `--no-noise` with a larger bonus, each of
--entropy-coefs (dithering; the best of them is the tuned one); on MountainCar also SB3 A2C and PPO with the
Zoo's settings. Each run stops at the task's target once new greedy episodes confirm it, or at 1M env steps
(the trainer's default --max-steps), or at the task's timeout. Reported per task and contender: seeds solved,
env steps to the confirmed solve (median and range), the final greedy return, and, as medians over the run's
metrics.csv rows then over seeds, the policy's entropy and what the noise did to it (noise_kl, noise_flips,
noise_consistency: docs/reference/run-directory.md).
"""

from __future__ import annotations

import argparse
import math

from common import environment
from solve import show
from zoo import Suite, ours, report, sb3

from a3c.learn.distributions import NOISE_EFFECTS

TASKS = {
    "a3c/DeepSea10-v0": Suite(0.9, 5, 300.0),
    "a3c/DeepSea20-v0": Suite(0.9, 5, 600.0),
    "a3c/DeepSea30-v0": Suite(0.9, 5, 900.0),
    "MountainCar-v0": Suite(-110.0, 5, 1200.0),
}
WITH_SB3 = {"MountainCar-v0"}  # the tasks the RL Zoo has settings for
FIGURES = ("entropy", *NOISE_EFFECTS)


def contenders(env: str, entropy_coefs: list[float], only: list[str] | None) -> dict:
    found = {
        "noise": lambda seed, suite: ours(env, seed, suite),
        "no noise": lambda seed, suite: ours(env, seed, suite, noise=False),
    }
    for coef in entropy_coefs:
        found[f"no noise, entropy {coef:g}"] = lambda seed, suite, coef=coef: ours(
            env, seed, suite, noise=False, entropy_coef=coef
        )
    if env in WITH_SB3:
        found["SB3 A2C (Zoo)"] = lambda seed, suite: sb3("a2c", env, seed, suite)
        found["SB3 PPO (Zoo)"] = lambda seed, suite: sb3("ppo", env, seed, suite)
    return {name: run for name, run in found.items() if not only or name in only}


def run_task(env: str, suite: Suite, entropy_coefs: list[float], only: list[str] | None) -> dict:
    runs_by = contenders(env, entropy_coefs, only)
    results = {name: [] for name in runs_by}
    for seed in range(suite.seeds):
        for name, contender in runs_by.items():
            run = {"seed": seed, **contender(seed, suite)}
            results[name].append(run)
            print(
                f"  {env} seed {seed} {name}: {'solved' if run['solved'] else 'NOT solved'}, "
                f"{show(run['env_steps'], ',')} env steps, final eval {run['final_eval']:.2f}, "
                + ", ".join(f"{figure} {run.get(figure, math.nan):.3g}" for figure in FIGURES),
                flush=True,
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", choices=list(TASKS), help="one task; repeat for more")
    parser.add_argument("--seeds", type=int, help="seeds per task (default 5)")
    parser.add_argument(
        "--entropy-coefs", default="0.03,0.1", help="the entropy bonuses of the dithering contenders, comma-separated"
    )
    parser.add_argument("--only", action="append", metavar="CONTENDER", help='e.g. "no noise"; repeat for more')
    parser.add_argument("--out", default="explore", help="results name")
    args = parser.parse_args()
    info = environment()
    coefs = [float(coef) for coef in args.entropy_coefs.split(",") if coef]
    tasks = {
        env: Suite(task.target, args.seeds or task.seeds, task.timeout)
        for env, task in TASKS.items()
        if env in (args.env or TASKS)
    }
    results = {}
    for env, task in tasks.items():  # saved after each task: a long bench cut short keeps what it finished
        results[env] = run_task(env, task, coefs, args.only)
        report(info, tasks, results, args.out, FIGURES)


if __name__ == "__main__":
    main()
