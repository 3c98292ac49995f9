"""The network side of Dict and Tuple observations (a3c/envs/parts.py makes them one flat vector):
the vector split into its parts again, frames through the stock convnet, the rest as they are, all
concatenated before the MLP and the core, as Stable-Baselines3's CombinedExtractor does; observation
statistics for the Box parts only; a --model reads a dict of tensors.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from a3c.envs.parts import Part
from a3c.nets.actor_critic import ActorCritic, RunningNorm, StockOptions, encoder, flat_size, mlp


def unflatten(parts: tuple[Part, ...], flat: torch.Tensor) -> dict[str, torch.Tensor]:
    """The flat batch [B, D] as each part's tensor [B, *shape], by key: what a --model reads."""
    pieces = flat.float().split([part.size for part in parts], dim=-1)
    return {part.key: piece.unflatten(-1, part.shape) for part, piece in zip(parts, pieces)}


class PartsNorm(RunningNorm):
    """Running statistics of the whole flat vector, applied to the parts of the `normalised` kinds only: by default
    the Box parts, one-hot parts, bits and frames (which the convnet scales) passing unchanged."""

    def __init__(self, parts: tuple[Part, ...], clip: float = 10.0, normalised: tuple[str, ...] = ("box",)):
        super().__init__((sum(part.size for part in parts),), clip)
        normalised = np.concatenate([np.full(part.size, part.kind in normalised) for part in parts])
        self.register_buffer("normalised", torch.from_numpy(normalised), persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.where(self.normalised, super().forward(obs), obs.float())


class CombinedFeatures(nn.Module):
    """The flat vector split into its parts: frames through the stock convnet (the MinAtar paper's for
    small ones), the other parts as they are; all concatenated."""

    def __init__(self, parts: tuple[Part, ...], center_frames: bool = False, convnet: str = "a3c"):
        super().__init__()
        self.parts = parts
        # by position: a Dict's keys may hold dots, which a module's name may not
        self.frames = nn.ModuleDict(
            {
                str(k): encoder(part.shape, (), center_frames=center_frames, convnet=convnet)
                for k, part in enumerate(parts)
                if part.kind == "frames"
            }
        )
        self.size = sum(
            flat_size(self.frames[str(k)][1], part.shape) if part.kind == "frames" else part.size
            for k, part in enumerate(parts)
        )

    def forward(self, flat: torch.Tensor) -> torch.Tensor:
        pieces = unflatten(self.parts, flat)
        return torch.cat(
            [
                self.frames[str(k)](pieces[part.key]) if part.kind == "frames" else pieces[part.key].flatten(1)
                for k, part in enumerate(self.parts)
            ],
            dim=-1,
        )


class StructuredActorCritic(ActorCritic):
    """The stock network with CombinedFeatures before its MLP; trained by autograd (the numpy path reads
    flat observations and frames only)."""

    def __init__(self, parts: tuple[Part, ...], num_actions: int, options: StockOptions = StockOptions()):
        def combined_encoder() -> nn.Module:
            features = CombinedFeatures(parts, options.center_frames, options.convnet)
            return nn.Sequential(features, *mlp(features.size, tuple(options.hidden_sizes)))

        super().__init__((sum(part.size for part in parts),), num_actions, options, own_encoder=combined_encoder)
