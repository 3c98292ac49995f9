"""The results schema: one JSON file a run, whatever the suite, and the one reader and writer of those files.

A run's record says what ran (the suite, the env, the contender and its settings, the contender's software
and version, the commit, the seed), where (the date, the machine's cores and CPU features), for how long
(the budget), how it learned (the curve of greedy evaluations: env steps, seconds, mean return), how it
ended (the final figures, the stop reason) and the command that makes it again. `make report`
(harness/report.py) builds the results page from these files alone.

    benchmarks/results/records/<suite>/<env>--<contender>--<version>--seed<N>.json
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

SCHEMA = 1
RUNS = Path(__file__).resolve().parent.parent / "results" / "records"
# The suites, in the page's order, with their headings
SUITES = {
    "classic-control": "Classic control",
    "box2d": "Box2D",
    "mujoco": "MuJoCo",
    "minatar": "MinAtar",
    "atari": "Atari",
    "atari-5": "Atari-5",
    "exploration": "Exploration (sparse rewards)",
    "throughput": "Throughput",
    "clusters": "Clusters",
    "faults": "Faults",
}
# The final figures a record may hold, with their types (any may be missing: what the suite measures)
FINAL = {
    "solved": bool,  # reached the target and held it on new episodes (a confirmed solve)
    "return": float,  # the greedy return at the end: a mean over `return_episodes` new episodes
    "return_episodes": int,
    "env_steps": int,  # to the solve where solved, else to the end
    "minutes": float,  # wall-clock from launch, to the solve where solved, else to the end
    "steps_per_second": float,  # the steady training rate
    "env_alone_steps_per_second": float,  # the env stepped alone on the same cores, the rate's ceiling
    "ratio": float,  # the rate against the suite's reference contender, measured side by side
    "ok": bool,  # a fault's try: the run recovered as promised
    "seconds": float,  # a fault's try: from the fault to the recovery (or a stop's to the exit)
}


OPTIONAL = {"curve", "settings", "stop_reason", "commit", "source"}


class RecordError(ValueError):
    """A results file that does not follow the schema; the message names the file and the field."""


@dataclass(frozen=True)
class Record:
    suite: str
    env: str
    contender: str  # as the table names it: "a3c", "a3c, 2 node groups (LAN)", "SB3 PPO (RL Zoo settings)"
    seed: int
    version: str  # the contender's software and version: "a3c 0.26.0", "stable-baselines3 2.9.0"
    command: str  # the command that makes this run again
    date: str  # ISO 8601, when the run started
    machine: dict  # cores, and cpu: its model and vector flags (harness/trainer_runs.py's cpu_features)
    budget: dict  # env_steps and/or minutes the run was given
    final: dict  # of FINAL's keys
    curve: list = field(default_factory=list)  # greedy evaluations: [env_steps, seconds, mean return]
    settings: dict = field(default_factory=dict)  # the contender's options that differ from its defaults
    stop_reason: str = ""
    commit: str = ""
    source: str = ""  # a record converted from an older results file: that file, under benchmarks/results/
    schema: int = SCHEMA

    def file_name(self) -> str:
        return f"{slug(self.env)}--{slug(self.contender)}--{slug(self.version)}--seed{self.seed}.json"


def slug(text: str) -> str:
    """A file-name part: lower case, runs of anything else than letters, digits and dots made one dash."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def validate(data: dict, where: str) -> Record:
    """The record of `data`, or a RecordError naming `where` and what is wrong."""
    if not isinstance(data, dict):
        raise RecordError(f"{where}: not a JSON object")
    if data.get("schema") != SCHEMA:
        raise RecordError(f"{where}: schema {data.get('schema')!r}, this reader knows {SCHEMA}")
    names = {item.name for item in fields(Record)}
    required = names - OPTIONAL
    missing, unknown = sorted(required - data.keys()), sorted(data.keys() - names)
    if missing or unknown:
        raise RecordError(f"{where}: missing {missing}, unknown {unknown}")
    if data["suite"] not in SUITES:
        raise RecordError(f"{where}: suite {data['suite']!r} is none of {', '.join(SUITES)}")
    for name, value in data["final"].items():
        kind = FINAL.get(name)
        if kind is None:
            raise RecordError(f"{where}: final figure {name!r} is none of {', '.join(FINAL)}")
        if not (value is None or isinstance(value, kind) or (kind is float and isinstance(value, int))):
            raise RecordError(f"{where}: final {name} is {value!r}, not a {kind.__name__}")
    for point in data.get("curve", []):
        if len(point) != 3:
            raise RecordError(f"{where}: a curve point is [env_steps, seconds, return], got {point!r}")
    return Record(**data)


def write(record: Record, runs: Path = RUNS) -> Path:
    """The record's file under runs/<suite>/, replacing one of the same env, contender, version and seed."""
    validate(asdict(record), record.file_name())
    path = runs / record.suite / record.file_name()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(record), indent=1) + "\n")
    return path


def read_all(runs: Path = RUNS) -> list[Record]:
    """Every record under `runs`, checked."""
    return [validate(json.loads(path.read_text()), str(path)) for path in sorted(runs.glob("*/*.json"))]
