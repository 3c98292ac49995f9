"""The policy interface (a3c/learn/policies/base.py) and its two implementations: the numpy fast path for
the stock network, and autograd for any torch network."""

from __future__ import annotations

from a3c.learn.policies.base import Policy
from a3c.learn.policies.numpy_policy import NumpyPolicy
from a3c.learn.policies.torch_policy import TorchPolicy
from a3c.nets.actor_critic import ActorCritic, Network


def numpy_covers(model: Network) -> bool:
    return type(model) is ActorCritic


def make_policy(model: Network, learner: str = "auto") -> Policy:
    """`learner`: numpy, torch, or auto (numpy wherever it covers the network)."""
    if learner == "torch" or (learner == "auto" and not numpy_covers(model)):
        return TorchPolicy(model)
    if not numpy_covers(model):
        raise ValueError(f"the numpy learner runs the stock ActorCritic only, not a {type(model).__name__}")
    return NumpyPolicy(model)


__all__ = ["Policy", "NumpyPolicy", "TorchPolicy", "make_policy", "numpy_covers"]
