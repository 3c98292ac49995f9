"""NoisyLinear and ActorCritic (a3c.nets.actor_critic)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from a3c.config.settings import Config
from a3c.envs.spec import EnvSpec
from a3c.learn.policies import NumpyPolicy, TorchPolicy
from a3c.nets.actor_critic import ActorCritic, NoisyLinear, ScaleFrames, StockOptions
from a3c.nets.factory import build_model
from a3c.nets.flat import attach_flat_gradient


def make_layer(in_features=16, out_features=8, sigma_init=0.017, seed=0) -> NoisyLinear:
    torch.manual_seed(seed)
    return NoisyLinear(in_features, out_features, sigma_init)


def test_noisy_linear_init_mu_uniform_within_bound_and_sigma_constant():
    in_features, out_features, sigma = 16, 64, 0.017
    layer = make_layer(in_features, out_features, sigma)
    bound = math.sqrt(3.0 / in_features)
    for mu in (layer.weight_mu, layer.bias_mu):
        assert mu.abs().max() <= bound
    # uniform over the whole interval, not a narrower one: 1024 draws reach near both ends
    assert layer.weight_mu.max() > 0.9 * bound and layer.weight_mu.min() < -0.9 * bound
    assert torch.all(layer.weight_sigma == sigma) and torch.all(layer.bias_sigma == sigma)
    assert layer.weight_sigma.shape == (out_features, in_features) and layer.bias_sigma.shape == (out_features,)


def test_noisy_linear_sigma_init_is_configurable():
    layer = make_layer(sigma_init=0.3)
    assert torch.all(layer.weight_sigma == 0.3) and torch.all(layer.bias_sigma == 0.3)


def test_noisy_linear_eval_mode_is_the_mean_path_and_ignores_resampling():
    layer = make_layer()
    layer.eval()
    x = torch.randn(5, 16)
    before = layer(x)
    assert_close(before, F.linear(x, layer.weight_mu, layer.bias_mu), rtol=0, atol=0)
    layer.resample_noise()
    assert torch.equal(layer(x), before)
    assert torch.equal(layer(x), before)


def test_noisy_linear_train_mode_output_changes_only_when_noise_is_resampled():
    layer = make_layer(sigma_init=0.5)
    layer.train()
    x = torch.randn(5, 16)
    layer.resample_noise()
    first = layer(x)
    assert torch.equal(layer(x), first)  # the noise stays fixed for a whole rollout
    assert not torch.allclose(first, F.linear(x, layer.weight_mu, layer.bias_mu))  # noise is applied
    layer.resample_noise()
    second = layer(x)
    assert not torch.allclose(first, second)


def test_noisy_linear_train_mode_uses_mu_plus_sigma_times_independent_noise():
    layer = make_layer(sigma_init=0.5)
    layer.resample_noise()
    x = torch.randn(3, 16)
    weight = layer.weight_mu + layer.weight_sigma * layer.weight_epsilon
    bias = layer.bias_mu + layer.bias_sigma * layer.bias_epsilon
    assert_close(layer(x), F.linear(x, weight, bias))
    # independent noise: one draw per weight, not a factorised outer product (rank 1)
    assert torch.linalg.matrix_rank(layer.weight_epsilon) > 1


def test_noisy_linear_gradient_reaches_mu_and_sigma():
    layer = make_layer(sigma_init=0.5)
    layer.resample_noise()
    layer(torch.randn(4, 16)).sum().backward()
    for param in (layer.weight_mu, layer.bias_mu, layer.weight_sigma, layer.bias_sigma):
        assert param.grad is not None and param.grad.abs().sum() > 0


def test_resample_noise_with_a_generator_is_reproducible():
    layer = make_layer(sigma_init=0.5)
    x = torch.randn(2, 16)
    layer.resample_noise(torch.Generator().manual_seed(5))
    first = layer(x)
    layer.resample_noise(torch.Generator().manual_seed(6))
    assert not torch.allclose(layer(x), first)
    layer.resample_noise(torch.Generator().manual_seed(5))
    assert torch.equal(layer(x), first)


def test_actor_critic_without_noise_uses_plain_linear_heads():
    model = build_model(Config(noise=False, hidden_sizes=(32,)), EnvSpec((4,), 3, 0, None))
    assert type(model.policy) is nn.Linear and type(model.value) is nn.Linear
    assert not any(isinstance(m, NoisyLinear) for m in model.modules())
    # and resampling is harmless: the output does not change
    obs, state = torch.randn(2, 4), model.initial_state(2)
    before = model(obs, state)[0]
    model.resample_noise()
    assert torch.equal(model(obs, state)[0], before)


def test_actor_critic_with_noise_uses_noisy_heads_with_the_configured_sigma():
    model = build_model(Config(noise=True, sigma_init=0.05, hidden_sizes=(32,)), EnvSpec((4,), 3, 0, None))
    assert isinstance(model.policy, NoisyLinear) and isinstance(model.value, NoisyLinear)
    assert torch.all(model.policy.weight_sigma == 0.05)


@pytest.mark.parametrize("noise", [True, False])
def test_actor_critic_forward_shapes_with_batch_and_lstm_state(noise):
    torch.manual_seed(0)
    batch, obs_size, num_actions, hidden = 5, 4, 3, 16
    model = ActorCritic(obs_size, num_actions, StockOptions(hidden_sizes=(hidden,), noisy=noise))
    state = model.initial_state(batch)
    assert state[0].shape == state[1].shape == (batch, hidden)
    assert torch.count_nonzero(state[0]) == 0 and torch.count_nonzero(state[1]) == 0
    model.resample_noise()
    obs = torch.randn(batch, obs_size)
    logits, value, (hx, cx) = model(obs, state)
    assert logits.shape == (batch, num_actions)
    assert value.shape == (batch,)
    assert hx.shape == cx.shape == (batch, hidden)
    # the recurrent state matters: the same observation with the new state gives other outputs
    logits2, value2, _ = model(obs, (hx, cx))
    assert not torch.allclose(logits, logits2) or not torch.allclose(value, value2)


def test_actor_critic_rows_of_a_batch_are_independent():
    torch.manual_seed(0)
    model = ActorCritic(4, 3, StockOptions(hidden_sizes=(16,), noisy=True))
    model.resample_noise()
    obs = torch.randn(3, 4)
    logits, value, _ = model(obs, model.initial_state(3))
    logits1, value1, _ = model(obs[1:2], model.initial_state(1))
    assert_close(logits[1:2], logits1)
    assert_close(value[1:2], value1)


@pytest.mark.parametrize("policy_type", ["numpy", "torch"])
def test_the_own_critics_value_trains_its_encoder_and_head_only(policy_type):
    """--critic own: the value's gradient reaches the critic's encoder and the value head, never the
    policy's encoder, LSTM or head, though the value reads the LSTM's output (over a rollout, through
    either learner's backward pass)."""
    torch.manual_seed(0)
    model = ActorCritic(4, 3, StockOptions(hidden_sizes=(16,), own_critic=True))
    model.resample_noise()  # the noise scales' gradients are the noise times the means'
    attach_flat_gradient(model)
    policy = (NumpyPolicy if policy_type == "numpy" else TorchPolicy)(model)
    state = policy.begin_rollout(policy.initial_state(2))
    for obs in np.random.default_rng(0).standard_normal((5, 2, 4)).astype(np.float32):
        _, value, state = policy.act(obs, state)
    d_values = np.ones((5, 2), dtype=np.float32)
    policy.backward(np.zeros((5, 2, 3), dtype=np.float32), d_values, None, np.zeros((5, 2), dtype=bool))
    for name, param in model.named_parameters():
        trained = name.startswith(("critic_encoder.", "value."))
        assert (torch.count_nonzero(param.grad) > 0) == trained, name


def breakout_like_frames(count: int, generator: torch.Generator) -> torch.Tensor:
    """Mostly black frames: a band of bricks in every one, a ball and a paddle where they differ."""
    frames = torch.zeros(count, 4, 84, 84, dtype=torch.uint8)
    frames[:, :, 10:20, :] = 142
    for frame in frames:
        row, column = torch.randint(20, 78, (2,), generator=generator).tolist()
        frame[:, row : row + 3, column : column + 3] = 200
        frame[:, 80:82, column // 2 : column // 2 + 12] = 200
    return frames


def minatar_like_frames(count: int, generator: torch.Generator) -> torch.Tensor:
    return (torch.rand(count, 4, 10, 10, generator=generator) < 0.05).to(torch.uint8) * 255


@pytest.mark.parametrize(
    "obs_shape, width, make_frames, min_signal",
    [((4, 84, 84), 256, breakout_like_frames, 0.02), ((4, 10, 10), 128, minatar_like_frames, 0.1)],
)
def test_a_frames_encoder_starts_with_its_output_varying_with_the_frame(obs_shape, width, make_frames, min_signal):
    # PyTorch's default init gave Breakout's frames an output of rms 0.02 of which 0.0015 varied with the
    # frame (MinAtar's: 0.04 and 0.02); the LSTM read a constant and its gates saturated on it
    torch.manual_seed(0)
    model = ActorCritic(obs_shape, 4, StockOptions(hidden_sizes=(width,), core="lstm"))
    with torch.no_grad():
        features = model.encoder(make_frames(256, torch.Generator().manual_seed(1)))
    assert features.pow(2).mean().sqrt() > 0.15
    assert features.std(dim=0).mean() > min_signal  # the part that tells one frame from another
    for layer in model.encoder.modules():
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            assert torch.count_nonzero(layer.bias) == 0  # no constant for the frames to drown in


def pong_like_frames(count: int, generator: torch.Generator) -> torch.Tensor:
    """A grey field between two white walls: a 2-pixel ball and the agent's paddle where the frames differ."""
    frames = torch.full((count, 4, 84, 84), 87, dtype=torch.uint8)
    frames[:, :, :6, :] = frames[:, :, 78:, :] = 236
    for frame in frames:
        row, column, paddle = torch.randint(8, 74, (3,), generator=generator).tolist()
        frame[:, row : row + 2, column] = 236
        frame[:, paddle : paddle + 8, 76:78] = 147
    return frames


def frame_varying_share(center_frames: bool) -> float:
    """The part of a fresh encoder's output that tells Pong-like frames apart, over its rms."""
    torch.manual_seed(0)
    model = ActorCritic((4, 84, 84), 6, StockOptions(hidden_sizes=(256,), center_frames=center_frames))
    with torch.no_grad():
        features = model.encoder(pong_like_frames(256, torch.Generator().manual_seed(1)))
    return (features.std(dim=0).mean() / features.pow(2).mean().sqrt()).item()


def test_centred_frames_lift_a_small_object_out_of_a_bright_background():
    # the grey's level passes the convolutions as a constant most of the output is made of (about 98%
    # here); each frame less its mean leaves the ball and the paddle
    assert frame_varying_share(center_frames=False) < 0.03
    assert frame_varying_share(center_frames=True) > 0.045


def test_centred_frames_are_each_frame_less_its_own_mean():
    frames = torch.randint(0, 256, (3, 4, 10, 12), dtype=torch.uint8)
    scaled = frames.float() / 255
    torch.testing.assert_close(ScaleFrames()(frames), scaled)
    centred = ScaleFrames(center=True)(frames)
    torch.testing.assert_close(centred, scaled - scaled.mean(dim=(-2, -1), keepdim=True))
    assert centred.mean(dim=(-2, -1)).abs().max() < 1e-6 and frames.dtype == torch.uint8  # the input untouched


def test_one_frame_reads_the_newest_of_the_stack_and_nothing_older():
    torch.manual_seed(0)
    model = ActorCritic((4, 84, 84), 6, StockOptions(hidden_sizes=(256,), frames=1))
    frames = pong_like_frames(8, torch.Generator().manual_seed(2))
    older_changed, newest_changed = frames.clone(), frames.clone()
    older_changed[:, :3] = 255 - older_changed[:, :3]
    newest_changed[:, 3] = 255 - newest_changed[:, 3]
    with torch.no_grad():
        features = model.encoder(frames)
        assert torch.equal(model.encoder(older_changed), features)
        assert not torch.allclose(model.encoder(newest_changed), features)
    assert model.encoder[1][0].in_channels == 1


def test_the_small_convnet_sees_atari_frames_as_frames_resized_to_42_by_area():
    torch.manual_seed(0)
    model = ActorCritic((4, 84, 84), 6, StockOptions(hidden_sizes=(256,), convnet="small"))
    frames = pong_like_frames(8, torch.Generator().manual_seed(2))
    convs = model.encoder[1]
    resized = F.interpolate(frames.float() / 255, size=(42, 42), mode="area")
    with torch.no_grad():
        seen = convs(ScaleFrames()(frames))
        assert_close(seen, convs[1:](resized))  # [1:]: past the 2 x 2 average
    assert seen.shape == (8, 32 * 3 * 3) and model.encoder[2].in_features == 32 * 3 * 3


def test_the_small_convnet_leaves_frames_under_64_pixels_as_they_are():
    model = ActorCritic((4, 42, 42), 6, StockOptions(convnet="small"))
    assert not any(isinstance(layer, nn.AvgPool2d) for layer in model.encoder.modules())
    assert model.encoder[2].in_features == 32 * 3 * 3
