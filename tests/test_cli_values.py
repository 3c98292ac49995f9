"""Every training option against values drawn by hypothesis: each is either accepted (a valid Config
reaches the trainer) or refused in one 'Error:' line with exit code 2, without a traceback and without
writing anything. The checks made inside the trainer (the env, --model, the run dir) have tests of their
own in test_cli.py and test_faults.py."""

from __future__ import annotations

import os
from contextlib import contextmanager
from unittest import mock

import click
from click.testing import CliRunner
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="property tests need pip install -r requirements.txt")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from a3c.cli import cli  # noqa: E402
from a3c.config import Config  # noqa: E402

# Options whose values name things to import or create: drawn from these, never from random text
# (a random "module:function" could import and call anything).
NAMED_VALUES = {
    "env": ["CartPole-v1", "", "NoSuchEnv-v0", "ALE/Pong-v5"],
    "model": ["", "no_such_module:build", "tests.user_models", ":"],
    "run_dir": ["run", "", "run\x00dir"],
    "ray_address": ["", "auto", "127.0.0.1:1"],
}
SPECIAL_TEXT = ["", " ", "-1", "0", "1", "nan", "-inf", "inf", "1e400", "0x10", "1,2", "2,", ",", "64,0", "true",
                "auto", "none", "lstm", "fork", "ray", "1.5", "-0.0", "9" * 30]
TEXT = st.one_of(st.sampled_from(SPECIAL_TEXT), st.text(max_size=12), st.integers(-10**6, 10**6).map(str),
                 st.floats(allow_nan=True, allow_infinity=True).map(repr))

OPTIONS = [param for param in cli.params if isinstance(param, click.Option) and not param.is_flag
           and param.name not in ("help", "resume")]


def values_for(option: click.Option):
    return st.sampled_from(NAMED_VALUES[option.name]) if option.name in NAMED_VALUES else TEXT


@st.composite
def option_and_value(draw):
    option = draw(st.sampled_from(OPTIONS))
    return option, draw(values_for(option))


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
    """The stand-in trainer was called: the options made a valid Config."""


def stand_in_train(config, **kwargs):
    assert isinstance(config, Config)
    raise Reached


@pytest.mark.timeout(300)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=option_and_value())
def test_every_option_accepts_a_value_or_refuses_it_in_one_line_writing_nothing(drawn, tmp_path_factory):
    option, value = drawn
    folder = tmp_path_factory.mktemp("cwd")
    with mock.patch("a3c.trainer.train", stand_in_train), chdir(folder):
        args = [option.opts[0], value] + (["--run-dir", "run"] if option.name != "run_dir" else [])
        result = CliRunner().invoke(cli, args)
        written = os.listdir(".")
    if isinstance(result.exception, Reached):
        return
    assert result.exit_code == 2, (args, result.output, result.exception)
    error_lines = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(error_lines) == 1, (args, result.output)
    assert "Traceback" not in result.output
    assert written == []


@pytest.mark.parametrize("option, value", [("--gamma", "nan"), ("--lr", "inf"), ("--target-return", "nan"),
                                           ("--t-max", "0"), ("--num-processes", "-3"), ("--hidden-sizes", "64,0"),
                                           ("--eval-interval", "-inf"), ("--max-steps", "1.5"),
                                           ("--worker-timeout", "-1"), ("--run-dir", "run\x00dir")])
def test_known_bad_values_are_refused(option, value, tmp_path):
    with mock.patch("a3c.trainer.train", stand_in_train), chdir(tmp_path):
        result = CliRunner().invoke(cli, [option, value])
    assert result.exit_code == 2 and not isinstance(result.exception, Reached), (option, value, result.output)
