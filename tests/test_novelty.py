"""--novelty-coef: random network distillation's bonus (a3c/nets/novelty.py, a3c/learn/novelty.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from a3c.config.settings import Config
from a3c.envs.make import env_spec
from a3c.errors import ConfigError
from a3c.learn.learner import ActorLearner
from a3c.learn.novelty import arrivals, novelty_bonus, novelty_inputs
from a3c.learn.seeding import worker_seeds
from a3c.nets.factory import build_model
from a3c.nets.novelty import NoveltyNets
from a3c.run.trainer import train

# DeepSea 20 with the bonus: solved within 70k-162k env steps on 8 processes (docs/results, "Novelty on DeepSea")
DEEP_SEA_BUDGET = 300_000


def learner_for(**options) -> ActorLearner:
    config = Config(**{"env": "a3c/DeepSea6-v0", "envs_per_process": 4, "t_max": 6, "novelty_coef": 0.5, **options})
    torch.manual_seed(0)
    return ActorLearner(config, worker_seeds(config, rank=0))


def predictor_slice(learner: ActorLearner) -> slice:
    """Where the predictor's parameters sit in the flat parameters (the novelty's networks are built last)."""
    size = sum(p.numel() for p in learner.model.novelty.predictor.parameters())
    return slice(learner.flat_params.numel() - size, learner.flat_params.numel())


def test_every_build_has_the_same_prior_and_no_optimizer_reaches_it():
    first, second = NoveltyNets(12), NoveltyNets(12)
    for (name, mine), (_, theirs) in zip(first.prior.state_dict().items(), second.prior.state_dict().items()):
        assert torch.equal(mine, theirs), name
    assert not list(first.prior.parameters())  # buffers: checkpointed, never stepped
    model = build_model(Config(env="a3c/DeepSea6-v0", novelty_coef=0.1), env_spec("a3c/DeepSea6-v0"))
    assert model.novelty is not None and "novelty.prior.0.weight" in model.state_dict()
    assert build_model(Config(env="a3c/DeepSea6-v0", novelty_coef=0.0), env_spec("a3c/DeepSea6-v0")).novelty is None


def test_the_error_falls_on_what_the_predictor_is_trained_on_and_stays_on_what_it_is_not():
    nets, cells = NoveltyNets(16), torch.eye(16)
    visited, unvisited = cells[:8], cells[8:]
    before = nets.errors(unvisited).detach().clone()
    optimizer = torch.optim.Adam(nets.predictor.parameters(), lr=1e-3)
    for _ in range(300):
        optimizer.zero_grad()
        nets.errors(visited).mean().backward()
        optimizer.step()
    seen, unseen = nets.errors(visited).detach(), nets.errors(unvisited).detach()
    assert seen.max() < 0.1 * unseen.min()
    assert unseen.mean() > 0.3 * before.mean()  # generalised little to the cells it never saw


def test_a_step_earns_the_error_on_where_it_led_over_the_scale_and_nothing_where_its_episode_ended():
    observations = np.arange(12, dtype=np.float32).reshape(3, 2, 2)  # T=3, B=2, size 2
    next_obs = np.full((2, 2), 99, dtype=np.float32)
    arrived = arrivals(observations, next_obs)
    assert np.array_equal(arrived[0], observations[1]) and np.array_equal(arrived[2], next_obs)
    errors = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    restarted = np.array([[False, True], [False, False], [True, False]])
    bonus = novelty_bonus(errors, 2.0, restarted, coef=0.1)
    assert bonus == pytest.approx(np.array([[0.05, 0.0], [0.15, 0.2], [0.0, 0.3]]))


def test_the_bonus_goes_into_the_rollout_rewards_and_the_predictor_learns_from_new_rollouts_only():
    learner = learner_for(replay_ratio=1.0)
    plain = learner_for(novelty_coef=0.0)
    plain.load_weights(learner.flat_params[: plain.flat_params.numel()])
    played = learner.play_rollout()
    rewards = played.steps.rewards.copy()
    mean_error = learner.add_novelty_bonus(played.steps)
    assert mean_error > 0
    bonus = played.steps.rewards - rewards
    assert (bonus[~played.steps.restarted] > 0).all() and (bonus[played.steps.restarted] == 0).all()
    gradient, report = learner.compute_gradient()
    assert report.novelty > 0 and torch.count_nonzero(gradient[predictor_slice(learner)]) > 0
    replayed, replay_report = learner.replay_gradient()
    assert replay_report.replayed and torch.count_nonzero(replayed[predictor_slice(learner)]) == 0
    assert np.isnan(plain.compute_gradient()[1].novelty)


def test_the_novelty_reads_what_the_network_reads():
    learner = learner_for(normalize_obs=True)
    learner.compute_gradient()  # the statistics move off zero mean and unit variance
    cells = np.eye(36, dtype=np.float32)[:3]
    assert torch.allclose(novelty_inputs(learner.model, cells), learner.model.obs_norm(torch.from_numpy(cells)))


def test_frames_are_refused_with_the_option_named():
    pytest.importorskip("ale_py", reason="the Atari extra (requirements-atari.txt)")
    refusal = r"--novelty-coef reads flat observations only, and ALE/Pong-v5 gives \[4, 84, 84\]"
    with pytest.raises(ConfigError, match=refusal):
        build_model(Config(env="ALE/Pong-v5", novelty_coef=0.1), env_spec("ALE/Pong-v5"))


def test_a_dict_observation_is_refused_with_the_option_named():
    env = "tests.structured_env:FrameAndVector-v0"
    with pytest.raises(ConfigError, match="--novelty-coef reads flat observations only.*a Dict or Tuple"):
        build_model(Config(env=env, novelty_coef=0.1), env_spec(env))
    assert build_model(Config(env=env), env_spec(env)).novelty is None  # auto: none there, and no refusal


def test_a_negative_coefficient_is_refused():
    with pytest.raises(ConfigError, match="novelty-coef"):
        Config(novelty_coef=-0.1)


@pytest.mark.slow  # trains with forked workers
@pytest.mark.timeout(180)
def test_the_defaults_find_a_deep_sea_corner_that_the_noise_alone_does_not(tmp_path, quiet):
    """DeepSea 20: random play finds the corner in 2 of 2^20 episodes, about once in 7M env steps. The
    defaults' auto gives its flat observations the bonus and their normalisation; without the bonus, no."""

    def solved_with(**options) -> tuple[dict, dict]:
        run_dir = tmp_path / f"run-{len(options)}"
        config = Config(
            env="a3c/DeepSea20-v0",
            num_processes=2,
            max_steps=DEEP_SEA_BUDGET,
            seed=0,
            target_return=0.9,
            run_dir=str(run_dir),
            print_interval=60.0,
            tensorboard=False,
            **options,
        )
        summary = train(config, print_fn=quiet).summary
        return summary, json.loads((run_dir / "config.json").read_text())

    found, decided = solved_with()
    assert decided["novelty_coef"] == 0.1 and decided["normalize_obs"] is True  # recorded as decided
    assert found["solved"] is True and found["confirmed_return"] >= 0.9, found
    assert solved_with(novelty_coef=0.0)[0]["solved"] is False
