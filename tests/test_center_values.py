"""--center-values: the value head learns the return less the running mean of the value targets.

Acrobot pays -1 a step (-0.1 scaled): value targets near -10. An LSTM's value head reads a state
bounded by tanh, and Adam's steps of about lr per weight reach -10 fastest by saturating every gate:
the state stops depending on the observation, and the policy with it (docs/design/choices.md, "The LSTM's scale").
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from a3c.config.settings import Config, centers_values
from a3c.envs.make import env_spec
from a3c.learn.learner import ActorLearner, value_offset
from a3c.learn.optim import make_optimizer
from a3c.learn.seeding import worker_seeds
from a3c.nets.factory import build_model
from a3c.tools.diagnostics import network_diagnostics

UPDATES = 40


def trained_learner(center_values: str) -> ActorLearner:
    """One learner's UPDATES Adam steps on Acrobot at its preset's lr, with the LSTM."""
    config = Config.for_env(
        "Acrobot-v1", core="lstm", critic="shared", center_values=center_values, replay_ratio=0.0, envs_per_process=4
    )
    torch.manual_seed(0)
    learner = ActorLearner(config, worker_seeds(config, rank=0))
    optimizer = make_optimizer(config.optimizer, [learner.flat_params], config.lr)
    for _ in range(UPDATES):
        gradient, _ = learner.compute_gradient()
        optimizer.step([gradient])
    return learner


def observations_of(learner: ActorLearner, steps: int = 40) -> torch.Tensor:
    """The observations of `steps` more steps of the learner's own (greedy) policy."""
    seen = []
    for _ in range(steps):
        seen.append(learner.envs.obs.copy())
        heads, _, learner.state = learner.policy.act(learner.envs.obs, learner.state, record=False)
        learner.envs.step(heads.argmax(axis=1))
    return torch.from_numpy(np.stack(seen))


@pytest.mark.timeout(60)
def test_centred_values_keep_the_lstm_out_of_saturation():
    whole = trained_learner("off")
    centred = trained_learner("on")
    saturated = network_diagnostics(whole.model, observations_of(whole))
    healthy = network_diagnostics(centred.model, observations_of(centred))
    assert saturated["gate_saturation"] > 0.5 and saturated["hidden_saturation"] > 0.5
    assert healthy["gate_saturation"] < 0.1 and healthy["hidden_saturation"] < 0.1
    # the statistics carry the offset: the value targets' mean is well below 0
    assert value_offset(centred.model.value_stats) < -1 and whole.model.value_stats is None


def test_auto_centres_a_value_head_that_reads_the_lstm_only():
    assert centers_values(Config(core="lstm"))
    assert not centers_values(Config(core="lstm", critic="own"))  # its own ReLU features reach any offset
    assert not centers_values(Config(core="none"))
    assert not centers_values(Config(core="lstm", model="examples.custom_model:mlp"))
    assert centers_values(Config(core="none", center_values="on"))
    assert not centers_values(Config(core="lstm", center_values="off"))


def test_the_network_names_the_statistics_workers_share():
    spec = env_spec("CartPole-v1")
    assert set(build_model(Config(normalize_obs=True), spec).statistics()) == {"obs_norm", "value_stats"}
    assert set(build_model(Config(core="none", normalize_obs=False), spec).statistics()) == set()
