"""The Atari and MinAtar learning suites' old results files as run records (harness/records.py).

Only the files the 0.26 results page (now docs/results/history.md) presented as the current figures are converted:

- atari: the preset (one frame, since version 0.23) for an hour on Pong (seeds 1-3) and Breakout (seed 1), and
  Stable-Baselines3 PPO at the RL Zoo's Atari settings for the same hour on each (seed 1);
- minatar: the preset against SB3 PPO at equal wall-clock (minatar.json, version 0.4.0: the only measurement
  against SB3), and the newest preset's MinAtar Breakout beside 0.14.0's (minatar-0.20-vs-0.14.json).

The four-frame and float32 presets' hours, and the experiments that chose a setting (centred frames, acting
batches, the LSTM against feed-forward, bfloat16, replay, the entropy bonus, the lr's budget), stay in the
history. The Atari throughput files are the throughput converter's.

    cd benchmarks && ../.venv/bin/python -m harness.legacy.games
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from harness.records import Record, write

RESULTS = Path(__file__).resolve().parents[2] / "results"

ATARI_COMMAND = (
    "make bench-atari-learn ATARI_LEARN_ARGS='--game {game} --seeds 1 --first-seed {seed} --minutes 60 "
    '--setting "{setting}" --out {out}\''
)
PRESET_SETTING = "frames-1:--eval-episodes 4 --frames 1"  # the preset's own options since 0.23
SB3_SETTING = "sb3-ppo-zoo:"
# The trainer's version of each hour (the files record none): the page's sections state them
ATARI_FILES = {
    "atari_learn-pong-frames1-seed1.json": "a3c 0.22.0",
    "atari_learn-pong-frames1-seed2.json": "a3c 0.23.0",
    "atari_learn-pong-frames1-seed3.json": "a3c 0.23.0",
    "atari_learn-breakout-frames1-seed1.json": "a3c 0.23.1",
    "atari_learn-pong-sb3-ppo-seed1.json": None,  # SB3's version is in the file
    "atari_learn-breakout-sb3-ppo-seed1.json": None,
}
TARGET_ENVS = {"ALE/Pong-v5"}  # the games with a target (a3c.config.presets.ATARI_TARGETS: Pong's +18)
ATARI_STEPS = 20_000_000  # the Atari preset's max_steps, where its lr reaches 0
ZOO_STEPS = 10_000_000  # sb3_atari.py's total_timesteps, the horizon of the Zoo's schedules

# Each MinAtar file: the command as the page gives it, and the version of each of the trainer's settings
MINATAR_FILES = {
    "minatar.json": ("make bench-minatar", {"ours (preset)": "a3c 0.4.0"}),
    "minatar-0.20-vs-0.14.json": (
        'make bench-minatar MINATAR_ARGS="--game Breakout --seeds 3 --minutes 2 --no-sb3 '
        '--baseline <a checkout of 0.14.0> --out minatar-0.20-vs-0.14"',
        {"ours (preset)": "a3c 0.20.1", "ours (preset), /tmp/base014": "a3c 0.14.0"},
    ),
}
MINATAR_STEPS = 5_000_000  # the MinAtar preset's max_steps, in every version converted
MINATAR_FINAL_EPISODES = 10  # minatar_bench.py's final greedy games, for both contenders
SB3_ATARI = "SB3 PPO (RL Zoo settings)"
# sb3_minatar.py: CleanRL's ppo_atari settings scaled to 8 envs, on our MinAtar convnet (no Zoo entry)
SB3_MINATAR = "SB3 PPO (CleanRL Atari settings)"


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def machine(data: dict) -> dict:
    return {"cores": data["cores"], "cpu": data.get("cpu", {})}


def sb3_version(data: dict) -> str:
    return f"stable-baselines3 {data['versions']['stable-baselines3']}"


def atari_final(run: dict, env: str, minutes: float) -> dict:
    """The last greedy games (an evaluation of 4, or the 30-game confirmation that stopped a solved run); the
    env steps and minutes to the solve, else the last env steps the file counts and the budget, where the
    benchmark stopped the run."""
    last, outcome = run["greedy"][-1], run["outcome"]
    final = {"return": last["return"], "return_episodes": last["episodes"]}
    if env in TARGET_ENVS and outcome["solved"] is not None:  # SB3's runs confirm nothing: None
        final["solved"] = outcome["solved"]
    if outcome["solved"]:
        return final | {
            "env_steps": outcome["solved_env_steps"],
            "minutes": round(outcome["solved_wall_seconds"] / 60, 3),
        }
    steps = max(row["env_steps"] for row in run["train"] + run["greedy"])
    return final | {"env_steps": steps, "minutes": minutes}


def atari_records(name: str, a3c_version: str | None) -> list[Record]:
    data = load(name)
    sb3 = a3c_version is None
    game = data["env"].split("/")[1].split("-")[0]
    return [
        Record(
            suite="atari",
            env=data["env"],
            contender=SB3_ATARI if sb3 else "a3c",
            seed=int(seed),
            version=sb3_version(data) if sb3 else a3c_version,
            command=ATARI_COMMAND.format(
                game=game, seed=seed, setting=SB3_SETTING if sb3 else PRESET_SETTING, out=name.removesuffix(".json")
            ),
            date=data["date"],
            machine=machine(data),
            budget={"env_steps": ZOO_STEPS if sb3 else ATARI_STEPS, "minutes": data["minutes"]},
            final=atari_final(run, data["env"], data["minutes"]),
            # the evaluations; a confirmation replays the same policy on 30 new games, and is no curve point
            curve=[
                [row["env_steps"], round(60 * row["minutes"], 3), row["return"]]
                for row in run["greedy"]
                if not row["confirmation"]
            ],
            # atari_learn.py runs ours on 4 processes (2 on this machine's 2 cores without it)
            settings={} if sb3 else {"num_processes": 4},
            source=name,
        )
        for seed, run in data["runs"].items()
    ]


def minatar_record(data: dict, game: str, run: dict, version: str | None, command: str, source: str) -> Record:
    """One run: its final greedy return over 10 new episodes after the budget (ours: last.pt played by
    `evaluate`; SB3: the final policy), its env steps, and the budget's minutes, where it was stopped."""
    ours = version is not None
    return Record(
        suite="minatar",
        env=f"MinAtar/{game}-v1",
        contender="a3c" if ours else SB3_MINATAR,
        seed=run["seed"],
        version=version or sb3_version(data),
        command=command,
        date=data["date"],
        machine=machine(data),
        budget={"env_steps": MINATAR_STEPS, "minutes": data["minutes"]} if ours else {"minutes": data["minutes"]},
        final={
            "return": run["final_return"],
            "return_episodes": MINATAR_FINAL_EPISODES,
            "env_steps": run["env_steps"],
            "minutes": data["minutes"],
        },
        curve=[list(point) for point in run["curve"]],  # evaluations of 5 episodes every 30 s
        settings={"num_processes": 8} if ours else {},  # minatar_bench.py runs ours on 8 processes
        source=source,
    )


def minatar_records(name: str, command: str, versions: dict[str, str]) -> list[Record]:
    data = load(name)
    return [
        minatar_record(data, game, run, None if setting == "SB3 PPO" else versions[setting], command, name)
        for game, contenders in data["results"].items()
        for setting, runs in contenders.items()
        for run in runs
    ]


def convert() -> list[Record]:
    atari = [record for name, version in ATARI_FILES.items() for record in atari_records(name, version)]
    minatar = [
        record
        for name, (command, versions) in MINATAR_FILES.items()
        for record in minatar_records(name, command, versions)
    ]
    return atari + minatar


if __name__ == "__main__":
    records = convert()
    for record in records:
        write(record)
    for suite, count in Counter(record.suite for record in records).items():
        print(f"{suite}: {count} records")
