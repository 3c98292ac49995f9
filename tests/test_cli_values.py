"""Every option of every command (train, evaluate, plot) against values drawn by hypothesis: each is
either accepted (the command reaches its work) or refused in one 'Error:' line with exit code 2, without a
traceback and without writing anything. The checks made inside the trainer (the env, --model, the run
dir) have tests of their own in test_cli.py and test_faults.py."""

from __future__ import annotations

import os
from contextlib import contextmanager
from unittest import mock

import click
import pytest
from click.testing import CliRunner

hypothesis = pytest.importorskip("hypothesis", reason="property tests need pip install -r requirements.txt")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from a3c.cli import cli  # noqa: E402

# Options whose values name things to import, read or create: drawn from these, never from random text
# (a random "module:function" could import and call anything).
NAMED_VALUES = {
    "env": ["CartPole-v1", "", "NoSuchEnv-v0", "ALE/Pong-v5"],
    "env_id": ["CartPole-v1", "", "NoSuchEnv-v0"],
    "model": ["", "no_such_module:build", "tests.user_models", ":"],
    "run_dir": ["run", "", "run\x00dir"],
    "config_file": ["", "no/such.toml", "."],
    "ray_address": ["", "auto", "127.0.0.1:1"],
    "checkpoint": ["last.pt", "", "no/such.pt"],
    "video": ["", "out.mp4", "out.gif", "out.avi", "no/such/out.mp4"],
    "out": ["curves.png", "curves.txt", "", "no/such/curves.png"],
}
SPECIAL_TEXT = [
    "",
    " ",
    "-1",
    "0",
    "1",
    "nan",
    "-inf",
    "inf",
    "1e400",
    "0x10",
    "1,2",
    "2,",
    ",",
    "64,0",
    "true",
    "auto",
    "none",
    "lstm",
    "fork",
    "ray",
    "1.5",
    "-0.0",
    "9" * 30,
]
TEXT = st.one_of(
    st.sampled_from(SPECIAL_TEXT),
    st.text(max_size=12),
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)

# Each command: the function a valid command line reaches (replaced by a stand-in), and the arguments it
# always needs.
COMMANDS = {
    "train": ("a3c.run.trainer.train", [], ["--run-dir", "run"]),
    "evaluate": ("a3c.agent.load_agent", ["evaluate"], ["--checkpoint", "last.pt"]),
    "plot": ("a3c.tools.plot.plot_runs", ["plot"], ["run"]),
}


def options_of(name: str) -> list[click.Option]:
    command = cli if name == "train" else cli.commands[name]
    return [
        param
        for param in command.params
        if isinstance(param, click.Option) and not param.is_flag and param.name not in ("help", "resume")
    ]


OPTIONS = [(name, option) for name in COMMANDS for option in options_of(name)]


def values_for(option: click.Option):
    return st.sampled_from(NAMED_VALUES[option.name]) if option.name in NAMED_VALUES else TEXT


@st.composite
def option_and_value(draw):
    command, option = draw(st.sampled_from(OPTIONS))
    return command, option, draw(values_for(option))


@contextmanager
def chdir(folder):
    """contextlib.chdir of Python 3.11, for 3.10."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


class Reached(Exception):
    """The stand-in was called: the command line was accepted."""


def stand_in(*args, **kwargs):
    raise Reached


@pytest.mark.timeout(300)
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=option_and_value())
def test_every_option_accepts_a_value_or_refuses_it_in_one_line_writing_nothing(drawn, tmp_path_factory):
    command, option, value = drawn
    target, prefix, needed = COMMANDS[command]
    args = prefix + [option.opts[0], value] + (needed if option.opts[0] not in needed else [])
    with mock.patch(target, stand_in), chdir(tmp_path_factory.mktemp("cwd")):
        result = CliRunner().invoke(cli, args)
        written = os.listdir(".")
    if isinstance(result.exception, Reached):
        return
    assert result.exit_code == 2, (args, result.output, result.exception)
    error_lines = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(error_lines) == 1, (args, result.output)
    assert "Traceback" not in result.output
    assert written == []


@pytest.mark.parametrize(
    "args",
    [
        ["--gamma", "nan"],
        ["--lr", "inf"],
        ["--target-return", "nan"],
        ["--t-max", "0"],
        ["--num-processes", "-3"],
        ["--hidden-sizes", "64,0"],
        ["--eval-interval", "-inf"],
        ["--max-steps", "1.5"],
        ["--worker-timeout", "-1"],
        ["--run-dir", "run\x00dir"],
        ["evaluate", "--checkpoint", "last.pt", "--seed", "-1"],
        ["evaluate", "--checkpoint", "last.pt", "--episodes", "0"],
    ],
)
def test_known_bad_values_are_refused(args, tmp_path):
    with mock.patch("a3c.run.trainer.train", stand_in), mock.patch("a3c.agent.load_agent", stand_in), chdir(tmp_path):
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and not isinstance(result.exception, Reached), (args, result.output)
