"""The results tables from run records (records.py): a row for each env and contender, its cells the median and
range over the runs of the contender's newest version. Pure functions: report.py lays them out."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from harness.records import Record

# The columns a suite's table may have, in order: a heading and how a row's cell is made (None: absent)
LEARNING = ("solved", "return", "env_steps", "minutes")
SPEED = ("steps_per_second", "ratio", "env_alone_steps_per_second")
FAULTS = ("ok", "seconds")
HEADINGS = {
    "solved": "solved",
    "return": "greedy return",
    "env_steps": "env steps",
    "minutes": "minutes",
    "steps_per_second": "env steps/s",
    "ratio": "x reference",
    "env_alone_steps_per_second": "env alone, steps/s",
    "ok": "as promised",
    "seconds": "seconds",
}


@dataclass(frozen=True)
class Row:
    env: str
    contender: str
    version: str
    runs: tuple[Record, ...]
    missing_seeds: tuple[int, ...]  # seeds other contenders of the env ran and this one did not


def version_key(version: str) -> tuple:
    """ "a3c 0.9.1" sorts before "a3c 0.10.0"."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


def rows(records: Iterable[Record]) -> list[Row]:
    """One row an env, contender and version (the newest first). A learning run's seed that the env's other
    rows ran and this one did not is said; a timing's repeats and a fault's tries are no seeds to compare."""
    by: dict[tuple[str, str, str], list[Record]] = {}
    for record in records:
        by.setdefault((record.env, record.contender, record.version), []).append(record)
    learning = {key for key, runs in by.items() if any(set(LEARNING) & run.final.keys() for run in runs)}
    seeds_of_env: dict[str, set[int]] = {}
    for key in learning:
        seeds_of_env.setdefault(key[0], set()).update(run.seed for run in by[key])
    found = []
    for (env, contender, version), runs in by.items():
        seeds = {run.seed for run in runs}
        missing = sorted(seeds_of_env[env] - seeds) if (env, contender, version) in learning else []
        found.append(Row(env, contender, version, tuple(sorted(runs, key=lambda run: run.seed)), tuple(missing)))
    return sorted(found, key=lambda row: (row.env, row.contender != "a3c", row.contender, newest_first(row.version)))


def newest_first(version: str) -> tuple:
    return tuple(-part for part in version_key(version))


def columns(table: list[Row]) -> list[str]:
    """The figures any run of the table has, in the order of LEARNING, SPEED and FAULTS."""
    present = {name for row in table for run in row.runs for name, value in run.final.items() if value is not None}
    return [name for name in (*LEARNING, *SPEED, *FAULTS) if name in present]


def spread(values: list[float], digits: int) -> str:
    """The median and, over several values, their range: "1,234 (1,000-1,500)"; "-" for none."""
    if not values:
        return "-"
    show = (lambda x: f"{x:,.{digits}f}") if digits else (lambda x: f"{round(x):,}")
    middle = show(statistics.median(values))
    between = " to " if min(values) < 0 else "-"  # "-98.5 to -79.8", not "-98.5--79.8"
    return middle if len(values) == 1 else f"{middle} ({show(min(values))}{between}{show(max(values))})"


def digits_for(values: list[float]) -> int:
    """Decimals that show a figure's size: none from 100 up, one from 1, two below."""
    largest = max((abs(value) for value in values), default=0.0)
    return 0 if largest >= 100 else 1 if largest >= 1 else 2


def cell(row: Row, name: str) -> str:
    """The row's figure `name`. Where a run was to solve, the env steps and minutes are those of its solved runs:
    an unsolved run's are its budget, not a time to solve."""
    runs = row.runs
    if name in ("solved", "ok"):
        told = [run.final[name] for run in runs if run.final.get(name) is not None]
        return f"{sum(told)}/{len(told)}" if told else "-"
    if name in ("env_steps", "minutes") and any(run.final.get("solved") is not None for run in runs):
        runs = tuple(run for run in runs if run.final.get("solved"))
    values = [float(run.final[name]) for run in runs if run.final.get(name) is not None]
    return spread(values, digits_for(values))


def seeds_cell(row: Row) -> str:
    """How many runs; the seeds missing against the env's other contenders, said rather than hidden."""
    said = str(len(row.runs))
    if row.missing_seeds:
        said += f" (seed {', '.join(map(str, row.missing_seeds))} missing)"
    return said


def table(records: list[Record]) -> list[str]:
    """A Markdown table: env, contender, runs, the figures the records have, the version."""
    found = rows(records)
    names = columns(found)
    lines = [
        "| env | contender | runs | " + " | ".join(HEADINGS[name] for name in names) + " | version |",
        "| --- | --- | --- | " + " | ".join("---" for _ in names) + " | --- |",
    ]
    for row in found:
        cells = [row.env, row.contender, seeds_cell(row), *(cell(row, name) for name in names), row.version]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
