"""The network diagnostics tell a saturated LSTM and a noise-dominated head from a healthy network."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from a3c.learn.distributions import noise_effects
from a3c.nets.actor_critic import ActorCritic, StockOptions
from a3c.tools.diagnostics import network_diagnostics

OBS = 6


def observations(steps: int = 30, batch: int = 8, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(steps, batch, OBS, generator=torch.Generator().manual_seed(0)) * scale


def network(**options) -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic(OBS, 3, StockOptions(hidden_sizes=(32,), **options))


def test_a_fresh_lstm_is_far_from_saturation():
    found = network_diagnostics(network(), observations())
    assert found["gate_saturation"] < 0.01 and found["hidden_saturation"] < 0.01
    assert 0 < found["cell_abs_mean"] < 1 and 0 < found["feature_rms"] < 1


def test_an_lstm_built_to_saturate_is_seen_saturated():
    model = network()
    size = model.hidden_size
    with torch.no_grad():
        model.lstm.weight_ih_l0.mul_(50)
        model.lstm.bias_ih_l0.fill_(10.0)  # input, forget and output gates wide open...
        model.lstm.bias_ih_l0[2 * size : 3 * size] = 0.0  # ...and the candidate follows the input
    steady = observations(steps=1).expand(30, -1, -1)  # the same observation every step
    found = network_diagnostics(model, steady)
    assert found["gate_saturation"] > 0.8
    assert found["hidden_saturation"] > 0.4
    assert found["cell_abs_mean"] > 5  # an integrator: |c| grows with every step (a fresh LSTM: under 1)


def test_restarts_zero_the_state_as_in_training():
    model = network()
    with torch.no_grad():
        model.lstm.bias_ih_l0.fill_(5.0)
    obs = observations(steps=40)
    every_step = torch.ones(40, 8, dtype=torch.bool)
    assert (
        network_diagnostics(model, obs, every_step)["cell_abs_mean"]
        < network_diagnostics(model, obs)["cell_abs_mean"] / 5
    )


def test_logit_noise_against_the_spread_over_the_batch():
    quiet = network_diagnostics(network(sigma_init=0.0), observations())
    loud = network_diagnostics(network(sigma_init=1.0), observations())
    assert quiet["logit_noise_ratio"] == 0.0 and loud["logit_noise_ratio"] > 10
    assert quiet["logit_spread"] == loud["logit_spread"] > 0  # the mean weights are the same network
    assert math.isnan(network_diagnostics(network(noisy=False), observations())["logit_noise_ratio"])


def test_the_noise_effects_of_draws_built_by_hand():
    mean = torch.tensor([[0.0, 1.0]]).repeat(4, 1)  # every state prefers action 1
    same_push = (mean + torch.tensor([2.0, 0.0])).unsqueeze(0)  # one draw: action 0 by 1 logit, everywhere
    found = noise_effects(mean.numpy(), same_push.numpy())
    assert found["noise_flips"] == 1.0 and found["noise_consistency"] == pytest.approx(1.0)
    assert found["noise_share"] == pytest.approx(2.0 / (0.5 + 2.0))  # centred: the push [1, -1], the mean [-.5, .5]
    p, q = torch.softmax(torch.tensor([2.0, 1.0]), 0), torch.softmax(torch.tensor([0.0, 1.0]), 0)
    assert found["noise_kl"] == pytest.approx((p * (p / q).log()).sum().item())
    common_to_all_actions = noise_effects(mean.numpy(), (mean + 5.0).unsqueeze(0).numpy())  # changes no probability
    assert (
        common_to_all_actions["noise_kl"] == pytest.approx(0.0, abs=1e-6) and common_to_all_actions["noise_flips"] == 0
    )
    opposite = torch.stack([mean + torch.tensor([2.0, 0.0]), mean - torch.tensor([2.0, 0.0])], dim=1).reshape(1, 8, 2)
    assert noise_effects(mean.repeat(2, 1).numpy(), opposite.numpy())["noise_consistency"] == pytest.approx(
        0.0, abs=1e-6
    )


def test_independent_pushes_state_to_state_are_seen_inconsistent():
    generator = torch.Generator().manual_seed(0)
    mean = torch.randn(1000, 3, generator=generator)
    found = noise_effects(mean.numpy(), (mean + torch.randn(1000, 3, generator=generator)).unsqueeze(0).numpy())
    assert found["noise_consistency"] < 0.01 and 0 < found["noise_flips"] < 1
    assert found["noise_share"] == pytest.approx(0.5, abs=0.03)  # a push as large as what was learned


def test_a_network_without_noise_or_with_none_has_no_noise_effects():
    quiet = network_diagnostics(network(sigma_init=0.0), observations())
    assert quiet["noise_kl"] == 0.0 and quiet["noise_flips"] == 0.0
    loud = network_diagnostics(network(sigma_init=1.0), observations())
    assert loud["noise_kl"] > 0.1 and loud["noise_flips"] > 0.1
    assert math.isnan(network_diagnostics(network(noisy=False), observations())["noise_consistency"])


def test_a_feed_forward_network_has_no_lstm_figures():
    found = network_diagnostics(network(core="none"), observations())
    assert all(math.isnan(found[key]) for key in ("gate_saturation", "cell_abs_mean", "hidden_saturation"))
    assert found["feature_rms"] > 0


def test_the_callers_noise_draw_is_left_as_it_was():
    model = network()
    model.resample_noise()
    before = model.policy.weight_epsilon.clone()
    network_diagnostics(model, observations())
    assert torch.equal(model.policy.weight_epsilon, before)


def test_only_the_counted_draw_state_pairs_make_the_figures():
    mean = np.array([[0.0, 1.0], [0.0, 1.0]])  # two states, action 1 preferred at both
    noisy = np.array([[[2.0, 0.0], [0.0, 1.0]]])  # one draw: flips the first state only
    assert noise_effects(mean, noisy)["noise_flips"] == 0.5
    assert noise_effects(mean, noisy, np.array([[True, False]]))["noise_flips"] == 1.0
    assert noise_effects(mean, noisy, np.array([[False, True]]))["noise_kl"] == pytest.approx(0.0)
