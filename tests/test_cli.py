"""End to end through the command line: python main.py ... in a subprocess, from the repo root."""

from __future__ import annotations

import csv
import json
import re

import pytest

from a3c.config.settings import Config
from a3c.learn.checkpoint import load_checkpoint, save_checkpoint
from a3c.run.metrics import EVAL_COLUMNS, TRAIN_COLUMNS
from a3c.run.phases import format_phases

from .conftest import assert_one_line_usage_error, run_cli, run_cli_without

pytestmark = pytest.mark.slow  # every test here runs python main.py in a subprocess

SUMMARY_KEYS = {
    "env",
    "env_steps",
    "wall_seconds",
    "steps_per_second",
    "best_eval_return",
    "solved",
    "solved_env_steps",
    "solved_wall_seconds",
}


def read_csv(path) -> tuple[list[str], list[dict]]:
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        return list(reader.fieldnames or []), list(reader)


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    """One short CartPole training run through the CLI, shared by the tests below."""
    run_dir = tmp_path_factory.mktemp("cli") / "run"
    result = run_cli(
        "--env",
        "CartPole-v1",
        "--num-processes",
        "2",
        "--max-steps",
        "20000",
        "--eval-interval",
        "0.2",
        "--eval-episodes",
        "5",
        "--print-interval",
        "0.5",
        "--seed",
        "3",
        "--run-dir",
        str(run_dir),
        timeout=100,
    )
    return run_dir, result


@pytest.mark.timeout(120)
def test_training_run_writes_every_output(cartpole_run):
    run_dir, result = cartpole_run
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr

    config = json.loads((run_dir / "config.json").read_text())
    assert config["env"] == "CartPole-v1" and config["num_processes"] == 2 and config["max_steps"] == 20000
    assert config["target_return"] == 475.0  # "auto" resolved from the env's reward_threshold
    assert Config.from_dict(config).run_dir == str(run_dir)

    summary = json.loads((run_dir / "summary.json").read_text())
    ran_to_the_end = not summary["solved"]  # a lucky run solves CartPole before its 20k steps
    columns, rows = read_csv(run_dir / "metrics.csv")
    assert columns == TRAIN_COLUMNS and rows
    assert int(rows[-1]["env_steps"]) >= 20000 or not ran_to_the_end
    columns, eval_rows = read_csv(run_dir / "eval.csv")
    assert columns == EVAL_COLUMNS and eval_rows, "no evaluation in a run with --eval-interval 0.2"
    for row in eval_rows:
        assert float(row["min_return"]) <= float(row["mean_return"]) <= float(row["max_return"])

    assert SUMMARY_KEYS <= summary.keys()
    assert summary["env"] == "CartPole-v1"
    assert isinstance(summary["env_steps"], int) and (summary["env_steps"] >= 20000 or not ran_to_the_end)
    assert isinstance(summary["wall_seconds"], float) and summary["wall_seconds"] > 0
    assert isinstance(summary["steps_per_second"], (int, float)) and summary["steps_per_second"] > 0
    evaluations = [row for row in eval_rows if row["confirmation"] == "0"]  # a confirmation is not an evaluation
    assert summary["best_eval_return"] == pytest.approx(max(float(row["mean_return"]) for row in evaluations))
    assert isinstance(summary["solved"], bool)
    if summary["solved"]:
        assert isinstance(summary["solved_env_steps"], int) and isinstance(summary["solved_wall_seconds"], float)
    else:
        assert summary["solved_env_steps"] is None and summary["solved_wall_seconds"] is None

    phases = summary["phases"]
    assert 0 < phases["processes_started"] and 0 < phases["first_env_step"] <= phases["first_update"]
    assert 0 < phases["first_evaluation"] and 0 <= phases["stop_to_exit"] < summary["wall_seconds"]
    assert result.stdout.rstrip().splitlines()[-1].endswith(format_phases(phases))

    last = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert last["env_steps"] == summary["env_steps"]
    assert last["config"] == config and last["model"] and "optimizer" in last
    best = load_checkpoint(run_dir / "checkpoints" / "best.pt")
    confirmations = [float(row["mean_return"]) for row in eval_rows if row["confirmation"] == "1"]
    if confirmations:  # a confirmed mean outranks any evaluation's
        assert best["eval_confirmed"] and best["eval_return"] == pytest.approx(max(confirmations))
    else:
        assert best["eval_return"] == pytest.approx(summary["best_eval_return"])
    assert best["model"].keys() == last["model"].keys()


@pytest.mark.timeout(120)
def test_evaluate_plays_a_checkpoint_and_prints_the_mean(cartpole_run):
    run_dir, _ = cartpole_run
    result = run_cli("evaluate", "--checkpoint", str(run_dir / "checkpoints" / "last.pt"), "--episodes", "3")
    assert result.returncode == 0, result.stderr
    match = re.search(r"mean return (-?\d+(\.\d+)?)", result.stdout)
    assert match, result.stdout
    assert 1 <= float(match.group(1)) <= 500  # a CartPole return
    assert "3 episodes" in result.stdout


@pytest.mark.timeout(120)
def test_evaluate_on_an_env_with_other_spaces_is_a_usage_error(cartpole_run):
    run_dir, _ = cartpole_run
    result = run_cli(
        "evaluate", "--checkpoint", str(run_dir / "checkpoints" / "last.pt"), "--episodes", "1", "--env", "Acrobot-v1"
    )
    assert_one_line_usage_error(result, "Acrobot-v1")


