"""The metrics files: a resumed run's CSV written by an older version gets today's columns."""

from __future__ import annotations

import csv
import math

from a3c.learn.distributions import NOISE_EFFECTS
from a3c.learn.optim import budget_used
from a3c.run.console import Console
from a3c.run.metrics import TRAIN_COLUMNS, CsvLog, MetricsSettings, MetricsWriter, format_duration, time_left

# metrics.csv of version 0.1, before the learner's columns and the noise's
OLD_COLUMNS = [name for name in TRAIN_COLUMNS if name not in NOISE_EFFECTS][:12]


def rows_of(path) -> tuple[list[str], list[dict]]:
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        return list(reader.fieldnames), list(reader)


def test_an_older_metrics_file_gets_the_new_columns_and_keeps_its_rows(tmp_path):
    path = tmp_path / "metrics.csv"
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=OLD_COLUMNS)
        writer.writeheader()
        writer.writerow({name: index for index, name in enumerate(OLD_COLUMNS)})
    log = CsvLog(path, TRAIN_COLUMNS)
    log.write(dict.fromkeys(TRAIN_COLUMNS, 7))
    log.close()
    columns, rows = rows_of(path)
    assert columns == TRAIN_COLUMNS and len(rows) == 2
    assert [rows[0][name] for name in OLD_COLUMNS] == [str(i) for i in range(len(OLD_COLUMNS))]
    assert rows[0]["policy_lag"] == "" and rows[1]["policy_lag"] == "7"


def test_a_current_metrics_file_is_appended_to_as_it_is(tmp_path):
    path = tmp_path / "metrics.csv"
    for value in (1, 2):
        log = CsvLog(path, TRAIN_COLUMNS)
        log.write(dict.fromkeys(TRAIN_COLUMNS, value))
        log.close()
    columns, rows = rows_of(path)
    assert columns == TRAIN_COLUMNS and [row["env_steps"] for row in rows] == ["1", "2"]


def progress_line(tmp_path, env_steps: int, seconds: float, max_steps: int, max_minutes: float = 0.0) -> str:
    """The progress line a writer prints `seconds` into a run at `env_steps`, with this budget."""
    lines = []
    settings = MetricsSettings(
        tmp_path,
        1000,
        1.0,
        lambda steps, elapsed: budget_used(steps, max_steps, elapsed, max_minutes),
        lambda steps, elapsed: 0.0,
    )
    writer = MetricsWriter(settings, 100.0, Console(lambda line, **kwargs: lines.append(line), live=False))
    writer.env_steps = env_steps
    writer.print_progress(now=100.0 + seconds)
    writer.close()
    return lines[-1]


def test_the_progress_line_says_the_share_of_the_budget_spent_and_the_time_left_in_a_log_too(tmp_path):
    # a quarter of --max-steps in 10 minutes: 30 more at that pace
    assert progress_line(tmp_path, 250_000, 600.0, 1_000_000).endswith("| 25% of the budget, 30m00s left")
    # --max-minutes 60 further along than the steps: its own clock, exactly
    assert progress_line(tmp_path, 10_000, 1800.0, 1_000_000, 60.0).endswith("| 50% of the budget, 30m00s left")
    assert progress_line(tmp_path, 0, 1.0, 1_000_000).endswith("| 0% of the budget, - left")


def test_durations_read_as_hours_minutes_or_seconds():
    assert [format_duration(s) for s in (7500.0, 440.0, 45.2, math.inf)] == ["2h05m", "7m20s", "45s", "-"]
    assert time_left(0.5, 100.0) == 100.0 and time_left(1.2, 100.0) == 0.0 and time_left(0.0, 5.0) == math.inf
