"""a3c export: a checkpoint's network as an ONNX file that ONNX Runtime runs without torch or this package.

The graph takes the raw observation batch `obs` (the observation normalisation is inside) and, for
the stock LSTM, its state `h` and `c` (a recurrent user module's: `state_0`, `state_1`, ...), and for
an env that gives an invalid-action mask, `action_mask` (bool, True where legal) after `obs`; it
returns `action`, the greedy action ready for the env (a Discrete action offset by the space's
start, a Box action squashed into its bounds), `value`, the state value in the env's return units,
the action distribution's parameters (`logits`, or `mean` and `log_std`), and the next state
`h_out`, `c_out` (`state_out_0`, ...). The batch size is dynamic. The file's metadata names the env,
its spaces, the opset and the a3c version that wrote it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from a3c._version import __version__
from a3c.config.settings import Config
from a3c.envs.masks import ACTION_MASK
from a3c.envs.spec import EnvSpec
from a3c.errors import ConfigError
from a3c.learn.distributions import MASKED_LOGIT
from a3c.learn.learner import value_offset
from a3c.learn.return_scale import return_spread
from a3c.nets.actor_critic import ActorCritic, Network
from a3c.nets.precision import use_float32

OPSET = 17  # ONNX Runtime 1.x runs it; opsets 18 and up add nothing this graph uses


def require_onnx():
    """onnx itself (the exporter writes through it), or one line saying how to install it."""
    try:
        import onnx
    except ImportError:
        raise ConfigError("a3c export needs onnx: pip install -r requirements-export.txt") from None
    return onnx


class ExportedPolicy(nn.Module):
    """The network in eval mode (NoisyNet's mean weights), between the env's raw observations and its actions."""

    def __init__(self, model: Network, spec: EnvSpec, config: Config):
        super().__init__()
        self.model, self.spec = model.eval(), spec
        # the value head learns scaled returns (divided by the return's spread with --normalize-returns), less the
        # running mean of the targets with centred values
        spread = 1.0 if model.return_stats is None else return_spread(model.return_stats)
        self.value_offset, self.value_scale = value_offset(model.value_stats), spread / config.reward_scale
        if spec.continuous:
            low, high = (torch.as_tensor(bound, dtype=torch.float32) for bound in (spec.action_low, spec.action_high))
            self.register_buffer("center", (high + low) / 2)
            self.register_buffer("half_range", (high - low) / 2)
            self.limit_std = config.std_limit == "range" and bool(torch.isfinite(self.half_range).all())
        self.register_buffer("action_start", torch.as_tensor(spec.action_start, dtype=torch.int64))
        self.action_dtype = torch.from_numpy(np.zeros(0, dtype=spec.action_dtype)).dtype

    def forward(self, obs: torch.Tensor, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """`inputs`: the action mask [B, n] (bool) for an env that gives one, then the recurrent state."""
        model = self.model
        state = inputs[1:] if self.spec.action_mask is not None else inputs
        head, value, next_state = model(model.normalize(obs), tuple(state))
        if model.value_heads > 1:  # the env's return's value; the novelty bonus's is the trainer's alone
            value = value[..., 0]
        if self.spec.action_mask is not None:  # the logits out are the masked policy's
            head = head.masked_fill(~inputs[0], MASKED_LOGIT)
        value = (value + self.value_offset) * self.value_scale
        if self.spec.continuous:
            mean = self.center + self.half_range * torch.tanh(head)
            log_std = model.log_std.expand_as(mean)
            if self.limit_std:  # as the trainer's Gaussian reads it
                log_std = torch.minimum(log_std, torch.log(self.half_range))
            return (mean, value, mean, log_std, *next_state)
        parts = self.spec.action_parts
        if parts is None:
            action = head.argmax(dim=-1)
        else:  # a categorical per part over its slice of the logits
            action = torch.stack([logits.argmax(dim=-1) for logits in head.split(list(parts), dim=-1)], dim=-1)
        return ((action + self.action_start).to(self.action_dtype), value, head, *next_state)


def state_names(model: Network, parts: int) -> tuple[list[str], list[str]]:
    """The graph's names of the recurrent state, in and out: the stock LSTM's h and c, or a user's state_i."""
    if isinstance(model, ActorCritic):
        names = ["h", "c"][:parts]
        return names, [f"{name}_out" for name in names]
    return [f"state_{i}" for i in range(parts)], [f"state_out_{i}" for i in range(parts)]


def output_names(spec: EnvSpec) -> list[str]:
    return ["action", "value", *(["mean", "log_std"] if spec.continuous else ["logits"])]


def export_onnx(model: Network, spec: EnvSpec, config: Config, path: str | Path) -> dict[str, str]:
    """Writes the ONNX file of `model` for `spec`'s env; returns the metadata it carries."""
    onnx = require_onnx()
    use_float32(model)  # ONNX Runtime runs the file in float32, whatever precision the run trained in
    policy = ExportedPolicy(model, spec, config)
    state = model.initial_state(1)
    state_in, state_out = state_names(model, len(state))
    mask_in = [ACTION_MASK] if spec.action_mask is not None else []
    inputs, outputs = ["obs", *mask_in, *state_in], [*output_names(spec), *state_out]
    example = (
        torch.from_numpy(np.zeros((1, *spec.obs_shape), dtype=spec.obs_dtype)),
        *[torch.ones(1, spec.num_actions, dtype=torch.bool) for _ in mask_in],
        *state,
    )
    with torch.no_grad():
        torch.onnx.export(
            policy,
            example,
            str(path),
            input_names=inputs,
            output_names=outputs,
            dynamic_axes={name: {0: "batch"} for name in inputs + outputs},
            opset_version=OPSET,
            dynamo=False,
        )
    metadata = {
        "a3c_version": __version__,
        "env": config.env,
        "opset": str(OPSET),
        "observation_space": str(spec.observation_space),
        "action_space": str(spec.action_space),
        "recurrent": str(bool(state)).lower(),
        "action_mask": str(spec.action_mask).lower(),
        "observation_parts": ", ".join(spec.record()["observation_parts"] or ["none"]),
        "inputs": ", ".join(inputs),
        "outputs": ", ".join(outputs),
    }
    graph = onnx.load(str(path))
    onnx.helper.set_model_props(graph, metadata)
    onnx.save(graph, str(path))
    return metadata