@pytest.mark.timeout(60)
def test_unknown_env_id_is_a_usage_error(tmp_path):
    result = run_cli("--env", "NoSuchEnv-v0", "--max-steps", "100", "--run-dir", str(tmp_path / "run"))
    assert_one_line_usage_error(result, "NoSuchEnv-v0")
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "env_id, words",
    [
        ("tests.cue_env:CueText-v0", ["action space", "Text"]),
        ("tests.cue_env:CueUnboundedBox-v0", ["action space", "Box", "bounded"]),
        ("tests.cue_env:CueTextObs-v0", ["observation space", "Text"]),
        ("tests.cue_env:CueSequenceObs-v0", ["observation space", "Sequence"]),
        ("tests.cue_env:CueGraphObs-v0", ["observation space", "Graph"]),
        ("tests.structured_env:CueAndText-v0", ["observation space", "part 'note' is a Text"]),
        ("tests.masked_env:MaskedCueWrongSize-v0", ["action_mask of shape (3,)"]),
        ("tests.masked_env:MaskedCueFirstEpisode-v0", ["reset after step 5", "no action_mask"]),
    ],
)
def test_unsupported_space_is_a_usage_error_naming_the_space(env_id, words, tmp_path):
    result = run_cli("--env", env_id, "--max-steps", "100", "--run-dir", str(tmp_path / "run"))
    assert_one_line_usage_error(result, *words)
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "args, option",
    [
        (["--t-max", "0"], "--t-max"),
        (["--gamma", "1.5"], "--gamma"),
        (["--target-return", "soon"], "--target-return"),
        (["--optimizer", "sgd"], "--optimizer"),
        (["--ray-address", "auto"], "--ray-address"),
        (["--backend", "ray", "--sync-interval", "0"], "--sync-interval"),
    ],
)
def test_bad_option_value_is_a_usage_error(args, option, tmp_path):
    result = run_cli(*args, "--env", "CartPole-v1", "--max-steps", "100", "--run-dir", str(tmp_path / "run"))
    assert_one_line_usage_error(result, option)
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(60)
def test_backend_ray_without_ray_installed_is_a_usage_error(tmp_path):
    result = run_cli_without("ray", "--backend", "ray", "--max-steps", "100", "--run-dir", str(tmp_path / "run"))
    assert_one_line_usage_error(result, "--backend ray", "pip install -r requirements-ray.txt")
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(60)
def test_existing_non_empty_run_dir_is_refused_and_left_untouched(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "metrics.csv").write_text("precious results\n")
    result = run_cli("--env", "CartPole-v1", "--max-steps", "100", "--num-processes", "1", "--run-dir", str(run_dir))
    assert_one_line_usage_error(result, str(run_dir))
    assert sorted(p.name for p in run_dir.iterdir()) == ["metrics.csv"]
    assert (run_dir / "metrics.csv").read_text() == "precious results\n"


def write_truncated_checkpoint(path) -> None:
    save_checkpoint(path, {"config": Config(env="CartPole-v1").to_dict(), "model": {}})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["truncated", "garbage-text"])
def test_unreadable_checkpoint_is_a_one_line_usage_error(kind, tmp_path):
    path = tmp_path / "ck.pt"
    if kind == "truncated":
        write_truncated_checkpoint(path)
    else:
        path.write_text("this is not a checkpoint\n")
    result = run_cli("evaluate", "--checkpoint", str(path), "--episodes", "1")
    assert_one_line_usage_error(result, str(path))


@pytest.mark.timeout(120)
def test_plot_draws_the_learning_curves_of_a_finished_run(cartpole_run, tmp_path):
    run_dir, result = cartpole_run
    assert result.returncode == 0, result.stderr
    out = tmp_path / "curves.png"
    plotted = run_cli("plot", str(run_dir), str(run_dir), "--out", str(out))
    assert plotted.returncode == 0, plotted.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_plot_of_a_folder_that_is_no_run_is_a_usage_error(tmp_path):
    assert_one_line_usage_error(run_cli("plot", str(tmp_path), "--out", str(tmp_path / "x.png")), "metrics.csv")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.timeout(60)
def test_lunar_lander_trains_with_its_preset_and_the_command_line_wins(tmp_path):
    listed = run_cli("presets")
    assert listed.returncode == 0 and "LunarLander-v3 --max-steps 3000000 --lr 0.003 --gae-lambda 0.95" in listed.stdout
    pytest.importorskip("Box2D", reason="pip install -r requirements-box2d.txt")
    run_dir = tmp_path / "run"
    result = run_cli(
        "--env",
        "LunarLander-v3",
        "--num-processes",
        "1",
        "--envs-per-process",
        "1",
        "--t-max",
        "5",
        "--max-steps",
        "100",
        "--eval-episodes",
        "0",
        "--no-tensorboard",
        "--run-dir",
        str(run_dir),
    )
    assert result.returncode == 0, result.stderr
    config = json.loads((run_dir / "config.json").read_text())
    assert config["reward_scale"] == 0.1 and config["gae_lambda"] == 0.95 and config["eval_interval"] == 5.0
    assert config["max_steps"] == 100 and config["target_return"] == 200.0  # given / the env's reward_threshold
