"""How a node group and the global model exchange what they learned: deltas, not gradients.

A node group trains its own copy of the weights (Hogwild, in its node's shared
memory) and now and then sends the global model the change since its last
exchange, its *delta*. The global model adds each group's delta as it arrives,
divided by the number of groups, and answers with the global weights, which the
group takes while keeping the updates its workers applied during the round trip.
The global weights so move by the groups' mean change: what each group learned
since its last exchange counts, and a push that every group made at once counts
once, not once a group (docs/design/choices.md, "Node groups": added whole, such
pushes overshot and Acrobot took 2.9x the env steps).

Running statistics (of observations, of value targets) travel the same way, as
additive sums (count, sum, sum of squares), so the groups' statistics merge exactly.
"""

from __future__ import annotations

from typing import Callable

import torch

from a3c.nets.actor_critic import RunningNorm


def moments_to_sums(count: torch.Tensor, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """[count, sum..., sum of squares...] of data with this count, mean and (population) variance."""
    return torch.cat([count.reshape(1), (count * mean).flatten(), (count * (var + mean**2)).flatten()])


def sums_to_moments(sums: torch.Tensor, shape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The inverse of moments_to_sums; no data gives RunningNorm's start (mean 0, variance 1)."""
    count, size = sums[0], (len(sums) - 1) // 2
    if count <= 0:
        return (
            torch.zeros((), dtype=sums.dtype),
            torch.zeros(shape, dtype=sums.dtype),
            torch.ones(shape, dtype=sums.dtype),
        )
    mean = sums[1 : 1 + size] / count
    var = (sums[1 + size :] / count - mean**2).clamp_min(0.0)
    return count.clone(), mean.reshape(shape), var.reshape(shape)


class SyncedState:
    """What a node group exchanges: its flat weights and the sums of each of its running statistics
    (observations with --normalize-obs, value targets with --center-values).

    Both are read and written in place while the group's workers keep updating them (Hogwild).
    A statistic is three buffers that a worker updates together: when a worker's update and
    add() overlap, one overwrites the other. If the worker's wins, the other groups' observations
    that add() brought are missing here, and the next delta takes them out of the global sums too:
    what remains are the exact statistics of fewer observations (CartPole, two groups of one
    worker: 1-3% of them dropped).
    """

    def __init__(self, weights: torch.Tensor, norms: list[RunningNorm]):
        self.weights, self.norms = weights, norms

    def read(self) -> list[torch.Tensor]:
        return [self.weights.clone(), *(moments_to_sums(norm.count, norm.mean, norm.var) for norm in self.norms)]

    def assign(self, values: list[torch.Tensor]) -> None:
        """Make the state equal to `values` (as read() returns them)."""
        self.add([new - now for new, now in zip(values, self.read())])

    @torch.no_grad()
    def add(self, changes: list[torch.Tensor]) -> None:
        self.weights.add_(changes[0])
        for norm, change in zip(self.norms, changes[1:]):
            now = moments_to_sums(norm.count, norm.mean, norm.var)
            for buffer, value in zip(
                (norm.count, norm.mean, norm.var), sums_to_moments(now + change, tuple(norm.mean.shape))
            ):
                buffer.copy_(value)


def merge(values: list, deltas: list, groups: int) -> None:
    """Add one group's deltas to the global values in place (numpy arrays or tensors, as read() orders
    them): its weight change divided by the number of groups, its statistics' sums whole, as they count
    the observations each group saw."""
    weights, *sums = values
    weights += deltas[0] / groups
    for value, delta in zip(sums, deltas[1:]):
        value += delta


Exchange = Callable[[list[torch.Tensor]], list[torch.Tensor]]  # deltas in, the global values out


def sync_round(state: SyncedState, anchor: list[torch.Tensor], exchange: Exchange) -> list[torch.Tensor]:
    """Send the change since `anchor` (the global values last taken), take the global values back
    plus what changed here meanwhile; returns the new anchor."""
    snapshot = state.read()
    global_values = exchange([now - then for now, then in zip(snapshot, anchor)])
    state.add([new - now for new, now in zip(global_values, snapshot)])
    return global_values
