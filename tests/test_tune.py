"""a3c tune: the learning area it scores trials by, its search space, and a real study on CartPole."""

from __future__ import annotations

import csv
import json
import time

import pytest

from a3c.errors import ConfigError
from a3c.tune.objective import TrialReporter, learning_area
from a3c.tune.space import DEFAULT_SPACE, load_space

from .conftest import assert_one_line_usage_error, run_cli, start_cli


def test_learning_area_holds_each_evaluation_until_the_next():
    # 10 from 0 to 200 (the first evaluation also before it), 30 from 200 to 1000
    assert learning_area([(100, 10.0), (200, 30.0)], until=1000, budget=1000, target=None) == pytest.approx(
        (10 * 200 + 30 * 800) / 1000
    )


def test_learning_area_counts_a_lucky_evaluation_only_for_its_span_and_caps_it_at_the_target():
    lucky = learning_area([(0, 10.0), (100, 900.0), (200, 10.0)], until=1000, budget=1000, target=500.0)
    assert lucky == pytest.approx((10 * 100 + 500 * 100 + 10 * 800) / 1000)


def test_learning_area_counts_the_target_from_a_confirmed_solve_on():
    # an evaluation after the solve (the confirmation's own row, a later dip) no longer counts
    area = learning_area([(0, 20.0), (300, 480.0), (400, 100.0)], until=1000, budget=1000, target=500.0, solved_at=300)
    assert area == pytest.approx((20 * 300 + 500 * 700) / 1000)
    assert area > learning_area([(0, 20.0), (600, 480.0)], 1000, 1000, 500.0, solved_at=600)  # sooner scores more


def test_a_partial_area_is_the_share_of_the_whole_so_far():
    evaluations = [(0, 20.0), (300, 100.0)]
    assert learning_area(evaluations, until=500, budget=1000, target=None) == pytest.approx(
        (20 * 300 + 100 * 200) / 1000
    )
    assert learning_area([], until=500, budget=1000, target=None) == 0.0


class RecordingTrial:
    """What TrialReporter needs of an Optuna trial: report(value, step), should_prune()."""

    def __init__(self):
        self.reports = []

    def report(self, value, step):
        self.reports.append((step, value))

    def should_prune(self):
        return False


def test_the_pruner_sees_the_mean_return_so_far_a_level_that_random_play_holds_and_learning_raises():
    trial = RecordingTrial()
    first = TrialReporter(trial, seed_index=0, budget=1000, earlier=0.0, seeds=2)
    first.target = -100.0
    for steps in range(0, 1001, 50):
        first.on_evaluation({"confirmation": 0, "env_steps": steps, "mean_return": -500.0})
    area = first.finish(None)
    assert [value for _, value in trial.reports] == pytest.approx([-500.0] * 20)  # not -25, -50, ..., -500
    second = TrialReporter(trial, seed_index=1, budget=1000, earlier=area, seeds=2)
    second.target = -100.0
    second.on_evaluation({"confirmation": 0, "env_steps": 0, "mean_return": -500.0})
    second.on_evaluation({"confirmation": 0, "env_steps": 500, "mean_return": -100.0})
    second.finish(500)  # solved at 500: the target from there on
    steps, values = zip(*trial.reports)
    assert list(steps) == list(range(1, 41))
    assert values[-1] == pytest.approx((area + second.finish(500)) / 2)  # the last report is the objective
    assert values[-1] == pytest.approx((-500 * 1000 - 500 * 500 - 100 * 500) / 2000)
    assert values[29] == pytest.approx(-500.0) and values[30] > values[29]  # the second seed's solve raises it


