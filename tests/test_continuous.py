"""Continuous actions: the Gaussian policy's math, clipping, and learning a continuous task."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.distributions import Normal
from torch.testing import assert_close

from a3c.config.settings import Config
from a3c.envs.make import env_spec
from a3c.learn.distributions import Categorical, Gaussian
from a3c.learn.learner import ActorLearner
from a3c.learn.seeding import worker_seeds
from a3c.nets.factory import build_model
from a3c.run.trainer import train

CONTINUOUS_CUE = "tests.cue_env:ContinuousCue-v0"


def test_gaussian_log_prob_and_entropy_match_torch_normal():
    torch.manual_seed(0)
    mean = torch.randn(5, 3, 2)
    log_std = torch.tensor([-0.5, 0.3])
    actions = torch.randn(5, 3, 2).numpy()
    log_probs, entropy = Gaussian().log_prob_entropy(mean.numpy(), log_std.numpy(), actions)
    reference = Normal(mean, log_std.exp())
    assert_close(torch.from_numpy(log_probs), reference.log_prob(torch.from_numpy(actions)).sum(-1))
    assert_close(torch.from_numpy(entropy), reference.entropy().sum(-1))


def test_categorical_log_prob_and_entropy_match_torch_categorical():
    torch.manual_seed(0)
    logits = torch.randn(4, 3, 5)
    actions = torch.randint(0, 5, (4, 3)).numpy()
    log_probs, entropy = Categorical().log_prob_entropy(logits.numpy(), None, actions)
    reference = torch.distributions.Categorical(logits=logits)
    assert_close(torch.from_numpy(log_probs), reference.log_prob(torch.from_numpy(actions)))
    assert_close(torch.from_numpy(entropy), reference.entropy())


def test_gaussian_samples_have_the_head_mean_and_the_learned_std():
    mean = np.tile(np.array([[1.0, -2.0]], dtype=np.float32), (20_000, 1))
    log_std = np.array([np.log(0.5), np.log(2.0)], dtype=np.float32)
    samples = Gaussian().sample(mean, log_std, np.random.default_rng(0))
    assert samples.dtype == np.float32 and samples.shape == (20_000, 2)
    assert np.allclose(samples.mean(axis=0), [1.0, -2.0], atol=0.05)
    assert np.allclose(samples.std(axis=0), [0.5, 2.0], atol=0.05)
    assert np.array_equal(Gaussian().greedy(mean[:1]), [[1.0, -2.0]])


def test_a_bounded_gaussian_keeps_its_mean_inside_the_bounds():
    gaussian = Gaussian(np.array([-2.0, 0.0], dtype=np.float32), np.array([2.0, 1.0], dtype=np.float32))
    head = np.array([[-50.0, 50.0], [0.0, 0.0], [0.5, -0.5]], dtype=np.float32)
    assert np.allclose(gaussian.mean(head)[:2], [[-2.0, 1.0], [0.0, 0.5]])
    assert np.array_equal(gaussian.greedy(head[:1]), [[-2.0, 1.0]])
    log_std = np.zeros(2, dtype=np.float32)
    actions = np.array([[3.0, 0.2]] * 3, dtype=np.float32)
    log_probs, _ = gaussian.log_prob_entropy(head, log_std, actions)
    reference = Normal(torch.from_numpy(gaussian.mean(head)), 1.0).log_prob(torch.from_numpy(actions)).sum(-1)
    assert_close(torch.from_numpy(log_probs), reference)
    d_head, _ = gaussian.backward(head, log_std, actions, np.ones(3, np.float32), np.zeros(3, np.float32))
    assert np.abs(d_head[2]).min() > 0  # the mean learns through the squashing


def limited_gaussian() -> Gaussian:
    """Bounds [-2, 2] and [0, 1]: ceilings of log 2 and log 0.5 on the log std."""
    return Gaussian(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32), limit_std=True)


def test_a_limited_gaussian_samples_and_scores_with_the_std_under_half_the_range():
    gaussian = limited_gaussian()
    log_std = np.array([3.0, np.log(0.2)], dtype=np.float32)  # the first above its ceiling, the second under
    head = np.zeros((20_000, 2), dtype=np.float32)
    samples = gaussian.sample(head, log_std, np.random.default_rng(0))
    assert np.allclose(samples.std(axis=0), [2.0, 0.2], atol=0.05)
    actions = samples[:5]
    log_probs, entropy = gaussian.log_prob_entropy(head[:5], log_std, actions)
    reference = Normal(torch.tensor([0.0, 0.5]), torch.tensor([2.0, 0.2]))
    assert_close(torch.from_numpy(log_probs), reference.log_prob(torch.from_numpy(actions)).sum(-1))
    assert_close(torch.from_numpy(entropy), reference.entropy().sum().expand(5))


def test_the_std_limit_stops_the_log_std_climbing_past_its_ceiling_but_lets_it_come_down():
    gaussian, head = limited_gaussian(), np.zeros((4, 2), dtype=np.float32)
    actions = np.tile(np.array([[0.0, 0.5]], np.float32), (4, 1))  # at the mean: the log-prob asks for less std
    at_ceiling = np.log(np.array([2.0, 0.5], np.float32)) + 0.1
    no_log_prob, entropy_bonus = np.zeros(4, np.float32), -np.ones(4, np.float32)  # d loss / d entropy < 0
    _, d_log_std = gaussian.backward(head, at_ceiling, actions, no_log_prob, entropy_bonus)
    assert np.array_equal(d_log_std, [0.0, 0.0])  # the bonus alone would raise it: held
    _, d_log_std = gaussian.backward(head, at_ceiling, actions, -np.ones(4, np.float32), no_log_prob)
    assert (d_log_std > 0).all()  # the log-prob of actions at the mean lowers it: passed on
    under = at_ceiling - 1.0
    _, limited = gaussian.backward(head, under, actions, no_log_prob, entropy_bonus)
    _, free = Gaussian(np.array([-2.0, 0.0]), np.array([2.0, 1.0])).backward(
        head, under, actions, no_log_prob, entropy_bonus
    )
    assert np.array_equal(limited, free) and (limited < 0).all()  # under the ceiling nothing changes


def test_an_entropy_bonus_alone_drives_a_limited_std_to_the_range_and_no_further():
    gaussian, head = limited_gaussian(), np.zeros((1, 2), dtype=np.float32)
    log_std = torch.zeros(2, requires_grad=True)
    optimizer = torch.optim.Adam([log_std], lr=0.05)
    for _ in range(400):
        actions = gaussian.sample(head, log_std.detach().numpy(), np.random.default_rng(0))
        _, d_log_std = gaussian.backward(head, log_std.detach().numpy(), actions, np.zeros(1), -np.ones(1))
        log_std.grad = torch.from_numpy(d_log_std)
        optimizer.step()
    assert np.allclose(np.exp(gaussian.effective_log_std(log_std.detach().numpy())), [2.0, 0.5])
    # the parameter stays where it was or near its ceiling: Adam's momentum carries it some ten steps of lr past
    assert (log_std.detach().numpy() < np.maximum(0.0, np.log([2.0, 0.5])) + 12 * 0.05).all()


def test_an_unbounded_gaussian_uses_the_head_as_its_mean():
    head = np.array([[-50.0, 3.0]], dtype=np.float32)
    unbounded = Gaussian(np.array([-np.inf, 0.0]), np.array([np.inf, 1.0]))
    assert np.array_equal(unbounded.mean(head), head)


def test_box_actions_are_clipped_to_the_bounds_for_the_env_only():
    spec = env_spec("Pendulum-v1")
    assert spec.continuous and spec.num_actions == 1
    actions = np.array([[-5.0], [0.5], [7.0]], dtype=np.float32)
    assert np.array_equal(spec.env_actions(actions), [[-2.0], [0.5], [2.0]])
    assert np.array_equal(actions, [[-5.0], [0.5], [7.0]])  # the sample itself is kept for the loss


@pytest.mark.parametrize("model", ["", "tests.user_models:mlp"])
def test_the_gaussian_starts_from_log_std_init_in_the_stock_network_and_a_users(model):
    spec = env_spec("Pendulum-v1")
    network = build_model(Config(env="Pendulum-v1", model=model, log_std_init=-0.5), spec)
    assert torch.equal(network.log_std.detach(), torch.full((1,), -0.5))
    assert torch.equal(build_model(Config(env="Pendulum-v1", model=model), spec).log_std.detach(), torch.zeros(1))


@pytest.mark.parametrize("noise", [True, False])
def test_a_small_policy_init_scale_starts_the_mean_at_the_centre_in_every_state(noise):
    spec = env_spec("Pendulum-v1")
    observations = torch.randn(64, *spec.obs_shape) * 3

    def head_spread(**options) -> float:
        torch.manual_seed(0)
        network = build_model(Config(env="Pendulum-v1", noise=noise, **options), spec).eval()
        head, _, _ = network(observations, network.initial_state(64))
        return float(head.abs().max())

    assert head_spread() > 0.05  # the default init: a mean that differs from state to state
    assert head_spread(policy_init_scale=0.01) < 0.01 * head_spread() + 1e-6  # the weights x 0.01, no bias


def test_a_pendulum_rollout_gives_a_finite_gradient_for_every_parameter():
    torch.manual_seed(0)
    config = Config(env="Pendulum-v1", envs_per_process=3, t_max=8, max_grad_norm=1e9)
    learner = ActorLearner(config, worker_seeds(config, rank=0))
    grad, report = learner.compute_gradient()
    assert report.env_steps == 24 and torch.isfinite(grad).all()
    assert learner.model.log_std.grad.abs().sum() > 0  # the std is learned
    for name, param in learner.model.named_parameters():
        assert param.grad.abs().sum() > 0, name


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_continuous_task_is_learned(tmp_path, quiet):
    config = Config(
        env=CONTINUOUS_CUE,
        num_processes=2,
        envs_per_process=8,
        t_max=5,
        hidden_sizes=(32,),
        max_steps=150_000,
        eval_interval=0.2,
        eval_episodes=20,
        print_interval=60.0,
        tensorboard=False,
        run_dir=str(tmp_path / "run"),
    )
    summary = train(config, print_fn=quiet).summary
    # random play (std 1 around a random mean) earns about -1.3; the optimum earns 0
    assert summary["best_eval_return"] > -0.05, summary
