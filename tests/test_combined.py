"""Dict and Tuple observations in the network (a3c/nets/structured.py): the parts split again and encoded as fits
each, statistics for the Box parts only, a user's module reading a dict, the autograd learner."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from a3c.config.settings import Config, ConfigError
from a3c.envs.make import env_spec, make_env
from a3c.learn.learner import ActorLearner
from a3c.learn.policies import TorchPolicy
from a3c.learn.seeding import worker_seeds
from a3c.nets.factory import build_model
from a3c.nets.structured import CombinedFeatures, PartsNorm, StructuredActorCritic
from a3c.nets.user import UserNetwork

FRAME_AND_VECTOR = "tests.structured_env:FrameAndVector-v0"  # Dict: a uint8 frame [1, 6, 6] and a Box of 2
CUE_AND_BIT = "tests.structured_env:CueAndBit-v0"  # Tuple: a Discrete(3) and a MultiBinary(1)


def observations(env_id: str, count: int) -> torch.Tensor:
    env = make_env(env_id)
    return torch.from_numpy(np.stack([env.reset(seed=seed)[0] for seed in range(count)]))


def test_frames_go_through_the_convnet_and_the_other_parts_beside_them():
    spec = env_spec(FRAME_AND_VECTOR)
    features = CombinedFeatures(spec.obs_parts)
    flat = observations(FRAME_AND_VECTOR, 5)
    convnet = features.frames["0"]
    expected = torch.cat([convnet(flat[:, :36].reshape(5, 1, 6, 6)), flat[:, 36:]], dim=1)
    assert features.size == 16 * 4 * 4 + 2 and convnet[1][0].kernel_size == (3, 3)  # MinAtar's, for small frames
    assert_close(features(flat), expected)
    assert features(flat)[:, :-2].abs().sum() > 0


def test_only_the_box_parts_are_normalised():
    spec = env_spec(FRAME_AND_VECTOR)
    norm = PartsNorm(spec.obs_parts)
    flat = observations(FRAME_AND_VECTOR, 8)
    norm.update(flat)
    normalised = norm(flat)
    assert torch.equal(normalised[:, :36], flat[:, :36])  # the frame's pixels, which the convnet scales
    std = torch.sqrt(norm.var[36:] + 1e-8)
    assert_close(normalised[:, 36:], ((flat[:, 36:] - norm.mean[36:]) / std).float())
    assert not torch.equal(normalised[:, 36:], flat[:, 36:])
    assert list(norm.state_dict()) == ["count", "mean", "var"]  # as a RunningNorm's: checkpoints and sync alike


@pytest.mark.parametrize("options", [{}, {"normalize_obs": True, "core": "none"}])
def test_the_stock_network_trains_a_dict_observation_with_autograd(options):
    config = Config(env=FRAME_AND_VECTOR, envs_per_process=4, t_max=5, max_grad_norm=1e9, **options)
    learner = ActorLearner(config, worker_seeds(config, rank=0))
    assert isinstance(learner.model, StructuredActorCritic) and isinstance(learner.policy, TorchPolicy)
    assert isinstance(learner.model.obs_norm, PartsNorm) == bool(options)
    grad, report = learner.compute_gradient()
    assert report.env_steps == 20 and torch.isfinite(grad).all()
    convnet = learner.model.encoder[0].frames["0"][1][0]
    assert convnet.weight.grad.abs().sum() > 0  # the frame part is learned from


def test_the_numpy_learner_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="--learner numpy runs flat observations and frames only"):
        build_model(Config(env=CUE_AND_BIT, learner="numpy"), env_spec(CUE_AND_BIT))


def test_a_users_module_reads_each_part_by_key_a_discrete_one_hot():
    spec = env_spec(CUE_AND_BIT)
    model = build_model(Config(env=CUE_AND_BIT, model="tests.user_models:parts"), spec)
    assert isinstance(model, UserNetwork)
    seen = {}
    model.net.register_forward_pre_hook(lambda module, args: seen.update(args[0]))
    flat = observations(CUE_AND_BIT, 6)
    head, value, _ = model(flat, ())
    assert head.shape == (6, 3) and value.shape == (6,)
    assert sorted(seen) == ["0", "1"] and seen["0"].shape == (6, 3) and seen["1"].shape == (6, 1)
    assert (seen["0"].sum(dim=1) == 1).all() and torch.equal(torch.cat([seen["0"], seen["1"]], 1), flat)
