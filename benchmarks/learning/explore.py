"""Exploration: rewards that random play almost never finds, with the novelty bonus and the NoisyNet heads on and
off, and entropy dithering instead.

    explore.py                                    # every task, 5 seeds
    explore.py --env a3c/DeepSea20-v0 --seeds 3   # one task
    explore.py --only defaults --only "no noise"  # two contenders
    explore.py --at-start                         # what the noise does to fresh networks, at each sigma
    explore.py --env MountainCar-v0 --timeout 120 # runs capped
    explore.py --pictures --only defaults --only "no novelty"   # the sparse tasks seen as pictures

The tasks: DeepSea at N = 10, 20 and 30 (a3c/envs/deep_sea.py: random play finds the corner in 2 of 2^N
episodes, and a policy that dithers step by step no more often), and MountainCar-v0, gymnasium's
classic sparse task (-1 a step until the car reaches the flag, which random actions almost never do
within the episode's 200 steps; the RL Zoo has A2C and PPO settings for it). Frozen Lake is left out:
its 8x8 map is found by random play in about 1 of 500 episodes, too often to tell exploration apart,
and the Zoo has no settings for it. With --pictures, the sparse tasks seen as pictures instead: DeepSea 20 drawn
as a grey 20 x 20 image (a3c/PixelDeepSea20-v0), and KeyDoor (a3c/envs/key_door.py: a key, a locked door and a
goal in a room drawn from above, channels last, the only reward at the goal) at 8 x 8, which random play finds in
about 6 episodes of 100, and 16 x 16, about 1 of 100; the RL Zoo has no settings for them, and SB3 PPO runs there
with its MiniGrid settings (grid worlds of keys, doors and goals seen from above). And Montezuma's
Revenge (ALE/MontezumaRevenge-v5, sticky actions), the hard-exploration game the novelty bonus was made for: an
hour a run (--max-minutes 60, 4 processes, the Atari preset, which names no bonus: "defaults" is without it,
`--novelty-coefs 0.1` adds the contender with it), 3 seeds, its greedy score at the end.

The contenders, side by side, interleaved by seed: ours with the trainer's defaults (on flat observations the
novelty bonus, --novelty-coef auto = 0.1, and normalised observations; on pictures a bonus of 0.03 divided by its
return's spread, learned by a value of its own; the NoisyNet heads on, sigma 0.017 a weight at the start, one
draw a rollout for all of a worker's envs), the defaults with `--no-noise`, without the novelty
bonus, and without both; the defaults with each other novelty bonus of --novelty-coefs, with and without the noise;
and, without the novelty bonus, the noise's variants: the larger starting sigmas of --sigmas, each with each
--noise-draw (one draw a rollout for all of a worker's envs, one a rollout for each env, one for each env held for
its episode), each of --kl-targets (the draws scaled to hold that KL from the mean policy: --noise-kl-target), and
`--no-noise` with a larger entropy bonus, each of --entropy-coefs (dithering; the best of them is the tuned one); on
MountainCar also SB3 A2C and PPO with the Zoo's settings, on the grid pictures SB3 PPO. Each run stops at the task's
target once new greedy episodes confirm it, or at 1M env steps (the trainer's default --max-steps), or at the task's
timeout. Reported per task and contender: seeds solved, env steps to the confirmed solve (median and range), the
final greedy return, and, as medians over the run's metrics.csv rows then over seeds, the policy's entropy and what
the noise did to it (noise_kl, noise_flips, noise_consistency, noise_share, noise_scale:
docs/reference/run-directory.md), and the novelty's error where a contender has its bonus. Each run writes its
record (harness/records.py, suite exploration) as it ends, through zoo.py's runs: ours as "a3c" (the defaults) or
"a3c, " and the contender's name ("no novelty" said "no novelty bonus"), SB3's as zoo.py names them.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import numpy as np
import torch

from a3c.config.settings import Config
from a3c.envs.key_door import key_door_registration
from a3c.learn.learner import ActorLearner
from a3c.learn.seeding import worker_seeds
from a3c.run.metrics import EXPLORATION_COLUMNS

from harness.launch import environment, print_table
from harness.spreads import show
from harness.trainer_runs import make_command
from learning import zoo
from learning.zoo import Suite, ours, report, sb3

TASKS = {
    "a3c/DeepSea10-v0": Suite(0.9, 5, 300.0, "exploration"),
    "a3c/DeepSea20-v0": Suite(0.9, 5, 600.0, "exploration"),
    "a3c/DeepSea30-v0": Suite(0.9, 5, 900.0, "exploration"),
    "MountainCar-v0": Suite(-110.0, 5, 1200.0, "exploration"),
}
PICTURES = {
    "a3c/PixelDeepSea20-v0": Suite(0.9, 5, 600.0, "exploration"),
    **{
        f"a3c/KeyDoor{size}-v0": Suite(key_door_registration(f"a3c/KeyDoor{size}-v0")["reward_threshold"], 5, 900.0,
                                       "exploration")
        for size in (8, 16)
    },
    "ALE/MontezumaRevenge-v5": Suite(None, 3, 4500.0, "exploration"),
}  # fmt: skip
TASK_OPTIONS = {"ALE/MontezumaRevenge-v5": {"num_processes": 4, "max_minutes": 60}}  # every contender's, there
COMMAND = make_command("bench-explore", "EXPLORE_ARGS", sys.argv[1:])
# the tasks with RL Zoo settings, and its algorithms there (the pictures: its MiniGrid PPO, learning/zoo_settings.py)
WITH_SB3 = {"MountainCar-v0": ("a2c", "ppo"), **{task: ("ppo",) for task in PICTURES if task.startswith("a3c/")}}
FIGURES = ("entropy", *EXPLORATION_COLUMNS)
DRAWS = {"worker": "", "env": ", a draw an env", "episode": ", a draw an env's episode"}  # --noise-draw


def table_name(name: str) -> str:
    """The results table's name of one of our contenders (harness/legacy/exploration.py's)."""
    return "a3c" if name == "defaults" else f"a3c, {name.replace('no novelty', 'no novelty bonus')}"


def contenders(env: str, kinds: dict[str, list[float]], only) -> dict:
    """`kinds`: the sigmas, entropy coefficients, KL targets and novelty coefficients beyond the defaults. The
    contenders that ask whether the noise or dithering explores by itself do without the novelty bonus."""
    off = {"novelty_coef": 0.0}
    options = {
        "defaults": {},
        "no noise": {"noise": False},
        "no novelty": off,
        "no novelty, no noise": {**off, "noise": False},
    }
    for coef in kinds["novelty_coefs"]:
        options[f"novelty {coef:g}"] = {"novelty_coef": coef}
        options[f"novelty {coef:g}, no noise"] = {"noise": False, "novelty_coef": coef}
    for target in kinds["kl_targets"]:
        options[f"no novelty, KL target {target:g}"] = {**off, "noise_kl_target": target}
    for sigma in kinds["sigmas"]:
        for draw, said in DRAWS.items():
            options[f"no novelty, sigma {sigma:g}{said}"] = {**off, "sigma_init": sigma, "noise_draw": draw}
    for coef in kinds["entropy_coefs"]:
        options[f"no novelty, no noise, entropy {coef:g}"] = {**off, "noise": False, "entropy_coef": coef}
    found = {
        name: lambda seed, suite, name=name, given=given: ours(
            env, seed, suite, table_name(name), **TASK_OPTIONS.get(env, {}), **given
        )
        for name, given in options.items()
    }
    for algo in WITH_SB3.get(env, ()):
        found[f"SB3 {algo.upper()} (Zoo)"] = lambda seed, suite, algo=algo: sb3(algo, env, seed, suite)
    return {name: run for name, run in found.items() if not only or name in only}


def run_task(env: str, suite: Suite, kinds: dict[str, list[float]], only: list[str] | None, first_seed: int) -> dict:
    runs_by = contenders(env, kinds, only)
    results = {name: [] for name in runs_by}
    for seed in range(first_seed, first_seed + suite.seeds):
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


def at_start(envs: list[str], sigmas: list[float], rollouts: int = 10) -> None:
    """What the noise does to a fresh network's policy: a worker's learner of the trainer's defaults plays
    `rollouts` rollouts (a draw each, learning nothing: no gradient is applied) at each starting sigma."""
    rows = []
    for env in envs:
        for sigma in sigmas:
            config = Config(env=env, sigma_init=sigma)
            torch.manual_seed(0)
            learner = ActorLearner(config, worker_seeds(config, rank=0))
            reports = [learner.compute_gradient()[1] for _ in range(rollouts)]
            rows.append([env, sigma, *(f"{np.mean([getattr(r, f) for r in reports]):.3g}" for f in FIGURES)])
    print_table(["task", "sigma at the start", *FIGURES], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", choices=[*TASKS, *PICTURES], help="one task; repeat for more")
    parser.add_argument("--pictures", action="store_true", help="the sparse tasks seen as pictures (default: flat)")
    parser.add_argument("--seeds", type=int, help="seeds per task (default 5)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed: a task's seeds over sittings")
    parser.add_argument(
        "--sigmas", default="0.1,0.5", help="the noise's initial sigmas of more noisy contenders, comma-separated"
    )
    parser.add_argument(
        "--entropy-coefs", default="0.03,0.1", help="the entropy bonuses of the dithering contenders, comma-separated"
    )
    parser.add_argument(
        "--kl-targets", default="0.05,0.2", help="the --noise-kl-target of more noisy contenders, comma-separated"
    )
    parser.add_argument(
        "--novelty-coefs",
        default="0.01,0.3",
        help="the --novelty-coef of contenders with another bonus than the default's (random network distillation), "
        "comma-separated",
    )
    parser.add_argument("--only", action="append", metavar="CONTENDER", help='e.g. "no noise"; repeat for more')
    parser.add_argument("--timeout", type=float, help="seconds a run may take (default: the task's)")
    parser.add_argument("--out", default="explore", help="results name")
    parser.add_argument("--at-start", action="store_true", help="only what the noise does to fresh networks")
    args = parser.parse_args()
    info = environment()
    kinds = {
        name: [float(value) for value in getattr(args, name).split(",") if value]
        for name in ("sigmas", "entropy_coefs", "kl_targets", "novelty_coefs")
    }
    listed = {**TASKS, **PICTURES}
    tasks = {
        env: replace(task, seeds=args.seeds or task.seeds, timeout=args.timeout or task.timeout)
        for env, task in listed.items()
        if env in (args.env or (PICTURES if args.pictures else TASKS))
    }
    if args.at_start:
        at_start(list(tasks), [Config().sigma_init, *kinds["sigmas"]])
        return
    zoo.COMMAND = COMMAND  # the command zoo.py's runs record: this one's
    results = {}
    for env, task in tasks.items():  # saved after each task: a long bench cut short keeps what it finished
        results[env] = run_task(env, task, kinds, args.only, args.first_seed)
        report(info, tasks, results, args.out, FIGURES)


if __name__ == "__main__":
    main()
