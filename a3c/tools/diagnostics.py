"""How saturated and how noisy the stock network is on a batch of observations: pure measurements.

An LSTM whose gate pre-activations sit beyond +-3 has sigmoid and tanh slopes under 0.1: its
gradient vanishes and its hidden state stops carrying the observation. A policy head whose
NoisyNet noise moves the logits far more than the observations do acts on the noise alone.
These numbers tell the two apart from a policy that simply has not learned yet
(docs/design/choices.md, "The LSTM's scale").
"""

from __future__ import annotations

import copy
import math

import torch

from a3c.learn.distributions import NOISE_EFFECTS, noise_effects
from a3c.nets.actor_critic import ActorCritic, NoisyLinear

GATE_SATURATION = 3.0  # |pre-activation| past this: sigmoid' < 0.05, tanh' < 0.01
HIDDEN_SATURATION = 0.95
NOISE_DRAWS = 8
COLUMNS = [
    "gate_saturation",
    "cell_abs_mean",
    "hidden_saturation",
    "feature_rms",
    "logit_spread",
    "logit_noise_ratio",
    *NOISE_EFFECTS,
]


@torch.no_grad()
def network_diagnostics(
    model: ActorCritic,
    observations: torch.Tensor,
    restarts: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> dict[str, float]:
    """Scale and saturation of `model` over a sequence of raw observation batches [T, B, *obs_shape].

    `restarts` [T, B] (True where an episode begins at that step) zero the recurrent state, as
    in training. Returns, over all steps and rows:
    - gate_saturation: the share of LSTM gate pre-activations beyond +-GATE_SATURATION;
    - cell_abs_mean: the mean |c| of the LSTM's cell;
    - hidden_saturation: the share of |h| above HIDDEN_SATURATION;
    - feature_rms: the root mean square of what the heads read (the LSTM's h, or the encoder's output);
    - logit_spread: the std over the batch of the mean-weight policy head, averaged over its outputs;
    - logit_noise_ratio: the std of that head over NoisyNet draws, averaged, divided by logit_spread;
    - noise_kl, noise_flips, noise_consistency, noise_share: what the draws do to the policy (noise_effects).
    The LSTM's three are NaN for a feed-forward network, the noise's four NaN without NoisyNet heads.
    """
    steps, batch = observations.shape[:2]
    inputs = model.normalize(observations.reshape(steps * batch, *observations.shape[2:]))
    encoded = model.encoder(inputs).reshape(steps, batch, -1)
    if model.lstm is None:
        features, lstm = encoded, dict.fromkeys(COLUMNS[:3], math.nan)
    else:
        features, lstm = unrolled_lstm(model.lstm, encoded, restarts)
    return {
        **lstm,
        "feature_rms": features.pow(2).mean().sqrt().item(),
        **logit_noise(model.policy, features.reshape(steps * batch, -1), generator),
    }


def unrolled_lstm(
    lstm: torch.nn.LSTM, inputs: torch.Tensor, restarts: torch.Tensor | None
) -> tuple[torch.Tensor, dict[str, float]]:
    """The LSTM run step by step over inputs [T, B, H] from a zero state, its gates measured."""
    steps, batch, _ = inputs.shape
    hidden = cell = torch.zeros(batch, lstm.hidden_size)
    saturated = cell_abs = hidden_saturated = 0.0
    outputs = []
    for t in range(steps):
        if restarts is not None:
            keep = (~restarts[t]).unsqueeze(1).float()
            hidden, cell = hidden * keep, cell * keep
        gates = inputs[t] @ lstm.weight_ih_l0.T + lstm.bias_ih_l0 + hidden @ lstm.weight_hh_l0.T + lstm.bias_hh_l0
        saturated += (gates.abs() > GATE_SATURATION).float().mean().item()
        in_gate, forget, candidate, out_gate = gates.chunk(4, dim=1)
        cell = torch.sigmoid(forget) * cell + torch.sigmoid(in_gate) * torch.tanh(candidate)
        hidden = torch.sigmoid(out_gate) * torch.tanh(cell)
        cell_abs += cell.abs().mean().item()
        hidden_saturated += (hidden.abs() > HIDDEN_SATURATION).float().mean().item()
        outputs.append(hidden)
    return torch.stack(outputs), {
        "gate_saturation": saturated / steps,
        "cell_abs_mean": cell_abs / steps,
        "hidden_saturation": hidden_saturated / steps,
    }


def logit_noise(head: torch.nn.Module, features: torch.Tensor, generator: torch.Generator | None) -> dict[str, float]:
    """The policy head's spread over the batch at its mean weights, and its NoisyNet noise against it: each
    draw held over every row of `features`, as a worker holds one over its rollout."""
    head = copy.deepcopy(head)  # its own noise buffers: the caller's draw stays as it was
    head.eval()
    mean = head(features)
    spread = mean.std(dim=0).mean().item()
    if not isinstance(head, NoisyLinear):
        return {"logit_spread": spread, "logit_noise_ratio": math.nan, **dict.fromkeys(NOISE_EFFECTS, math.nan)}
    head.train()
    draws = []
    for _ in range(NOISE_DRAWS):
        head.resample_noise(generator)
        draws.append(head(features))
    draws = torch.stack(draws)
    noise = draws.std(dim=0).mean().item()
    effects = noise_effects(mean.numpy(), draws.numpy())
    return {"logit_spread": spread, "logit_noise_ratio": noise / max(spread, 1e-12), **effects}
