"""--config FILE: the env's preset, then the file, then the command line; bad files refused in one line."""

from __future__ import annotations

import json
import re
from unittest import mock

import pytest
from click.testing import CliRunner

from a3c.cli import cli
from a3c.config.presets import PRESETS
from a3c.config.settings import Config
from a3c.errors import ConfigError

from .conftest import REPO_ROOT


def trained_config(*args: str) -> tuple[int, Config | None, str]:
    """Run the CLI with train() replaced: its exit code, the Config train() got, and its stderr."""
    with mock.patch("a3c.run.trainer.train") as train:
        train.return_value.summary = {"stop_reason": "max_steps"}
        with mock.patch("a3c.cli.exit_now"):
            result = CliRunner().invoke(cli, list(args))
    config = train.call_args.args[0] if train.called else None
    return result.exit_code, config, result.output


def test_the_file_sets_options_on_top_of_the_preset_and_the_command_line_wins(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(
        'env = "Acrobot-v1"\nnum-processes = 3\nhidden_sizes = [32, 32]\nlr = 0.001\n'
        'normalize-obs = true\ntarget-return = "none"\n'
    )
    code, config, output = trained_config("--config", str(path), "--lr", "0.002", "--run-dir", "run")
    assert code == 0, output
    assert (config.env, config.num_processes, config.hidden_sizes) == ("Acrobot-v1", 3, (32, 32))
    assert config.normalize_obs and config.target_return is None
    assert config.lr == 0.002  # the command line over the file
    assert config.critic == PRESETS["Acrobot-v1"]["critic"] and config.max_steps == PRESETS["Acrobot-v1"]["max_steps"]
    code, config, _ = trained_config("--config", str(path), "--env", "CartPole-v1", "--run-dir", "run")
    assert config.env == "CartPole-v1" and config.t_max == PRESETS["CartPole-v1"]["t_max"]  # that env's preset


def test_a_runs_config_json_repeats_the_run_in_a_new_run_dir(tmp_path):
    saved = Config.for_env("Pendulum-v1", num_processes=3, seed=7, target_return=-250.0, run_dir="runs/old")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(saved.to_dict()))
    assert Config.from_file(path) == saved.replace(run_dir="")


@pytest.mark.parametrize(
    "text, words",
    [
        ("lr = 0.001\nbatch-size = 64\n", ["unknown key 'batch-size'"]),
        ("lr = 'fast'\n", ["lr must be a number, got 'fast'"]),
        ("num-processes = 2.5\n", ["num-processes must be an integer"]),
        ("noise = 1\n", ["noise must be true or false"]),
        ("hidden-sizes = [64, 'x']\n", ["hidden-sizes must be a list of integers"]),
        ("lr = -1\n", ["--lr must be > 0, got -1.0"]),
        ("num-processes = 2\nnum_processes = 3\n", ["num_processes is given twice"]),
        ("lr = \n", ["not valid TOML"]),
    ],
)
def test_a_bad_file_is_refused_in_one_line_naming_the_file_and_the_key(tmp_path, text, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    code, config, output = trained_config("--config", str(path), "--run-dir", "run")
    assert code == 2 and config is None and "Traceback" not in output
    errors = [line for line in output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and f"--config {path}: " in errors[0], output
    for word in words:
        assert word in errors[0]
    with pytest.raises(ConfigError, match="--config"):
        Config.from_file(path)


def test_a_json_file_that_is_no_table_and_config_with_resume_are_refused(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]")
    code, _, output = trained_config("--config", str(path))
    assert code == 2 and "expected a table of options, got list" in output
    path.write_text("{}")
    code, _, output = trained_config("--config", str(path), "--resume", str(tmp_path))
    assert code == 2 and "--config with --resume" in output


def test_the_guides_example_file_reads_as_it_says(tmp_path):
    guide = (REPO_ROOT / "docs" / "guides" / "config-files.md").read_text()
    path = tmp_path / "acrobot.toml"
    path.write_text(re.search(r"```toml\n(.*?)```", guide, re.S).group(1))
    config = Config.from_file(path, seed=3)
    assert (config.env, config.num_processes, config.core, config.lr, config.target_return, config.seed) == (
        "Acrobot-v1",
        8,
        "lstm",
        0.003,
        -100.0,
        3,
    )
