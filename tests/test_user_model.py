"""A user's own network (--model module:function): checked before training, trained by autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from a3c.config.settings import Config, ConfigError
from a3c.envs.make import env_spec
from a3c.learn.learner import ActorLearner
from a3c.learn.policies import TorchPolicy
from a3c.learn.seeding import worker_seeds
from a3c.nets.factory import build_model
from a3c.nets.user import UserNetwork

from .conftest import run_cli

CARTPOLE = env_spec("CartPole-v1")


@pytest.mark.parametrize(
    "name, words",
    [
        ("tests.no_such_module:mlp", ["cannot import tests.no_such_module"]),
        ("tests.user_models:no_such_function", ["has no function no_such_function"]),
        ("tests.user_models", ["must be module:function"]),
        ("tests.user_models:raises", ["raised RuntimeError: no GPU found"]),
        ("tests.user_models:not_a_module", ["returned a str, not a torch nn.Module"]),
        ("tests.user_models:no_parameters", ["without parameters"]),
        ("tests.user_models:one_output", ["must return (head [2, 2], value [2])", "a tensor [2, 2]"]),
        ("tests.user_models:value_with_extra_dimension", ["(head [2, 2], value [2])", "[2, 1]"]),
        ("tests.user_models:forward_raises", ["forward() on a batch [2, 4] raised RuntimeError"]),
        ("tests.user_models:state_of_a_list", ["initial_state(2) must return a tuple of float tensors [2, ...]"]),
        ("tests.user_models:recurrent_without_state", ["must return (head [2, 2], value [2], state)"]),
        ("tests.user_models:state_changes_shape", ["a state like initial_state's (a tensor [2, 8])", "[2, 4]"]),
    ],
)
def test_a_broken_model_is_refused_with_one_line_naming_the_option(name, words):
    with pytest.raises(ConfigError) as error:
        build_model(Config(model=name), CARTPOLE)
    message = str(error.value)
    assert message.startswith("--model") and name in message and "\n" not in message
    for word in words:
        assert word in message


def test_the_numpy_learner_is_refused_for_a_users_model():
    with pytest.raises(ConfigError, match="--learner"):
        Config(model="tests.user_models:mlp", learner="numpy")


@pytest.mark.parametrize("env", ["CartPole-v1", "Pendulum-v1"])
def test_a_users_model_trains_with_autograd_and_the_trainer_adds_the_log_std(env):
    config = Config(env=env, model="tests.user_models:mlp", envs_per_process=3, t_max=5, max_grad_norm=1e9)
    torch.manual_seed(0)
    learner = ActorLearner(config, worker_seeds(config, rank=0))
    assert isinstance(learner.model, UserNetwork) and isinstance(learner.policy, TorchPolicy)
    assert (learner.model.log_std is not None) == (env == "Pendulum-v1")
    grad, report = learner.compute_gradient()
    assert report.env_steps == 15 and torch.isfinite(grad).all()
    body = learner.model.net.body[0].weight
    assert body.grad.abs().sum() > 0  # the gradient reached the user's own layers
    if env == "Pendulum-v1":
        assert learner.model.log_std.grad.abs().sum() > 0


def test_a_recurrent_users_model_carries_its_state_and_restarts_it_where_an_episode_begins():
    config = Config(model="tests.user_models:gru", envs_per_process=3, t_max=5)
    torch.manual_seed(0)
    learner = ActorLearner(config, worker_seeds(config, rank=0))
    assert learner.model.recurrent and learner.model.initial_state(3)[0].shape == (3, 16)
    grad, report = learner.compute_gradient()
    assert report.env_steps == 15 and torch.isfinite(grad).all()
    assert learner.model.net.gru.weight_hh.grad.abs().sum() > 0  # through the recurrence too
    carried = learner.state[0]
    assert carried.abs().sum() > 0  # the next rollout starts where this one stopped
    policy = learner.policy
    restarted = policy.restart(learner.state, np.array([True, False, True]))
    assert restarted[0][0].abs().sum() == 0 and restarted[0][2].abs().sum() == 0
    assert_close(restarted[0][1], carried[1])


def test_a_users_model_reads_normalised_observations():
    config = Config(model="tests.user_models:mlp", normalize_obs=True)
    model = build_model(config, CARTPOLE)
    model.obs_norm.update(torch.tensor([[1.0, 2.0, 3.0, 4.0], [3.0, 2.0, 1.0, 0.0]]))
    policy = TorchPolicy(model.eval())
    obs = np.array([[2.0, 5.0, 2.0, 1.0]], dtype=np.float32)
    head = policy.act(obs, policy.begin_rollout(()), record=False)[0]
    with torch.no_grad():
        expected = model.net(model.obs_norm(torch.from_numpy(obs)))[0]
    assert_close(torch.from_numpy(head), expected)


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "args, words",
    [
        (["--model", "tests.user_models:one_output"], ["--model", "must return"]),
        (["--model", "no_such_module:mlp"], ["--model", "cannot import"]),
        (["--model", "tests.user_models:raises"], ["--model", "raised RuntimeError"]),
        (["--model", "tests.user_models:mlp", "--learner", "numpy"], ["--learner"]),
    ],
)
def test_the_cli_refuses_a_broken_model_before_writing_anything(tmp_path, args, words):
    run_dir = tmp_path / "run"
    result = run_cli(*args, "--run-dir", str(run_dir))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(error_lines) == 1 and all(word in error_lines[0] for word in words), result.stderr
    assert not run_dir.exists()


def test_a_presets_stock_network_options_leave_a_users_module_as_it_is():
    """Acrobot's preset asks the stock network for a critic of its own; a --model builds its own value head,
    so the preset neither refuses it nor centres its values."""
    config = Config.for_env("Acrobot-v1", model="examples.custom_model:mlp")
    assert config.critic == "own"
    model = build_model(config, env_spec("Acrobot-v1"))
    assert isinstance(model, UserNetwork) and model.value_stats is None
