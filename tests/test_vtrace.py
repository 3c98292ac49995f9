"""V-trace (a3c.learn.returns.vtrace) against a per-step reference of its formulas, and against GAE on-policy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from a3c.learn.returns import gae_advantages, vtrace


def assert_close(actual, expected) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def random_rollout(seed: int, steps: int = 9, batch: int = 4, log_rho_scale: float = 1.0):
    """rewards, values, dones (with episode ends), bootstrap and log_rhos of both signs, float32."""
    rng = np.random.default_rng(seed)
    rewards, values, log_rhos = rng.standard_normal((3, steps, batch), dtype=np.float32)
    dones = (rng.random((steps, batch)) < 0.25).astype(np.float32)
    bootstrap = rng.standard_normal(batch, dtype=np.float32)
    assert dones.any() and not dones.all()
    return rewards, values, dones, bootstrap, log_rho_scale * log_rhos


def reference_vtrace(log_rhos, rewards, dones, values, bootstrap, gamma, lam, rho_bar, c_bar):
    """The definition, one step at a time in float64:
    v_s = V_s + sum_{t>=s} (prod_{i=s}^{t-1} gamma (1 - done_i) c_i) delta_t, v_T = V_T = bootstrap,
    A_s = rho_s (r_s + gamma (1 - done_s) ((1 - lam) V_{s+1} + lam v_{s+1}) - V_s)."""
    steps, batch = rewards.shape
    V = np.concatenate([values, bootstrap[None]]).astype(np.float64)
    targets, advantages = V.copy(), np.zeros((steps, batch))
    for b in range(batch):
        rho = [min(rho_bar, math.exp(x)) for x in log_rhos[:, b]]
        c = [lam * min(c_bar, math.exp(x)) for x in log_rhos[:, b]]
        g = [gamma * (1 - d) for d in dones[:, b]]
        for s in range(steps):
            for t in range(s, steps):
                trace = math.prod(g[i] * c[i] for i in range(s, t))
                targets[s, b] += trace * rho[t] * (rewards[t, b] + g[t] * V[t + 1, b] - V[t, b])
        for s in range(steps):
            mixed = (1 - lam) * V[s + 1, b] + lam * targets[s + 1, b]
            advantages[s, b] = rho[s] * (rewards[s, b] + g[s] * mixed - V[s, b])
    return targets[:-1], advantages


@pytest.mark.parametrize("lam", [0.0, 0.5, 0.95, 1.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_on_policy_targets_and_advantages_are_gae(seed, lam):
    rewards, values, dones, bootstrap, log_rhos = random_rollout(seed)
    targets, advantages = vtrace(np.zeros_like(log_rhos), rewards, dones, values, bootstrap, gamma=0.9, lam=lam)
    gae = gae_advantages(rewards, values, dones, bootstrap, gamma=0.9, lam=lam)
    assert_close(targets - values, gae)
    assert_close(advantages, gae)
    assert targets.dtype == advantages.dtype == np.float32


@pytest.mark.parametrize("rho_bar, c_bar", [(1.0, 1.0), (1.5, 0.7), (0.8, 1.2)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_off_policy_targets_and_advantages_follow_the_definition(seed, rho_bar, c_bar):
    rewards, values, dones, bootstrap, log_rhos = random_rollout(seed)
    ratios = np.exp(log_rhos)
    # both clips act on some steps and not on others
    assert (ratios > max(rho_bar, c_bar)).any() and (ratios < min(rho_bar, c_bar)).any()
    ours = vtrace(log_rhos, rewards, dones, values, bootstrap, 0.9, 0.8, rho_bar, c_bar)
    reference = reference_vtrace(log_rhos, rewards, dones, values, bootstrap, 0.9, 0.8, rho_bar, c_bar)
    for actual, expected in zip(ours, reference):
        assert_close(actual, expected)


@pytest.mark.filterwarnings("error")  # no overflow in exp: the clip comes first
def test_rho_bar_clips_a_huge_ratio():
    rewards, values, dones, bootstrap, log_rhos = random_rollout(0)
    rho_bar, c_bar = 1.5, 0.7
    huge = vtrace(np.full_like(log_rhos, 200.0), rewards, dones, values, bootstrap, 0.9, 0.8, rho_bar, c_bar)
    at_bound = vtrace(
        np.full_like(log_rhos, math.log(rho_bar)), rewards, dones, values, bootstrap, 0.9, 0.8, rho_bar, c_bar
    )
    for actual, expected in zip(huge, at_bound):
        assert_close(actual, expected)
    assert np.isfinite(huge).all()


def test_an_episode_end_stops_every_trace():
    rewards, values, dones, bootstrap, log_rhos = random_rollout(3)
    dones[:] = 0
    dones[4, :] = 1  # every env's episode ends at t=4
    before = vtrace(log_rhos, rewards, dones, values, bootstrap, 0.9, 0.9, rho_bar=2.0, c_bar=2.0)
    rng = np.random.default_rng(7)
    later = np.s_[5:]  # the next episode: its rewards, values and ratios, and the bootstrap
    rewards[later] += rng.standard_normal(rewards[later].shape, dtype=np.float32)
    values[later] += rng.standard_normal(values[later].shape, dtype=np.float32)
    log_rhos[later] += rng.standard_normal(log_rhos[later].shape, dtype=np.float32)
    after = vtrace(log_rhos, rewards, dones, values, bootstrap + 5, 0.9, 0.9, rho_bar=2.0, c_bar=2.0)
    for old, new in zip(before, after):
        np.testing.assert_array_equal(old[:5], new[:5])
        assert (old[5:] != new[5:]).all()  # the change did reach the next episode
