"""The torch networks: NoisyLinear, observation statistics, and the stock recurrent ActorCritic.

Every network the trainer runs is a `Network`: it maps a batch of (normalised) inputs
and a recurrent state to the policy head, the state value and the next state. The
trainer adds the rest around it: the observation statistics (`obs_norm`) and, for a
Box action space, the Gaussian's state-independent log standard deviation
(`log_std`). A user's own module is wrapped into one (a3c/nets/user.py); a3c/nets/factory.py builds them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn

from a3c.nets.precision import Convolutions

State = tuple[torch.Tensor, ...]  # (hidden, cell) of an LSTM core; () for a feed-forward network


class NoisyLinear(nn.Module):
    """Linear layer with independent Gaussian parameter noise (Fortunato et al., 2018).

    The paper's A3C variant: every weight has its own noise, mu ~ U(+-sqrt(3/p)),
    sigma starts at sigma_init (0.017). The noise stays fixed until
    resample_noise() is called (once per rollout); in eval() mode the layer
    uses the mean weights only. A draw serves every row of the input, or, drawn with `rows`, each row
    of a batch of that many has its own (an env each: --noise-draw env).
    """

    def __init__(self, in_features: int, out_features: int, sigma_init: float = 0.017):
        super().__init__()
        bound = math.sqrt(3.0 / in_features)
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.bias_mu = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.weight_sigma = nn.Parameter(torch.full((out_features, in_features), sigma_init))
        self.bias_sigma = nn.Parameter(torch.full((out_features,), sigma_init))
        self.register_buffer("weight_epsilon", torch.zeros(out_features, in_features), persistent=False)
        self.register_buffer("bias_epsilon", torch.zeros(out_features), persistent=False)
        self.noise_scale = 1.0  # each new draw's epsilon times this (--noise-kl-target: a3c/learn/noise_scale.py)

    def resample_noise(
        self, generator: torch.Generator | None = None, rows: int | None = None, only: torch.Tensor | None = None
    ) -> None:
        """A new draw: one for all rows (`rows` None), or one for each row of a batch of `rows`; with `only`
        [rows] (bool), for those rows alone, the others keeping theirs."""
        shape = self.weight_mu.shape if rows is None else (rows, *self.weight_mu.shape)
        if self.weight_epsilon.shape != shape:
            self.weight_epsilon, self.bias_epsilon = torch.empty(shape), torch.empty(shape[:-1])
            only = None  # nothing to keep yet
        if only is None:
            self.weight_epsilon.normal_(generator=generator).mul_(self.noise_scale)
            self.bias_epsilon.normal_(generator=generator).mul_(self.noise_scale)
        elif only.any():
            count = int(only.sum())
            self.weight_epsilon[only] = torch.randn(count, *shape[1:], generator=generator) * self.noise_scale
            self.bias_epsilon[only] = torch.randn(count, *shape[1:-1], generator=generator) * self.noise_scale

    def effective_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The weight and bias applied: the means in eval mode, plus the current noise in training mode
        ([rows, out, in] and [rows, out] with a draw a row)."""
        if not self.training:
            return self.weight_mu, self.bias_mu
        return (
            torch.addcmul(self.weight_mu, self.weight_sigma, self.weight_epsilon),
            torch.addcmul(self.bias_mu, self.bias_sigma, self.bias_epsilon),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.effective_weights()
        if weight.dim() == 2:
            return F.linear(x, weight, bias)
        return torch.einsum("bi,boi->bo", x, weight) + bias  # row b through its own draw


class ScaleFrames(nn.Module):
    """uint8 pixels travel and are stored as bytes; the network sees floats in [0, 1], or with `center` each
    frame less its own mean: a bright background's level, which drowned Pong's ball in the first
    convolution's sums, removed (docs/design/choices.md, "Centred frames"). With `newest` only the last
    `newest` of the stacked frames go on (0: all)."""

    def __init__(self, center: bool = False, newest: int = 0):
        super().__init__()
        self.center, self.newest = center, newest

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        if self.newest:
            frames = frames[..., -self.newest :, :, :]
        scaled = frames.to(torch.float32, copy=True).mul_(1.0 / 255.0)  # in place on the copy: one pass fewer
        if self.center:
            scaled -= scaled.mean(dim=(-2, -1), keepdim=True)
        return scaled


def mlp(in_features: int, hidden_sizes: tuple[int, ...]) -> list[nn.Module]:
    """Linear + ReLU for each width of `hidden_sizes`."""
    layers = []
    for width in hidden_sizes:
        layers += [nn.Linear(in_features, width), nn.ReLU()]
        in_features = width
    return layers


SMALL_FRAMES = 32  # pixels: frames under this side (MinAtar's 10 x 10) are too small for the A3C convnet
POOLED_FRAMES = 64  # pixels: the small convnet averages frames of this side or more 2 x 2 (Atari's 84 to 42)


def convolutions(channels: int, side: int, convnet: str, bfloat16: bool) -> Convolutions:
    """The convolutions for frames of `channels` x `side` pixels: for small frames the MinAtar paper's (one
    3x3 convolution of 16 channels); else `convnet`: "a3c", the A3C paper's (8x8 stride 4, then 4x4 stride
    2), or "small", the common A3C reimplementations' four 3x3 stride-2 convolutions of 32 on 42 x 42 frames
    (Atari's 84 x 84 averaged 2 x 2 in the network: the same as resizing to 42 by area, and the env's frames
    stay as they are): on a CPU a quarter of the work a sample and a ninth of the features to the MLP."""
    if side < SMALL_FRAMES:
        return Convolutions(nn.Conv2d(channels, 16, 3), nn.ReLU(), nn.Flatten(), bfloat16=bfloat16)
    if convnet == "small":
        pool = [nn.AvgPool2d(2)] if side >= POOLED_FRAMES else []
        layers = []
        for index in range(4):
            layers += [nn.Conv2d(channels if index == 0 else 32, 32, 3, stride=2, padding=1), nn.ReLU()]
        return Convolutions(*pool, *layers, nn.Flatten(), bfloat16=bfloat16)
    return Convolutions(
        nn.Conv2d(channels, 16, 8, stride=4), nn.ReLU(), nn.Conv2d(16, 32, 4, stride=2), nn.ReLU(), nn.Flatten(),
        bfloat16=bfloat16,
    )  # fmt: skip


def encoder(
    obs_shape: tuple[int, ...],
    hidden_sizes: tuple[int, ...],
    bfloat16: bool = False,
    center_frames: bool = False,
    convnet: str = "a3c",
    frames: int = 0,
) -> nn.Sequential:
    """An MLP for a flat observation; for frames [C, H, W] (uint8) `convolutions` first, cheap on a CPU; its
    convolutions in bfloat16 with `bfloat16` (a3c/nets/precision.py), each frame centred with `center_frames`
    and only the newest `frames` of C read where it is not 0 (ScaleFrames)."""
    if len(obs_shape) == 1:
        return nn.Sequential(*mlp(obs_shape[0], hidden_sizes))
    channels, height, width = obs_shape
    read_shape = (frames or channels, height, width)
    convs = convolutions(read_shape[0], min(height, width), convnet, bfloat16)
    frames_encoder = nn.Sequential(
        ScaleFrames(center_frames, frames), convs, *mlp(flat_size(convs, read_shape), hidden_sizes)
    )  # keys as in 0.1
    preserve_signal(frames_encoder)
    return frames_encoder


def preserve_signal(layers: nn.Module) -> None:
    """Orthogonal weights with ReLU's gain and zero biases for the layers of a frames encoder. Under
    PyTorch's default init each layer shrank its input about 3x and the uniform biases outweighed the
    mostly-black frames: on Breakout the encoder's output had an rms of 0.02 of which 0.0014 varied with
    the frame, and with the LSTM on top the policy stayed at random play for 600k env steps while the
    gates drifted into saturation (docs/design/choices.md, "The frames encoder's init")."""
    for layer in layers.modules():
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.orthogonal_(layer.weight, gain=math.sqrt(2.0))
            nn.init.zeros_(layer.bias)


def flat_size(convs: nn.Sequential, obs_shape: tuple[int, int, int]) -> int:
    """The number of features the convolutions make of a frame, by arithmetic: a trial forward pass
    on torch's meta device (a3c/run/capacity.py sizes networks there) imports torch._dynamo, 1.3 s."""
    channels, height, width = obs_shape
    for layer in convs:
        if isinstance(layer, nn.AvgPool2d):
            height, width = height // layer.kernel_size, width // layer.kernel_size
        if isinstance(layer, nn.Conv2d):
            (kernel_h, kernel_w), (stride_h, stride_w), (pad_h, pad_w) = layer.kernel_size, layer.stride, layer.padding
            height = (height + 2 * pad_h - kernel_h) // stride_h + 1
            width = (width + 2 * pad_w - kernel_w) // stride_w + 1
            channels = layer.out_channels
    return channels * height * width


class RunningNorm(nn.Module):
    """Observation normalisation by a running mean and variance (Chan et al.'s parallel update).

    The statistics are buffers: they travel with state_dict into checkpoints, and a
    worker shares one instance with the shared model, so every worker updates and
    reads the same statistics in shared memory (Hogwild, like the weights).
    """

    def __init__(self, shape: tuple[int, ...], clip: float = 10.0):
        super().__init__()
        self.clip = clip
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        batch = batch.double()
        n, batch_mean, batch_var = batch.shape[0], batch.mean(0), batch.var(0, unbiased=False)
        total = self.count + n
        delta = batch_mean - self.mean
        self.var.copy_((self.var * self.count + batch_var * n + delta.pow(2) * self.count * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return ((obs - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-self.clip, self.clip).float()


class Network(nn.Module):
    """What the trainer needs of any network: inputs and state in, (head, value, state) out.

    `head` [B, n]: logits for a Discrete space, the Gaussian mean before its squash into
    the bounds for a Box space; `value` [B], or [B, value_heads] where the network learns more than one
    return (the stock network's with --novelty-value episodic or non-episodic). Subclasses build the layers and define
    initial_state() and forward(inputs, state). With `center_values` the value is the
    return less the running mean of the value targets (`value_stats`), which the
    learner adds back.
    """

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        num_actions: int,
        continuous: bool,
        normalize_obs: bool,
        center_values: bool = False,
    ):
        super().__init__()
        self.obs_norm = RunningNorm(obs_shape) if normalize_obs else None
        self.value_stats = RunningNorm(()) if center_values else None
        self.return_stats: Optional[RunningNorm] = None  # --normalize-returns' statistics, set by the factory
        self.log_std = nn.Parameter(torch.zeros(num_actions)) if continuous else None
        self.novelty: Optional[nn.Module] = None  # --novelty-coef's networks (a3c/nets/novelty.py), set by the factory
        self.novelty_norm: Optional[RunningNorm] = None  # their statistics of a picture or a Dict's parts, likewise
        self.value_heads = 1

    def initial_state(self, batch_size: int) -> State:
        return ()

    def statistics(self) -> dict[str, RunningNorm]:
        """The running statistics this network keeps, by attribute name: the ones workers share and
        update in place, node groups merge and an evaluation snapshots."""
        return {
            name: norm
            for name, norm in (
                ("obs_norm", self.obs_norm),
                ("value_stats", self.value_stats),
                ("return_stats", self.return_stats),
                ("novelty_norm", self.novelty_norm),
            )
            if norm is not None
        }

    def normalize(self, obs: torch.Tensor) -> torch.Tensor:
        """What the network reads: the observation, normalised if the model keeps statistics."""
        return obs if self.obs_norm is None else self.obs_norm(obs)

    def resample_noise(
        self,
        generator: Optional[torch.Generator] = None,
        rows: Optional[int] = None,
        only: Optional[torch.Tensor] = None,
    ) -> None:
        """New noise for every NoisyLinear layer (a user's network may use them too); with `rows`, a draw
        for each row of a batch of that many, with `only` for those rows alone (NoisyLinear.resample_noise)."""
        for module in self.modules():
            if isinstance(module, NoisyLinear):
                module.resample_noise(generator, rows, only)


@dataclass(frozen=True)
class StockOptions:
    """How the stock network is shaped, as a Config sets it (a3c/nets/factory.py's `stock_options`): the
    encoder's MLP widths, the core ("lstm" or "none"), NoisyNet heads and their sigma_0, a Gaussian head
    for a Box action space, observation statistics, centred values and the critic's own encoder."""

    hidden_sizes: tuple[int, ...] = (64,)
    core: str = "lstm"
    noisy: bool = True
    sigma_init: float = 0.017
    continuous: bool = False
    normalize_obs: bool = False
    center_values: bool = False
    own_critic: bool = False
    bfloat16: bool = False  # the frames encoder's convolutions under bfloat16 autocast
    center_frames: bool = False  # each frame less its own mean pixel
    convnet: str = "a3c"  # the frames encoder's convolutions: "a3c" or "small" (`convolutions`)
    frames: int = 0  # the newest this many of the stacked frames the convnet reads (0: all)
    value_heads: int = 1  # 2: the env's return's value and the novelty bonus's, each of its own


class ActorCritic(Network):
    """The stock network: observation -> encoder -> LSTM (or nothing) -> policy head; and the state value.

    Shaped by its StockOptions. The encoder is an MLP of `hidden_sizes` for a flat observation, a convnet and that
    MLP for stacked frames; the LSTM's width is the encoder's last. The heads are
    NoisyNet layers (`noisy`) or plain linear ones. With `own_critic` the value head reads
    an encoder of its own beside the LSTM's output, detached: the value's error trains
    neither the policy's encoder nor its cell (docs/design/choices.md, "The critic's own
    encoder"); else it reads what the policy head reads. The numpy fast path
    (a3c/learn/policies/numpy_policy.py) runs every shape of this network.
    """

    def __init__(
        self,
        obs_shape: int | tuple[int, ...],
        num_actions: int,
        options: StockOptions = StockOptions(),
        own_encoder: Optional[Callable[[], nn.Module]] = None,
    ):
        """`own_encoder`: builds what maps the inputs to features of hidden_sizes[-1] instead of `encoder`."""
        obs_shape = (obs_shape,) if isinstance(obs_shape, int) else tuple(obs_shape)
        super().__init__(obs_shape, num_actions, options.continuous, options.normalize_obs, options.center_values)
        hidden_sizes = tuple(options.hidden_sizes)
        self.hidden_size = hidden_sizes[-1]
        make_encoder = own_encoder or (
            lambda: encoder(
                obs_shape, hidden_sizes, options.bfloat16, options.center_frames, options.convnet, options.frames
            )
        )
        self.encoder = make_encoder()
        self.lstm = nn.LSTM(self.hidden_size, self.hidden_size) if options.core == "lstm" else None
        if self.lstm is not None:
            self.lstm.bias_ih_l0.data.zero_()
            self.lstm.bias_hh_l0.data.zero_()
        self.critic_encoder = make_encoder() if options.own_critic else None
        value_inputs = self.hidden_size * (2 if options.own_critic and self.lstm is not None else 1)
        head = (lambda size, n: NoisyLinear(size, n, options.sigma_init)) if options.noisy else nn.Linear
        self.value_heads = options.value_heads
        self.policy, self.value = head(self.hidden_size, num_actions), head(value_inputs, options.value_heads)

    def initial_state(self, batch_size: int) -> State:
        if self.lstm is None:
            return ()
        zeros = torch.zeros(batch_size, self.hidden_size)
        return zeros, zeros.clone()

    def core(self, inputs: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """The features the policy head reads, and the next state."""
        features = self.encoder(inputs)
        if self.lstm is None:
            return features, ()
        lstm = self.lstm
        hidden, cell = torch.lstm_cell(
            features, state, lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0
        )
        return hidden, (hidden, cell)

    def value_inputs(self, inputs: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        """What the value head reads: the policy's features, or the critic's own encoding of the inputs
        beside the LSTM's output with no gradient into it (its memory, for what the observation hides)."""
        if self.critic_encoder is None:
            return features
        own = self.critic_encoder(inputs)
        return own if self.lstm is None else torch.cat([own, features.detach()], dim=-1)

    def forward(self, inputs: torch.Tensor, state: State) -> tuple[torch.Tensor, torch.Tensor, State]:
        features, state = self.core(inputs, state)
        return self.policy(features), self.value(self.value_inputs(inputs, features)).squeeze(-1), state
