"""The Atari-5 suite (`make bench-atari-suite`): the five games whose scores predict the median over all 57
(benchmarks/harness/atari5.py), the one Atari preset, a wall-clock budget a run; beside it Stable-Baselines3 PPO
at the RL Zoo's Atari settings for the same minutes.

    atari_suite.py --minutes 60 --seeds 2                  # every game, both contenders, interleaved by seed
    atari_suite.py --game Qbert --seeds 1 --first-seed 2   # one more seed of one game, in another sitting
    atari_suite.py --only a3c --minutes 1 --seeds 1        # the plumbing, in minutes

Ours: `python main.py --env ALE/<Game>-v5 --num-processes 4 --max-minutes M --seed S`, the preset's evaluator
playing greedy games every 5 minutes and the trainer evaluating its final weights when the minutes are spent
(registered sticky actions, full action sets as ALE's v5 games have them). SB3's: sb3_atari.py, its greedy
games at the same cadence. A run's final score is the mean over the games of its last evaluations, taken from
the last back until FINAL_GAMES games are in (for ours: the final weights' 4 and the two evaluations before
them, the last ten minutes). Each run writes its record (suite atari-5) as it ends; `make report` gathers the
records of every sitting into the results page's table, each game's HNS and the Atari-5 estimate.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

from a3c.config.presets import preset_for

from harness.atari5 import GAMES, env_id
from harness.launch import PYTHON, REPO, run_timed, trainer_command
from harness.records import write
from harness.trainer_runs import learning_record, make_command, sb3_record
from learning.atari_runs import SB3_CONTENDER, ZOO_STEPS, greedy, measured, sb3_result

SUITE = "atari-5"
PROCESSES = 4  # as the Atari benchmarks': two a core
FINAL_GAMES = 10  # a final score is the mean over at least this many greedy games of the last evaluations
CONTENDERS = ("a3c", SB3_CONTENDER)
GRACE_SECONDS = 600  # past the budget: the final evaluation's games (ours), an evaluation under way (SB3's)
COMMAND = make_command("bench-atari-suite", "ATARI_SUITE_ARGS", sys.argv[1:])


def final_score(evaluations: list[dict]) -> tuple[float | None, int]:
    """The mean over the games of the last evaluations (not confirmations), from the last back until FINAL_GAMES
    games are in, and their count; None where there was no evaluation."""
    taken = []
    for row in reversed([row for row in evaluations if not row["confirmation"]]):
        taken.append(row)
        if sum(row["episodes"] for row in taken) >= FINAL_GAMES:
            break
    games = sum(row["episodes"] for row in taken)
    return (sum(row["return"] * row["episodes"] for row in taken) / games if games else None), games


def run_ours(game: str, seed: int, minutes: float, run_dir: Path) -> None:
    command = trainer_command(
        run_dir, env=env_id(game), num_processes=PROCESSES, max_minutes=minutes, seed=seed, print_interval=60
    )
    wall, _, _ = run_timed(command, 60 * minutes + GRACE_SECONDS)
    settings = {"num_processes": PROCESSES, "max_minutes": minutes}
    budget = {"env_steps": preset_for(env_id(game))["max_steps"], "minutes": minutes}
    write(
        learning_record(
            run_dir,
            launch_seconds=wall,
            replayed=final_score(greedy(run_dir, minutes + GRACE_SECONDS / 60)),
            suite=SUITE,
            contender="a3c",
            settings=settings,
            seed=seed,
            command=COMMAND,
            budget=budget,
        )
    )


def run_sb3(game: str, seed: int, minutes: float, run_dir: Path) -> None:
    command = [PYTHON, str(REPO / "benchmarks" / "learning" / "sb3_atari.py"), "--game", game, "--seed", str(seed)]
    wall, _, _ = run_timed(command + ["--minutes", str(minutes), "--run-dir", str(run_dir)], 60 * minutes + 300)
    run = measured(run_dir, minutes + 5)
    result, _ = sb3_result(run)
    result["final_eval"], episodes = final_score(run["greedy"])
    write(
        sb3_record(
            result,
            launch_seconds=wall,
            episodes=episodes,
            env=env_id(game),
            contender=SB3_CONTENDER,
            suite=SUITE,
            seed=seed,
            command=COMMAND,
            budget={"env_steps": ZOO_STEPS, "minutes": minutes},
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", action="append", choices=list(GAMES), help="one of the five; repeat for more")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed: a suite's seeds over sittings")
    parser.add_argument("--minutes", type=float, default=60.0, help="each run's wall-clock budget")
    parser.add_argument("--only", choices=CONTENDERS, help="one contender (default: both)")
    args = parser.parse_args()
    runners = {"a3c": run_ours, SB3_CONTENDER: run_sb3}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for game in args.game or GAMES:
            for name, run in runners.items():
                if args.only in (None, name):
                    with tempfile.TemporaryDirectory() as tmp:
                        run(game, seed, args.minutes, Path(tmp) / "run")
                    print(f"{game} seed {seed} {name}: done", flush=True)
    print("the table: make report (docs/results/index.md, Atari-5)")


if __name__ == "__main__":
    main()
