"""Where the first seconds of a run go: the phase timings of summary.json, median of several launches.

    startup.py                          # CartPole's preset and Atari Breakout, 5 launches each
    startup.py --baseline /tmp/old      # and another checkout's, interleaved (git worktree add /tmp/old <commit>)

Each launch is the mission's command (`--num-processes 8`), timed as a whole from launch to exit
beside `python -c "import torch"`, the floor of any run here. CartPole runs to its confirmed solve;
Breakout for a budget of env steps that covers the first updates (its preset evaluates every 300 s,
so its first evaluation is not reached). The launches of all contenders alternate, so a machine that
slows down meanwhile slows them alike. A checkout that writes no phases shows its whole-process time only.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

from harness.launch import PYTHON, REPO, environment, print_table, read_summary, run_timed, save_json, trainer_command
from harness.spreads import median_range

PHASES = ("processes_started", "first_env_step", "first_update", "first_evaluation", "stop_to_exit")
ATARI_GAME = "ALE/Breakout-v5"
ATARI_STEPS = 10_000  # 8 processes x 16 envs x t-max 20: about 4 rounds of updates, after every worker has started
TIMEOUT = 180.0


def torch_import() -> dict:
    return {"wall_seconds": run_timed([PYTHON, "-c", "import torch"], TIMEOUT)[0]}


def launch(repo: Path, env: str, seed: int, **options) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        wall, _, _ = run_timed(trainer_command(run_dir, repo, env=env, num_processes=8, seed=seed, **options), TIMEOUT)
        summary = read_summary(run_dir)
    return {"wall_seconds": wall, **summary.get("phases", {}), "solved": summary.get("solved")}


def contenders(baseline: Path | None, atari: bool) -> dict:
    """name -> function(seed) -> one launch's figures."""
    checkouts = {"ours": REPO} | ({"baseline": baseline} if baseline else {})
    runs = {"import torch": lambda seed: torch_import()}
    for name, repo in checkouts.items():
        runs[f"CartPole {name}"] = lambda seed, repo=repo: launch(repo, "CartPole-v1", seed)
    if atari:
        for name, repo in checkouts.items():
            runs[f"Breakout {name}"] = lambda seed, repo=repo: launch(repo, ATARI_GAME, seed, max_steps=ATARI_STEPS)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout, launched in turn with ours")
    parser.add_argument("--no-atari", action="store_true", help="CartPole only")
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # compiled modules are cached, as on a user's machine
    atari = not args.no_atari and importlib.util.find_spec("ale_py") is not None
    if not args.no_atari and not atari:
        print("Breakout left out: pip install -r requirements-atari.txt")
    runs = contenders(args.baseline, atari)
    results = {name: [] for name in runs}
    for seed in range(args.launches):
        for name, run in runs.items():
            results[name].append(run(seed))
            print(f"launch {seed + 1}/{args.launches}: {name}: {results[name][-1]['wall_seconds']:.2f} s", flush=True)

    print("\nseconds from launch, median (range) of", args.launches, "launches; stop_to_exit from the stop")
    rows = [
        [name] + [median_range([r.get(p) for r in launches]) for p in (*PHASES, "wall_seconds")]
        for name, launches in results.items()
    ]
    print_table(["", *PHASES, "launch to exit"], rows)
    save_json(
        "startup",
        {
            "environment": environment(),
            "launches": args.launches,
            "baseline": str(args.baseline) if args.baseline else None,
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