def test_a_space_file_replaces_and_adds_entries(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text("[lr]\nlow = 1e-4\nhigh = 1e-3\nlog = true\n\n[sigma-init]\nchoices = [0.01, 0.05]\n")
    space = load_space(path)
    assert space["lr"] == {"low": 1e-4, "high": 1e-3, "log": True}
    assert space["sigma_init"] == {"choices": [0.01, 0.05]}
    assert set(space) == set(DEFAULT_SPACE) | {"sigma_init"}
    path.write_text("default_space = false\n[t-max]\nchoices = [5]\n")
    assert load_space(path) == {"t_max": {"choices": [5]}}


@pytest.mark.parametrize(
    "text, words",
    [
        ("[bogus]\nchoices = [1]\n", ["bogus", "unknown option"]),
        ("[seed]\nchoices = [1]\n", ["seed", "set by the tuner"]),
        ("[lr]\nlow = 1e-2\nhigh = 1e-3\n", ["lr", "low < high"]),
        ("[lr]\nlow = 0.0\nhigh = 1e-3\nlog = true\n", ["lr", "low > 0"]),
        ("[gamma]\nchoices = [0.99, 1.5]\n", ["gamma", "--gamma must be in (0, 1]"]),
        ('[core]\nchoices = ["lstm", "gru"]\n', ["core", "one of lstm, none"]),
        ("[core]\nlow = 1\nhigh = 2\n", ["core", "takes choices"]),
        ("[t-max]\nchoices = []\n", ["t_max", "non-empty list"]),
        ("lr = 0.001\n", ["lr", "must be a table"]),
        ("default_space = false\n", ["the space is empty"]),
        ("[lr\n", ["not valid TOML"]),
    ],
)
def test_a_bad_space_file_is_refused_naming_the_key(tmp_path, text, words):
    path = tmp_path / "space.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_space(path)
    for word in words:
        assert word in str(error.value)


def csv_rows(path) -> list[dict]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


# Two learning rates: one learns CartPole within the budget, one cannot, so a trial of the second is pruned
# against a finished trial of the first (sampler seed 0 samples 1e-6, 5e-3, then 1e-6 again)
SPACE = "default_space = false\n[lr]\nchoices = [5e-3, 1e-6]\n"
STUDY = [
    "tune",
    "--env",
    "CartPole-v1",
    "--seeds",
    "2",
    "--max-steps",
    "8000",
    "--num-processes",
    "2",
    "--prune-startup",
    "1",
    "--seed",
    "0",
]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_study_prunes_resumes_from_its_sqlite_file_and_its_best_settings_train(tmp_path):
    pytest.importorskip("optuna", reason="needs the tune extra: pip install -r requirements-tune.txt")
    (tmp_path / "space.toml").write_text(SPACE)
    out = tmp_path / "study"
    first = run_cli(*STUDY, "--trials", "2", "--space", str(tmp_path / "space.toml"), "--out", str(out), timeout=120)
    assert first.returncode == 0, first.stderr
    assert len(csv_rows(out / "trials.csv")) == 2
    resumed = run_cli(*STUDY, "--trials", "4", "--space", str(tmp_path / "space.toml"), "--out", str(out), timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    trials = csv_rows(out / "trials.csv")
    assert [row["number"] for row in trials] == ["0", "1", "2", "3"]  # the first two kept, two more run
    assert {row["state"] for row in trials} == {"complete", "pruned"}, trials
    best = max((row for row in trials if row["state"] == "complete"), key=lambda row: float(row["objective"]))
    assert float(best["lr"]) == 5e-3
    for row in trials:
        if row["state"] == "pruned":  # behind the best (when in its runs depends on when evaluations came:
            # on a loaded machine the pruning evaluation may be the last seed's final one)
            assert float(row["objective"]) < float(best["objective"])
    assert (out / "history.png").stat().st_size > 0 and (out / "importances.png").stat().st_size > 0
    trained = run_cli(
        "--config",
        str(out / "best.toml"),
        "--run-dir",
        str(tmp_path / "again"),
        "--max-steps",
        "2000",
        "--num-processes",
        "2",
        timeout=60,
    )
    assert trained.returncode == 0, trained.stderr
    config = json.loads((tmp_path / "again" / "config.json").read_text())
    assert config["lr"] == 5e-3 and config["env"] == "CartPole-v1"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_ctrl_c_ends_a_study_with_its_finished_trials_kept(tmp_path):
    pytest.importorskip("optuna", reason="needs the tune extra: pip install -r requirements-tune.txt")
    (tmp_path / "space.toml").write_text("default_space = false\n[lr]\nchoices = [1e-6]\n")  # never solves
    out = tmp_path / "study"
    process = start_cli(
        *STUDY,
        "--trials",
        "5",
        "--max-steps",
        "20000",
        "--space",
        str(tmp_path / "space.toml"),
        "--out",
        str(out),
        "--pruner",
        "none",
    )
    # the second trial's first run has started: the first trial has finished
    deadline = time.monotonic() + 120
    while not (out / "trials" / "0001-seed0" / "eval.csv").exists():
        assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
        time.sleep(0.2)
    time.sleep(1.0)
    process.send_signal(2)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "Traceback" not in stdout, stderr  # Optuna's warning for the trial too
    states = [row["state"] for row in csv_rows(out / "trials.csv")]
    assert states[0] == "complete" and states[-1] == "fail", states
    assert (out / "best.toml").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, words",
    [
        (["--env", "NoSuchEnv-v0"], ["NoSuchEnv-v0"]),
        (["--space", "{space}"], ["--space", "unknown option"]),
        (["--storage", "nosuchdb://x"], ["--storage", "nosuchdb://x"]),
        (["--trials", "0"], ["--trials"]),
    ],
)
def test_bad_tuner_input_is_a_one_line_usage_error(tmp_path, args, words):
    pytest.importorskip("optuna", reason="needs the tune extra: pip install -r requirements-tune.txt")
    (tmp_path / "space.toml").write_text("[bogus]\nchoices = [1]\n")
    args = [arg.replace("{space}", str(tmp_path / "space.toml")) for arg in args]
    result = run_cli("tune", "--out", str(tmp_path / "study"), *args)
    assert_one_line_usage_error(result, *words)


def test_best_settings_without_the_preset_reset_its_options_and_keep_the_study_budget(tmp_path):
    pytest.importorskip("optuna", reason="needs the tune extra: pip install -r requirements-tune.txt")
    from types import SimpleNamespace

    from a3c.config.presets import preset_for
    from a3c.config.settings import Config
    from a3c.tune.results import best_settings
    from a3c.tune.study import Study

    (tmp_path / "space.toml").write_text(SPACE)
    study = Study(
        env="Acrobot-v1",
        trials=1,
        seeds=1,
        max_steps=1234,
        out=str(tmp_path),
        storage="",
        study_name="s",
        space_file=str(tmp_path / "space.toml"),
        use_preset=False,
    )
    settings = best_settings(SimpleNamespace(params={"lr": 5e-3}), study)
    assert settings["max_steps"] == 1234 and settings["lr"] == 5e-3  # the budget the trial ran with, not the preset's
    for name in set(preset_for("Acrobot-v1")) - {"max_steps", "lr"}:
        assert settings[name] == getattr(Config(), name)  # the preset undone: --config repeats the trial
