"""The metrics files: a resumed run's CSV written by an older version gets today's columns."""

from __future__ import annotations

import csv

from a3c.learn.distributions import NOISE_EFFECTS
from a3c.run.metrics import TRAIN_COLUMNS, CsvLog

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
