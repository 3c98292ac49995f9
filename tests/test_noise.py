"""What NoisyNet's draws do to the policy, measured over each rollout and written beside the entropy."""

from __future__ import annotations

import csv
import math
import time
from unittest import mock

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from a3c.cli import cli
from a3c.config.settings import Config
from a3c.learn.distributions import NOISE_EFFECTS
from a3c.learn.learner import ActorLearner, RolloutReport
from a3c.learn.noise_scale import NOISE_SCALE_BOUNDS, NOISE_SCALE_STEP, adapted_noise_scale
from a3c.learn.seeding import worker_seeds
from a3c.nets.actor_critic import NoisyLinear
from a3c.parallel.messages import Update
from a3c.run.console import Console
from a3c.run.metrics import MetricsSettings, MetricsWriter


def learner_for(**options) -> ActorLearner:
    # raw observations: the statistics move with each rollout, and these tests replay a rollout's inputs
    config = Config(**{"envs_per_process": 4, "t_max": 8, "hidden_sizes": (16,), "normalize_obs": False, **options})
    torch.manual_seed(0)
    return ActorLearner(config, worker_seeds(config, rank=0))


def test_the_mean_heads_are_the_heads_at_the_noisy_layers_mean_weights():
    learner = learner_for(core="none", sigma_init=0.5)
    played = learner.play_rollout()
    observations = torch.from_numpy(played.steps.observations)
    model = learner.model
    with torch.no_grad():
        acted = model(model.normalize(observations), ())[0]  # the draw the rollout held
        model.eval()
        mean = model(model.normalize(observations), ())[0]
        model.train()
    np.testing.assert_allclose(played.outputs.heads, acted.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(learner.policy.mean_heads(), mean.numpy(), rtol=1e-5, atol=1e-6)
    assert (acted - mean).abs().max().item() > 0.01


def effects(rollouts: int = 6, **options) -> dict[str, float]:
    """The noise's effects averaged over `rollouts` rollouts, a draw each."""
    learner = learner_for(**options)
    reports = [learner.compute_gradient()[1] for _ in range(rollouts)]
    return {name: float(np.mean([getattr(report, name) for report in reports])) for name in NOISE_EFFECTS}


def test_a_rollouts_report_says_what_its_draw_did_to_the_policy():
    silent = effects(sigma_init=0.0)
    assert silent["noise_kl"] == pytest.approx(0.0, abs=1e-7) and silent["noise_flips"] == 0.0
    loud = effects(sigma_init=1.0)
    assert loud["noise_kl"] > 0.05 and 0 < loud["noise_flips"] <= 1 and 0 < loud["noise_consistency"] <= 1
    quiet = effects(sigma_init=0.017)
    assert quiet["noise_kl"] < loud["noise_kl"]
    assert silent["noise_share"] < quiet["noise_share"] < loud["noise_share"] < 1


def test_a_draw_an_env_gives_each_env_its_own_policy_and_is_measured_env_by_env():
    layer = NoisyLinear(3, 2, sigma_init=0.5)
    same_input = torch.ones(4, 3)
    layer.resample_noise()
    assert torch.equal(layer(same_input)[0], layer(same_input)[3])  # one draw for the batch
    layer.resample_noise(rows=4)
    out = layer(same_input)
    assert not torch.allclose(out[0], out[3]) and layer.weight_epsilon.shape == (4, 2, 3)
    learner = learner_for(sigma_init=1.0, noise_draw="env")
    learner.compute_gradient()
    assert learner.model.policy.weight_epsilon.shape[0] == 4  # the learner's 4 envs
    found = effects(sigma_init=1.0, noise_draw="env")  # each env's 8 steps one draw's
    assert found["noise_kl"] > 0.05 and 0 < found["noise_flips"] <= 1 and 0 < found["noise_consistency"] <= 1


def test_a_draw_held_for_an_episode_is_redrawn_only_where_the_episode_ended():
    learner = learner_for(sigma_init=1.0, noise_draw="episode")
    played = learner.play_rollout()
    assert torch.equal(learner.episode_ended, torch.from_numpy(played.steps.restarted.any(axis=0)))
    held = learner.model.policy.weight_epsilon.clone()
    learner.episode_ended = torch.tensor([True, False, False, False])
    learner.play_rollout()
    now = learner.model.policy.weight_epsilon
    assert not torch.equal(now[0], held[0]) and torch.equal(now[1:], held[1:])


@pytest.mark.parametrize("options", [{"noise": False}, {"learner": "torch"}, {"env": "Pendulum-v1"}])
def test_where_the_noise_is_not_measured_the_report_says_nan(options):
    assert all(math.isnan(value) for value in effects(**options).values())


def report(noise_kl: float, replayed: bool = False) -> RolloutReport:
    return RolloutReport(
        0 if replayed else 50, [], [], 0.1, 0.2, 0.7, 1.0, replayed=replayed, noise_kl=noise_kl, noise_flips=0.5
    )


def test_the_metrics_rows_average_the_new_rollouts_noise_and_leave_out_replays(tmp_path):
    settings = MetricsSettings(tmp_path, 100, 1e9, lambda steps, seconds: 0.0, lambda steps, seconds: 1e-3)
    writer = MetricsWriter(settings, time.monotonic(), Console(lambda *args, **kwargs: None))
    for message in (report(0.1), report(9.0, replayed=True), report(0.3)):
        writer.handle(Update(0, message))
    writer.close()
    with open(tmp_path / "metrics.csv", newline="") as file:
        (row,) = csv.DictReader(file)
    assert float(row["noise_kl"]) == pytest.approx(0.2) and float(row["noise_flips"]) == pytest.approx(0.5)
    assert row["noise_consistency"] == "nan"


def test_the_scale_grows_below_the_target_shrinks_above_it_and_stays_within_its_bounds():
    assert adapted_noise_scale(2.0, 0.01, 0.1) == pytest.approx(2.0 * NOISE_SCALE_STEP)
    assert adapted_noise_scale(2.0, 0.5, 0.1) == pytest.approx(2.0 / NOISE_SCALE_STEP)
    assert adapted_noise_scale(2.0, math.nan, 0.1) == 2.0  # a rollout without a valid step measures nothing
    low, high = NOISE_SCALE_BOUNDS
    assert adapted_noise_scale(high, 0.0, 0.1) == high and adapted_noise_scale(low, 9.0, 0.1) == low


def test_a_draw_is_its_scale_times_a_standard_normal_and_a_held_draw_keeps_its_own():
    layer = NoisyLinear(200, 50)
    layer.noise_scale = 3.0
    layer.resample_noise(generator=torch.Generator().manual_seed(1))
    assert layer.weight_epsilon.std().item() == pytest.approx(3.0, rel=0.03)
    layer.noise_scale = 1.0
    plain = NoisyLinear(200, 50)
    plain.resample_noise(generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(layer.weight_epsilon, 3.0 * plain.weight_epsilon)  # the same draw, scaled
    layer.resample_noise(rows=4)
    held = layer.weight_epsilon.clone()
    layer.noise_scale = 10.0
    layer.resample_noise(rows=4, only=torch.tensor([True, False, False, False]))
    assert layer.weight_epsilon[0].std().item() == pytest.approx(10.0, rel=0.05)
    assert torch.equal(layer.weight_epsilon[1:], held[1:])


@pytest.mark.parametrize("target", [0.0, 0.5])
def test_a_kl_target_scales_the_next_draws_until_they_move_the_policy_by_it(target):
    learner = learner_for(noise_kl_target=target)  # sigma 0.017: a draw moves a fresh policy by ~1e-4 nats
    reports = [learner.compute_gradient()[1] for _ in range(120)]
    scales = [report.noise_scale for report in reports]
    if not target:
        assert scales == [1.0] * len(reports) and max(report.noise_kl for report in reports) < 0.01
        return
    assert scales[0] == 1.0 and scales[1] == pytest.approx(NOISE_SCALE_STEP)  # the first draw fell short
    assert learner.model.policy.noise_scale == scales[-1] > 10  # the layers drew the last rollout at its scale
    assert np.mean([report.noise_kl for report in reports[-20:]]) == pytest.approx(target, rel=0.5)


@pytest.mark.parametrize(
    "options, message",
    [
        (["--no-noise"], "nothing to scale"),
        (["--env", "Pendulum-v1"], "one discrete action"),
        (["--learner", "torch"], "numpy learner"),
    ],
)
def test_a_kl_target_where_nothing_measures_the_draws_is_a_usage_error(tmp_path, options, message):
    args = ["--noise-kl-target", "0.1", "--max-steps", "2000", "--run-dir", str(tmp_path / "run"), *options]
    with mock.patch("a3c.cli.exit_now"):  # a run that started anyway returns here, short, instead of exiting pytest
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "run" / "metrics.csv").exists()
