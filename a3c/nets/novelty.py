"""How new an observation is: random network distillation (--novelty-coef).

A fixed random network (the prior) maps each observation to a few features; a trained network (the
predictor) learns to give the same features on the observations the workers visit. Its error stays
large where it has seldom been trained, that is where the agent has seldom been: a count of visits
that generalises, and the uncertainty of a value fitted to 0 with a randomised prior (one member of
a bootstrapped ensemble). docs/design/choices.md, "Novelty".

What both networks read. A flat observation: what the policy reads, normalised where it normalises. A picture
(stacked frames, a small image) and the parts of a Dict or Tuple: `NoveltyView` first (a picture's frames as
the policy reads them, averaged 2 x 2 where they are large, as floats; the other parts as they are), then
statistics of their own (the network's `novelty_norm`, shared by the workers as the others are), pixel by
pixel and clipped to +-NORM_CLIP: random network distillation's normalisation, without which a random
convnet's features hardly differ between two frames of a game. Each picture then goes through a few
convolutions (`PictureFeatures`), the rest as it is, then the MLP.

The prior's weights are buffers drawn from one fixed seed, so every process of every run, resumed
ones with another --seed included, builds the same prior without sharing it, and no optimizer touches
it; the predictor's are parameters, shared and stepped like the network's.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from a3c.envs.parts import Part
from a3c.nets.actor_critic import POOLED_FRAMES, SMALL_FRAMES, flat_size

NOVELTY_WIDTH = 64  # the hidden layers of both networks
NOVELTY_FEATURES = 32  # what the predictor predicts of the prior
PICTURE_CHANNELS = (8, 16, 16)  # a picture of SMALL_FRAMES or more: 3x3 convolutions of stride 2
SMALL_PICTURE_CHANNELS = 16  # a smaller picture (a grid world's): one 3x3 convolution of stride 1
NORM_CLIP = 5.0  # normalised pixels and values, as random network distillation clips them
PRIOR_SEED = 0


def fixed_weight(shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """Constant weights drawn from `generator` at He's scale (for ReLUs), on the generator's device even where a
    network is sized on torch's meta device (a3c/run/capacity.py): a draw there imports torch._dynamo, 1.3 s."""
    draw = torch.randn(*shape, generator=generator, device=generator.device)
    return draw * math.sqrt(2.0 / math.prod(shape[1:]))


def fix(layer: nn.Module, generator: torch.Generator) -> nn.Module:
    """`layer` (built on the meta device, so torch's global generator is left as it was) with its weight and
    bias made buffers, constants no optimizer sees: weights drawn from `generator`, zero biases. The layer
    stays what it is, so `flat_size` reads a fixed convolution too."""
    shape = layer.weight.shape
    del layer.weight, layer.bias
    layer.register_buffer("weight", fixed_weight(tuple(shape), generator))
    layer.register_buffer("bias", torch.zeros(shape[0]))
    return layer


def conv(inputs: int, outputs: int, stride: int, generator: Optional[torch.Generator]) -> nn.Module:
    """A fixed 3x3 convolution drawn from `generator`, or a trained one where it is None."""
    layer = nn.Conv2d(inputs, outputs, 3, stride=stride, padding=1, device=None if generator is None else "meta")
    return layer if generator is None else fix(layer, generator)


