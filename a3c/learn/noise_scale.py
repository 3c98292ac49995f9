"""NoisyNet's draws held at a chosen distance from the policy of the mean weights: the adaptive scale of
parameter-space noise (Plappert et al., 2018) on top of NoisyNet's learned sigma.

The entropy bonus pulls the logits of the mean weights and of every draw together, so a draw of a fixed,
even a large, sigma can end up moving the policy by almost nothing (docs/results, "NoisyNet on DeepSea
20"). With --noise-kl-target, a worker multiplies its draws' epsilon by a scale that grows by
NOISE_SCALE_STEP after a rollout whose draw moved the policy less than the target (the mean
KL(perturbed || mean policy) over its steps, metrics.csv's noise_kl) and shrinks by as much after one
that moved it more: the draws keep acting whatever the bonus and the learned sigma do.
"""

from __future__ import annotations

import math

NOISE_SCALE_STEP = 1.05  # Plappert et al. adapt by 1.01 every 50 steps; a rollout here is 80-320 env steps
NOISE_SCALE_BOUNDS = (1e-3, 1e3)  # a scale outside these means the KL no longer answers to it


def adapted_noise_scale(scale: float, kl: float, target: float) -> float:
    """The scale of the next draw, after a draw at `scale` moved the policy by `kl` nats against `target`;
    unchanged where nothing was measured (`kl` NaN: no valid step in the rollout)."""
    if math.isnan(kl):
        return scale
    step = NOISE_SCALE_STEP if kl < target else 1.0 / NOISE_SCALE_STEP
    low, high = NOISE_SCALE_BOUNDS
    return min(max(scale * step, low), high)
