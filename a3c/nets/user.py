"""A user's own network (--model module:function): imported, checked, and wrapped as a Network.

`function(observation_space, action_space)` returns a torch nn.Module whose
forward(obs) takes a float batch [B, *obs_shape] (a Dict or Tuple observation: a dict of
each part's batch, by key; a3c/nets/structured.py) and returns (head, value): head
[B, n] (logits for a Discrete space, the Gaussian mean before the squash into the
bounds for a Box), value [B]. A recurrent module also defines initial_state(batch_size),
a tuple of tensors [B, ...], and its forward(obs, state) returns (head, value, state);
its state is zeroed where an episode begins, as the stock LSTM's. The trainer adds the
observation statistics and the Gaussian's log std around it, and trains it with the
autograd learner.
"""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np
import torch
from torch import nn

from a3c.envs.parts import flatten_one
from a3c.errors import ConfigError, first_line
from a3c.nets.actor_critic import Network, State
from a3c.nets.structured import unflatten


def is_recurrent(net: nn.Module) -> bool:
    return callable(getattr(net, "initial_state", None))


class UserNetwork(Network):
    """A user module behind the Network interface: a feed-forward one's recurrent state is empty."""

    def __init__(self, net: nn.Module, spec, normalize_obs: bool, center_values: bool = False):
        super().__init__(spec.obs_shape, spec.num_actions, spec.continuous, normalize_obs, center_values)
        self.net = net
        self.recurrent = is_recurrent(net)
        self.parts = spec.obs_parts

    def initial_state(self, batch_size: int) -> State:
        return tuple(self.net.initial_state(batch_size)) if self.recurrent else ()

    def forward(self, inputs: torch.Tensor, state: State) -> tuple[torch.Tensor, torch.Tensor, State]:
        inputs = module_inputs(self.parts, inputs)
        if not self.recurrent:
            head, value = self.net(inputs)
            return head, value, ()
        head, value, state = self.net(inputs, state)
        return head, value, tuple(state)


def module_inputs(parts, flat: torch.Tensor):
    """What the user's module reads: a float batch, or a Dict or Tuple observation's parts by key."""
    return flat.float() if parts is None else unflatten(parts, flat)


def load_factory(name: str):
    """The function `name` = 'module:function' points to; the module may sit in the working directory."""
    module_name, _, function_name = name.partition(":")
    if not module_name or not function_name:
        raise ConfigError(f"--model must be module:function, got {name!r}")
    if os.getcwd() not in sys.path:  # where `python main.py` was run from, as for a script's own imports
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"--model {name}: cannot import {module_name}: {first_line(error)}") from None
    except Exception as error:  # the user's module failed while it was being imported
        raise ConfigError(
            f"--model {name}: importing {module_name} raised {type(error).__name__}: {first_line(error)}"
        ) from None
    factory = getattr(module, function_name, None)
    if not callable(factory):
        raise ConfigError(f"--model {name}: {module_name} has no function {function_name}")
    return factory


def user_network(name: str, spec, normalize_obs: bool, center_values: bool = False) -> UserNetwork:
    """Build the user's module for an env's spaces and check what it returns, before any training."""
    factory = load_factory(name)
    try:
        net = factory(spec.observation_space, spec.action_space)
    except Exception as error:
        raise ConfigError(f"--model {name} raised {type(error).__name__}: {first_line(error)}") from None
    if not isinstance(net, nn.Module):
        raise ConfigError(f"--model {name} returned a {type(net).__name__}, not a torch nn.Module")
    if not any(True for _ in net.parameters()):
        raise ConfigError(f"--model {name} returned a module without parameters: nothing to train")
    check_outputs(net, spec, name)
    return UserNetwork(net, spec, normalize_obs, center_values)


def check_outputs(net: nn.Module, spec, name: str) -> None:
    """forward() on two sampled observations must give (head [2, n], value [2]) of floats; a recurrent
    module's forward(obs, initial_state(2)) (head, value, a state of the initial state's shapes)."""
    batch = 2
    samples = [spec.observation_space.sample() for _ in range(batch)]
    flat = np.stack(samples if spec.obs_parts is None else [flatten_one(spec.obs_parts, obs) for obs in samples])
    obs = module_inputs(spec.obs_parts, torch.from_numpy(flat.astype(np.float32)))
    state = initial_state_checked(net, name, batch) if is_recurrent(net) else None
    try:
        with torch.no_grad():
            outputs = net(obs) if state is None else net(obs, state)
    except Exception as error:
        raise ConfigError(
            f"--model {name}: forward() on {batch_words(obs)} raised {type(error).__name__}: {first_line(error)}"
        ) from None
    expected = f"(head [{batch}, {spec.num_actions}], value [{batch}]" + (")" if state is None else ", state)")
    parts = 2 if state is None else 3
    if not (
        isinstance(outputs, (tuple, list))
        and len(outputs) == parts
        and all(isinstance(part, torch.Tensor) for part in outputs[:2])
    ):
        raise ConfigError(f"--model {name}: forward() must return {expected}, got {describe(outputs)}")
    head, value = outputs[:2]
    if state is not None and describe(outputs[2]) != describe(state):  # a list or a tuple alike
        raise ConfigError(
            f"--model {name}: forward() must return a state like initial_state's {describe(state)}, "
            f"got {describe(outputs[2])}"
        )
    if (
        tuple(head.shape) != (batch, spec.num_actions)
        or tuple(value.shape) != (batch,)
        or not (head.is_floating_point() and value.is_floating_point())
    ):
        raise ConfigError(
            f"--model {name}: forward() must return {expected} of floats, "
            f"got {describe(outputs)} for {batch_words(obs)}"
        )


def initial_state_checked(net: nn.Module, name: str, batch: int) -> tuple:
    """initial_state(batch) as a tuple of float tensors [batch, ...]."""
    try:
        state = net.initial_state(batch)
    except Exception as error:
        raise ConfigError(
            f"--model {name}: initial_state({batch}) raised {type(error).__name__}: {first_line(error)}"
        ) from None
    if not (
        isinstance(state, (tuple, list))
        and state
        and all(
            isinstance(part, torch.Tensor) and part.is_floating_point() and part.dim() >= 1 and len(part) == batch
            for part in state
        )
    ):
        raise ConfigError(
            f"--model {name}: initial_state({batch}) must return a tuple of float tensors "
            f"[{batch}, ...], got {describe(state)}"
        )
    return tuple(state)


def batch_words(obs) -> str:
    """An observation batch in words: its shape, or each part's."""
    if isinstance(obs, dict):
        return "a batch of " + ", ".join(f"{key} {list(part.shape)}" for key, part in obs.items())
    return f"a batch {list(obs.shape)}"


def describe(outputs) -> str:
    if isinstance(outputs, torch.Tensor):
        return f"a tensor {list(outputs.shape)}"
    if isinstance(outputs, (tuple, list)):
        return "(" + ", ".join(describe(part) for part in outputs) + ")"
    return f"a {type(outputs).__name__}"
