"""The global model of a Ray run: its weights split over shard actors that merge node groups' deltas.

A shard holds one contiguous slice of the flat weights; shard 0 also holds the
observation sums (with --normalize-obs) and the run's env-step count, which
drives the learning-rate decay and --max-steps in every group. A Ray actor
runs one call at a time, so two groups' deltas never race on a shard.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch

from a3c.backends.sync import merge

CALL_TIMEOUT_SECONDS = 60.0  # every ray.get has one: a blocked get ignores signals and pytest-timeout
PARAMETERS_PER_SHARD = 4_000_000  # --global-shards 0: one shard per 16 MB of float32 weights


def read_only_tensor(array: np.ndarray) -> torch.Tensor:
    """A tensor over an array from Ray's object store (always read-only), without a copy; never write to it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(array)


class GlobalShard:
    """One slice of the global weights (shard 0: with the observation sums and the env-step count)."""

    def __init__(self, values: list[np.ndarray], env_steps: int, groups: int):
        self.values = [np.array(value) for value in values]  # writable copies of the object store's arrays
        self.env_steps = env_steps
        self.groups = groups
        self.calls = 0
        self.bytes = 0  # received and sent

    def exchange(self, deltas: list[np.ndarray], env_steps: int) -> tuple[list[np.ndarray], int]:
        """Merge one group's deltas (a3c.backends.sync.merge) and add its env steps; answer with the global
        values and count."""
        merge(self.values, deltas, self.groups)
        self.env_steps += env_steps
        return self.read(traffic=sum(delta.nbytes for delta in deltas))

    def read(self, traffic: int = 0) -> tuple[list[np.ndarray], int]:
        self.calls += 1
        self.bytes += traffic + sum(value.nbytes for value in self.values)
        return self.values, self.env_steps

    def traffic(self) -> dict:
        return {"calls": self.calls, "bytes": self.bytes}


def shard_bounds(size: int, shards: int) -> list[int]:
    """Where each shard's slice of a flat vector of `size` begins, and the end: shards + 1 offsets."""
    return [size * k // shards for k in range(shards + 1)]


def shard_count(requested: int, size: int) -> int:
    """--global-shards, or with 0 one shard per PARAMETERS_PER_SHARD weights."""
    return requested or max(1, math.ceil(size / PARAMETERS_PER_SHARD))


class GlobalModel:
    """The shards as one object: what the trainer and every node group call (a picklable handle)."""

    def __init__(self, ray, shards: list, bounds: list[int]):
        self.ray, self.shards, self.bounds = ray, shards, bounds

    @classmethod
    def create(cls, ray, values: list[np.ndarray], env_steps: int, shards: int, groups: int) -> "GlobalModel":
        """Shards of `values`: [flat weights, (observation sums)], as a group exchanges them, merging the
        deltas of `groups` node groups."""
        weights, *extras = values
        bounds = shard_bounds(len(weights), shard_count(shards, len(weights)))
        # on the trainer's node: a run outlives the loss of any other node
        here = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
            ray.get_runtime_context().get_node_id(), soft=False
        )
        actor = ray.remote(num_cpus=0, max_restarts=0, scheduling_strategy=here)(GlobalShard)
        handles = []
        for k, (begin, end) in enumerate(zip(bounds, bounds[1:])):
            part = [weights[begin:end], *(extras if k == 0 else [])]
            handles.append(actor.remote(part, env_steps if k == 0 else 0, groups))
        return cls(ray, handles, bounds)

    def __reduce__(self):  # the ray module does not pickle: a node group imports its own
        return _global_model, (self.shards, self.bounds)

    def exchange(self, deltas: list[np.ndarray], env_steps: int) -> tuple[list[np.ndarray], int]:
        """Send [weight delta, (observation-sums delta)]; the global [weights, (sums)] and env-step count."""
        weights, *extras = deltas
        calls = [
            shard.exchange.remote([weights[begin:end], *(extras if k == 0 else [])], env_steps if k == 0 else 0)
            for k, (shard, begin, end) in enumerate(zip(self.shards, self.bounds, self.bounds[1:]))
        ]
        return self._joined(calls)

    def read(self) -> tuple[list[np.ndarray], int]:
        return self._joined([shard.read.remote() for shard in self.shards])

    def _joined(self, calls: list) -> tuple[list[np.ndarray], int]:
        answers = self.ray.get(calls, timeout=CALL_TIMEOUT_SECONDS)
        weights = np.concatenate([values[0] for values, _ in answers])
        return [weights, *answers[0][0][1:]], answers[0][1]

    def traffic(self) -> dict:
        """Calls answered and bytes moved, over all shards."""
        counts = self.ray.get([shard.traffic.remote() for shard in self.shards], timeout=CALL_TIMEOUT_SECONDS)
        return {key: sum(count[key] for count in counts) for key in ("calls", "bytes")}

    def kill(self) -> None:
        for shard in self.shards:
            self.ray.kill(shard)


def _global_model(shards: list, bounds: list[int]) -> GlobalModel:
    import ray

    return GlobalModel(ray, shards, bounds)