def viewed(part: Part, newest: int) -> Part:
    """A part as NoveltyView hands it on: a picture's newest `newest` channels (0: all), halved where large."""
    if part.kind != "frames":
        return part
    channels, height, width = part.shape
    halve = min(height, width) >= POOLED_FRAMES
    shape = (min(newest or channels, channels), height // (2 if halve else 1), width // (2 if halve else 1))
    return Part(part.key, part.kind, shape)


class NoveltyView(nn.Module):
    """An observation batch [N, *obs_shape] (a picture's uint8 [C, H, W], a Dict or Tuple's flat vector) as the
    floats the novelty's statistics and networks read, [N, D]: each picture's newest `newest` channels, averaged
    2 x 2 where its sides are POOLED_FRAMES or more (Atari's 84 to 42); the other parts as they are."""

    def __init__(self, obs_shape: tuple[int, ...], parts: tuple[Part, ...], newest: int = 0):
        super().__init__()
        self.obs_shape, self.parts, self.newest = obs_shape, parts, newest
        self.viewed_parts = tuple(viewed(part, newest) for part in parts)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        pieces = observations.reshape(len(observations), -1).split([part.size for part in self.parts], dim=-1)
        out = []
        for part, seen, piece in zip(self.parts, self.viewed_parts, pieces):
            if part.kind == "frames":
                frames = piece.unflatten(-1, part.shape)[:, -seen.shape[0] :].float()
                if seen.shape[1:] != part.shape[1:]:
                    frames = F.avg_pool2d(frames, 2)
                piece = frames.flatten(1)
            out.append(piece.float())
        return torch.cat(out, dim=-1)


class PictureFeatures(nn.Module):
    """The viewed vector split into its parts again: each picture through convolutions (fixed ones drawn from
    `generator`, trained ones where it is None), the other parts as they are; all concatenated."""

    def __init__(self, parts: tuple[Part, ...], generator: Optional[torch.Generator] = None):
        super().__init__()
        self.parts = parts
        self.pictures = nn.ModuleDict(
            {str(k): picture_convolutions(part.shape[0], part.shape[1:], generator) for k, part in enumerate(parts)
             if part.kind == "frames"}
        )  # fmt: skip
        self.size = sum(
            flat_size(self.pictures[str(k)], part.shape) if part.kind == "frames" else part.size
            for k, part in enumerate(parts)
        )

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        pieces = inputs.split([part.size for part in self.parts], dim=-1)
        return torch.cat(
            [
                self.pictures[str(k)](piece.unflatten(-1, part.shape)) if part.kind == "frames" else piece
                for k, (part, piece) in enumerate(zip(self.parts, pieces))
            ],
            dim=-1,
        )


def picture_convolutions(channels: int, sides: tuple[int, int], generator: Optional[torch.Generator]) -> nn.Module:
    """One 3x3 convolution for a picture smaller than SMALL_FRAMES, else PICTURE_CHANNELS' of stride 2."""
    if min(sides) < SMALL_FRAMES:
        return nn.Sequential(conv(channels, SMALL_PICTURE_CHANNELS, 1, generator), nn.ReLU(), nn.Flatten())
    layers = []
    for width in PICTURE_CHANNELS:
        layers += [conv(channels, width, 2, generator), nn.ReLU()]
        channels = width
    return nn.Sequential(*layers, nn.Flatten())


def novelty_parts(obs_shape: tuple[int, ...], obs_parts: Optional[tuple[Part, ...]]) -> Optional[tuple[Part, ...]]:
    """The parts the novelty's view reads: a Dict or Tuple's, a picture [C, H, W] as one part; None for a flat
    observation, which needs no view."""
    if obs_parts is not None:
        return obs_parts
    return (Part("picture", "frames", tuple(obs_shape)),) if len(obs_shape) == 3 else None


class NoveltyNets(nn.Module):
    """The prior and the predictor for observations of `obs_shape`. For a flat observation both are MLPs; with
    `parts` (novelty_parts: a picture's or a Dict or Tuple's) a `view` comes first, reading the newest `newest`
    frames of a picture (0: all), and each picture's PictureFeatures before the MLPs."""

    def __init__(self, obs_shape: tuple[int, ...], parts: Optional[tuple[Part, ...]] = None, newest: int = 0):
        super().__init__()
        generator = torch.Generator().manual_seed(PRIOR_SEED)
        self.view: Optional[NoveltyView] = None
        prior_features, predictor_features, size = [], [], math.prod(obs_shape)
        if parts is not None:
            self.view = NoveltyView(obs_shape, parts, newest)
            prior_features = [PictureFeatures(self.view.viewed_parts, generator)]
            predictor_features = [PictureFeatures(self.view.viewed_parts)]
            size = prior_features[0].size
        self.prior = nn.Sequential(
            *prior_features,
            fix(nn.Linear(size, NOVELTY_WIDTH, device="meta"), generator),
            nn.ReLU(),
            fix(nn.Linear(NOVELTY_WIDTH, NOVELTY_FEATURES, device="meta"), generator),
        )
        self.predictor = nn.Sequential(
            *predictor_features,
            nn.Linear(size, NOVELTY_WIDTH),
            nn.ReLU(),
            nn.Linear(NOVELTY_WIDTH, NOVELTY_WIDTH),
            nn.ReLU(),
            nn.Linear(NOVELTY_WIDTH, NOVELTY_FEATURES),
        )

    def errors(self, inputs: torch.Tensor) -> torch.Tensor:
        """The predictor's squared error on each of `inputs` [N, D] (what the novelty's networks read of an
        observation: see the module's doc), averaged over the features: [N]."""
        return (self.predictor(inputs) - self.prior(inputs)).pow(2).mean(dim=-1)
