"""A figure over runs as every suite prints it: its median and its range, where a run that did not solve counts as
infinitely slow ("unsolved", None in JSON)."""

from __future__ import annotations

import math
import statistics


def spread(runs: list[dict], key: str) -> dict:
    """Median, min, max of a key over all runs, an unsolved run counting as infinite (None in JSON)."""
    values = sorted(run[key] if run["solved"] else math.inf for run in runs)
    stats = {"median": statistics.median(values), "min": values[0], "max": values[-1]}
    return {name: None if math.isinf(value) else value for name, value in stats.items()}


def show(value, fmt: str) -> str:
    return "unsolved" if value is None else format(value, fmt)


def show_spread(stats: dict, fmt: str) -> str:
    """A spread's median (min-max), "unsolved" where a value is."""
    return f"{show(stats['median'], fmt)} ({show(stats['min'], fmt)}-{show(stats['max'], fmt)})"


def solved_spread(runs: list[dict], key: str, fmt: str) -> str:
    """median (min-max) of a key over the runs, an unsolved run counting as infinitely slow."""
    return show_spread(spread(runs, key), fmt)


def median_range(values: list, fmt: str = ".2f", between: str = "-") -> str:
    """median (min`between`max) of the values that are there (None: not measured), "-" where none is."""
    values = [value for value in values if value is not None]
    if not values:
        return "-"
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}{between}{format(max(values), fmt)})"
