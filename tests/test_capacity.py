"""Capacity checks: a run that cannot fit the machine is refused before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from a3c.config.settings import Config
from a3c.envs.make import env_spec
from a3c.envs.spec import EnvSpec
from a3c.errors import ConfigError
from a3c.nets.factory import build_model
from a3c.run.capacity import PROCESS_BYTES, check_capacity, estimate, network_size, user_tasks

from .conftest import REPO_ROOT, assert_one_line_usage_error, run_cli

GB = 2**30


@pytest.mark.parametrize(
    "env_id, settings",
    [
        ("CartPole-v1", {}),
        ("CartPole-v1", {"core": "none", "hidden_sizes": (32, 16)}),
        ("Pendulum-v1", {"normalize_obs": True}),
        ("CartPole-v1", {"noise": False, "center_values": "on"}),
    ],
)
def test_the_network_is_sized_as_built(env_id, settings):
    config = Config(env=env_id, **settings)
    spec = env_spec(env_id)
    model = build_model(config, spec)
    assert network_size(config, spec) == sum(t.numel() for t in (*model.parameters(), *model.buffers()))


@pytest.mark.parametrize("frames", [(4, 84, 84), (4, 10, 10)])  # Atari's convnet, MinAtar's
def test_a_frames_network_is_sized_as_built_without_a_trial_pass(frames):
    spec = EnvSpec(obs_shape=frames, num_actions=4, action_start=0, reward_threshold=None, obs_dtype=np.uint8)
    config = Config(core="none", hidden_sizes=(256,))
    model = build_model(config, spec)
    assert network_size(config, spec) == sum(t.numel() for t in (*model.parameters(), *model.buffers()))
    assert model(torch.zeros(1, *frames, dtype=torch.uint8), ())[0].shape == (1, 4)  # the flat size fits
    code = (
        "import sys, numpy as np; from a3c.run.capacity import network_size; from a3c.config.settings import Config; "
        "from a3c.envs.spec import EnvSpec; "
        f"network_size(Config(core='none'), EnvSpec({frames}, 4, 0, None, obs_dtype=np.uint8)); "
        "print('torch._dynamo' in sys.modules)"
    )
    imported = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert imported.stdout.strip() == "False"  # a forward pass on the meta device imports it: 1.3 s


def test_a_users_network_is_left_to_its_own_build():
    assert network_size(Config(model="tests.user_models:raises"), env_spec("CartPole-v1")) is None  # not called


def test_a_network_too_large_for_any_machine_is_sized_without_being_built():
    began = time.monotonic()
    numbers = network_size(Config(hidden_sizes=(10_000_000,)), env_spec("CartPole-v1"))
    assert numbers > 8 * 10**14 and time.monotonic() - began < 5  # an LSTM of 10M units: 4 x 2 x 10^14 weights


def test_every_copy_of_the_network_and_every_worker_is_counted():
    spec = env_spec("CartPole-v1")
    one, two = (estimate(Config(num_processes=n, replay_ratio=0), spec, 1_000_000) for n in (1, 2))
    assert one.network == 4_000_000 and one.shared == 3 * one.network  # weights and Adam's two moments
    assert two.memory - one.memory == one.per_worker >= 2 * one.network + PROCESS_BYTES  # a copy and its gradient
    replaying = estimate(
        Config(num_processes=1, replay_ratio=1, replay_capacity=100, t_max=20, envs_per_process=1), spec, 1_000_000
    )
    assert replaying.replay == 2 * 100 * 20 * 4 * 4  # observations and final observations of 100 rollouts
    assert estimate(Config(optimizer="rmsprop"), spec, 10).shared == 2 * 40


def check(config: Config, numbers: int = 10_000, memory=64 * GB, shm=64 * GB, disk=64 * GB, processes=None, cores=2):
    return check_capacity(config, env_spec(config.env), numbers, Path("run"), memory, shm, disk, processes, cores)


def test_what_the_machine_cannot_hold_is_refused_naming_the_option_the_estimate_and_what_is_there():
    with pytest.raises(
        ConfigError,
        match=r"^--hidden-sizes 64: the run needs about [\d.]+ GB of memory .*"
        r"; 1\.0 GB is available",
    ):
        check(Config(num_processes=2), numbers=300_000_000, memory=GB)
    with pytest.raises(ConfigError, match=r"^--num-processes 500: .*; 1\.0 GB is available"):
        check(Config(num_processes=500, replay_ratio=0), memory=GB)
    with pytest.raises(ConfigError, match=r"^--replay-capacity 100000: "):
        check(
            Config(num_processes=2, replay_ratio=1, replay_capacity=100_000, envs_per_process=64, t_max=64), memory=GB
        )
    with pytest.raises(ConfigError, match=r"^--hidden-sizes 64: .* shared memory; /dev/shm has 64\.0 MB free"):
        check(Config(num_processes=2), numbers=30_000_000, shm=64 * 2**20)
    with pytest.raises(ConfigError, match=r"^--run-dir run: the checkpoints need about .*; 1\.0 MB is free there"):
        check(Config(num_processes=2), numbers=1_000_000, disk=2**20)
    with pytest.raises(ConfigError, match=r"^--num-processes 8: 9 more processes .*: 95 running of the 100 allowed"):
        check(Config(num_processes=8), processes=(100, 95))
    assert check(Config(num_processes=8), processes=(100, 91)) == []  # 9 more fit
    assert check(Config(num_processes=8), numbers=10**15, memory=None, shm=None, disk=None) == []  # unknown: let it run


def test_a_run_that_fits_but_oversubscribes_the_cores_is_warned_about():
    assert check(Config(num_processes=8), cores=2) == []
    (warning,) = check(Config(num_processes=9), cores=2)
    assert warning.startswith("--num-processes 9 on 2 cores: more than 4 workers a core")
    assert check(Config(num_processes=9, backend="ray"), cores=2) == []  # the workers are on the cluster's nodes


def test_frames_are_warned_about_from_two_workers_a_core():
    pytest.importorskip("ale_py", reason="Atari needs pip install -r requirements-atari.txt")
    assert check(Config(env="ALE/Pong-v5", num_processes=4), cores=2) == []
    (warning,) = check(Config(env="ALE/Pong-v5", num_processes=5), cores=2)
    assert warning.startswith("--num-processes 5 on 2 cores: on frames more than 2 workers a core go slower")


def test_the_tasks_of_this_user_are_counted():
    assert user_tasks(os.getuid()) >= torch.get_num_threads()  # this process's own threads at least


@pytest.mark.parametrize(
    "args, words",
    [
        (["--hidden-sizes", "10000000"], ["--hidden-sizes 10000000: the run needs about", "PB of memory", "available"]),
        (["--replay-capacity", "100000000", "--replay-ratio", "1"], ["--replay-capacity 100000000:", "available"]),
        (["--num-processes", "100000"], ["--num-processes must be in [1, 1024]"]),
    ],
)
def test_the_cli_refuses_what_cannot_fit_in_one_line_and_writes_nothing(tmp_path, args, words):
    run_dir = tmp_path / "run"
    began = time.monotonic()
    result = run_cli("--env", "CartPole-v1", *args, "--run-dir", str(run_dir), timeout=60)
    assert_one_line_usage_error(result, *words)
    assert not run_dir.exists() and time.monotonic() - began < 30  # refused before forking or building


def test_checkpoints_that_cannot_fit_the_disk_are_refused_before_anything_is_written(small_disk):
    run_dir = small_disk / "run"  # 4 MB; an LSTM of 1024 units: 8.4M numbers, 34 MB a copy
    result = run_cli("--env", "CartPole-v1", "--hidden-sizes", "1024", "--run-dir", str(run_dir), timeout=60)
    assert_one_line_usage_error(result, f"--run-dir {run_dir}: the checkpoints need about", "MB is free there")
    assert not run_dir.exists()
