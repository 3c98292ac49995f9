"""Observation normalisation: running statistics, shared by the workers, saved with the weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from a3c.config.settings import Config
from a3c.learn.checkpoint import load_checkpoint
from a3c.learn.policies import NumpyPolicy, TorchPolicy
from a3c.nets.actor_critic import ActorCritic, RunningNorm, StockOptions
from a3c.run.trainer import train


def test_running_statistics_equal_those_of_all_batches_seen():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=(n, 4)) for n in (5, 1, 17, 8)]
    norm = RunningNorm((4,))
    for batch in batches:
        norm.update(torch.from_numpy(batch))
    everything = np.concatenate(batches)
    assert norm.count.item() == len(everything)
    assert_close(norm.mean.numpy(), everything.mean(0))
    assert_close(norm.var.numpy(), everything.var(0))


def test_normalised_observations_are_centred_scaled_and_clipped():
    norm = RunningNorm((2,), clip=5.0)
    norm.update(torch.tensor([[0.0, 10.0], [2.0, 30.0]]))  # mean (1, 20), std (1, 10)
    out = norm(torch.tensor([[1.0, 40.0], [101.0, 20.0]]))
    assert out.dtype == torch.float32
    assert_close(out, torch.tensor([[0.0, 2.0], [5.0, 0.0]]))  # 100 standard deviations clip to 5


def test_the_model_sees_normalised_observations_and_saves_the_statistics():
    model = ActorCritic(3, 2, StockOptions(hidden_sizes=(8,), noisy=True, normalize_obs=True))
    model.obs_norm.update(torch.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]))
    assert {"obs_norm.count", "obs_norm.mean", "obs_norm.var"} <= set(model.state_dict())
    shifted = ActorCritic(3, 2, StockOptions(hidden_sizes=(8,), noisy=True, normalize_obs=False))
    shifted.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("obs_norm")})
    model.eval(), shifted.eval()
    obs = torch.tensor([[2.0, 5.0, 2.0]])
    with torch.no_grad():
        expected = shifted(model.obs_norm(obs), shifted.initial_state(1))[0]
    for policy in (NumpyPolicy(model), TorchPolicy(model)):  # what every policy feeds the network
        state = policy.begin_rollout(policy.initial_state(1))
        assert_close(torch.from_numpy(policy.act(obs.numpy(), state, record=False)[0]), expected)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_workers_share_and_checkpoint_the_statistics(tmp_path, quiet):
    run_dir = tmp_path / "run"
    config = Config(
        env="tests.cue_env:Cue-v0",
        num_processes=2,
        envs_per_process=4,
        t_max=5,
        hidden_sizes=(16,),
        max_steps=4000,
        eval_episodes=0,
        normalize_obs=True,
        tensorboard=False,
        run_dir=str(run_dir),
    )
    summary = train(config, print_fn=quiet).summary
    saved = load_checkpoint(run_dir / "checkpoints" / "last.pt")["model"]
    # both workers fed the one shared counter: about every observation of the run was seen
    assert 0.9 * summary["env_steps"] <= saved["obs_norm.count"].item() <= summary["env_steps"] + 8
    # one-hot cues: the mean sums to 1, exactly unless the two workers' updates raced (Hogwild: a read of
    # the mean torn by the other's write, seen once in about 20 runs, off by 0.005)
    assert_close(saved["obs_norm.mean"].sum().item(), 1.0, atol=0.02, rtol=0)
