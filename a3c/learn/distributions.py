"""Action distributions over the policy head's output: sampling, greedy actions, log-probs,
entropy, and their gradients with respect to the head (and the log std). All numpy.

Categorical for Discrete spaces (the head gives logits); for MultiDiscrete and MultiBinary
spaces, one categorical per part over its slice of the head, the parts independent (a
MultiBinary bit is a categorical of 2, a Bernoulli of logit l1 - l0); an env's invalid-action mask sets
the logits of the illegal actions to a large negative number first (`mask_logits`). Gaussian for Box spaces:
the head gives the mean, squashed into the action bounds, and the log standard
deviation is one learned parameter per action dimension, independent of the
state. That is the usual choice for actor-critic methods on continuous control:
it cannot collapse on one state's gradient, and the NoisyNet head already makes
exploration state-dependent.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

LOG_2PI = math.log(2 * math.pi)
# an illegal action's logit: its probability is exactly 0 in float32 and its term of the entropy, 0 * -1e9, is 0
# (-inf would make it 0 * -inf, NaN); as a constant, it passes no gradient back to the head
MASKED_LOGIT = -1e9
NOISE_EFFECTS = ["noise_kl", "noise_flips", "noise_consistency", "noise_share"]  # what noise_effects measures


def mask_logits(head: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The head with the logits of illegal actions (`mask` False) set to MASKED_LOGIT. Every distribution's
    math below then holds for the masked policy: d loss / d head is 0 at an illegal action, as where's is."""
    return np.where(mask, head, np.float32(MASKED_LOGIT)).astype(head.dtype, copy=False)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def sample_categorical(probs: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """One action per row by inverse CDF; 20x cheaper than torch.multinomial at batch size 8.

    The uniform draw is scaled by each row's total, which float32 rounding leaves
    a little off 1, so an action of probability 0 is never picked.
    """
    cdf = probs.cumsum(axis=1)
    return (cdf < uniform[:, None] * cdf[:, -1:]).sum(axis=1)


def noise_effects(
    mean_logits: np.ndarray, noisy_logits: np.ndarray, counted: Optional[np.ndarray] = None
) -> dict[str, float]:
    """What NoisyNet's draws do to a softmax policy, given its logits at the mean weights and under each draw
    [D, N, A] (a draw held over N states, as over a rollout; the mean's may be [N, A] for states that all
    draws share), over the (draw, state) pairs `counted` [D, N] (default: all):
    - noise_kl: the mean KL(perturbed || mean policy) over draws and states;
    - noise_flips: the share of (draw, state) pairs whose most likely action the draw changes;
    - noise_consistency: how alike a draw's push is from state to state: |the mean over states of the
      logit shift|^2 over the mean of |shift|^2, the shift centred over the actions (a shift common to all
      actions changes nothing), averaged over draws. 1: the same preference everywhere, as deep
      exploration needs; near 1/N for pushes that are independent state to state;
    - noise_share: the share of the logits' spread over the actions that the draw's shift makes, |shift|^2
      over |mean logits|^2 + |shift|^2, each centred over the actions: near 0, a push too small against
      what the policy has learned to change its mind; near 1, a policy the noise alone decides."""
    weights = np.ones(noisy_logits.shape[:2]) if counted is None else counted.astype(np.float64)
    per_draw = np.maximum(weights.sum(axis=1), 1)  # [D]
    log_mean, log_noisy = log_softmax(mean_logits), log_softmax(noisy_logits)
    kl = (np.exp(log_noisy) * (log_noisy - log_mean)).sum(-1)
    flips = noisy_logits.argmax(-1) != mean_logits.argmax(-1)
    shift = centred(noisy_logits - mean_logits) * weights[..., None]
    common = np.square(shift.sum(axis=1) / per_draw[:, None]).sum(-1)  # [D]
    total = np.square(shift).sum(-1).sum(axis=1) / per_draw  # [D]
    consistency = (common / np.maximum(total, 1e-24)).mean()
    learned = (np.square(centred(np.broadcast_to(mean_logits, noisy_logits.shape))).sum(-1) * weights).sum()
    share = np.square(shift).sum() / max(learned + np.square(shift).sum(), 1e-24)
    kl, flips = (float((values * weights).sum() / max(weights.sum(), 1)) for values in (kl, flips))
    return {"noise_kl": kl, "noise_flips": flips, "noise_consistency": float(consistency), "noise_share": float(share)}


def centred(logits: np.ndarray) -> np.ndarray:
    """Logits less their mean over the actions: what a softmax sees of them."""
    return logits - logits.mean(axis=-1, keepdims=True)


class Categorical:
    continuous = False

    def sample(self, head: np.ndarray, log_std, rng: np.random.Generator) -> np.ndarray:
        unnormalised = np.exp(head - head.max(axis=1, keepdims=True))  # sample_categorical scales by the total
        return sample_categorical(unnormalised, rng.random(head.shape[0]))

    def greedy(self, head: np.ndarray) -> np.ndarray:
        return head.argmax(axis=-1)

    def log_prob_entropy(self, head: np.ndarray, log_std, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        log_p = log_softmax(head)
        log_probs = np.take_along_axis(log_p, actions[..., None], axis=-1)[..., 0]
        return log_probs, -(np.exp(log_p) * log_p).sum(-1)

    def backward(
        self, head: np.ndarray, log_std, actions: np.ndarray, d_log_probs: np.ndarray, d_entropies: np.ndarray
    ) -> tuple[np.ndarray, None]:
        """d loss / d head, given d loss / d log-prob and d loss / d entropy of each sample.

        d log p_a / d logit_k = [k = a] - p_k;  d entropy / d logit_k = -p_k (log p_k + entropy).
        """
        log_p = log_softmax(head)
        p = np.exp(log_p)
        entropy = -(p * log_p).sum(-1, keepdims=True)
        d_head = -p * (d_log_probs[..., None] + d_entropies[..., None] * (log_p + entropy))
        np.put_along_axis(
            d_head,
            actions[..., None],
            np.take_along_axis(d_head, actions[..., None], axis=-1) + d_log_probs[..., None],
            axis=-1,
        )
        return d_head, None


class MultiCategorical:
    """Independent categoricals over consecutive slices of the head, one per part; actions [..., parts]."""

    continuous = False

    def __init__(self, parts: tuple[int, ...]):
        self.bounds = np.cumsum((0, *parts))
        self.part = Categorical()

    def slices(self, head: np.ndarray) -> list[np.ndarray]:
        return [head[..., start:end] for start, end in zip(self.bounds[:-1], self.bounds[1:])]

    def sample(self, head: np.ndarray, log_std, rng: np.random.Generator) -> np.ndarray:
        return np.stack([self.part.sample(logits, None, rng) for logits in self.slices(head)], axis=-1)

    def greedy(self, head: np.ndarray) -> np.ndarray:
        return np.stack([logits.argmax(axis=-1) for logits in self.slices(head)], axis=-1)

    def log_prob_entropy(self, head: np.ndarray, log_std, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Summed over the parts: the parts are independent."""
        pairs = [
            self.part.log_prob_entropy(logits, None, actions[..., k]) for k, logits in enumerate(self.slices(head))
        ]
        return sum(log_prob for log_prob, _ in pairs), sum(entropy for _, entropy in pairs)

    def backward(
        self, head: np.ndarray, log_std, actions: np.ndarray, d_log_probs: np.ndarray, d_entropies: np.ndarray
    ) -> tuple[np.ndarray, None]:
        """Each part's slice of d loss / d head, as its own categorical's: the sums pass the gradients through."""
        return np.concatenate(
            [
                self.part.backward(logits, None, actions[..., k], d_log_probs, d_entropies)[0]
                for k, logits in enumerate(self.slices(head))
            ],
            axis=-1,
        ), None


class Gaussian:
    """`low`, `high`: the Box bounds. Where both are finite the mean is center + half range *
    tanh(head): an unbounded mean drifts past a bound, where every sample is clipped to the
    same action and the policy stops learning (seen on Pendulum-v1: means of -14 for a
    bound of -2, a pendulum spinning for ever).

    `limit_std` (and finite bounds): the std at most half the action's range. The learned log std is
    read through min(log_std, log half range), and above that ceiling its gradient keeps only a push
    down: an entropy bonus grew the std past the range on HalfCheetah, where nearly every sample is
    clipped to a bound and nothing pulls the std back (docs/design/choices.md, "MuJoCo's preset")."""

    continuous = True

    def __init__(self, low: np.ndarray | None = None, high: np.ndarray | None = None, limit_std: bool = False):
        self.bounded = low is not None and high is not None and np.isfinite(low).all() and np.isfinite(high).all()
        self.log_std_max = None
        if self.bounded:
            self.center, self.half_range = (high + low) / 2, (high - low) / 2
            if limit_std:
                self.log_std_max = np.log(self.half_range)

    def effective_log_std(self, log_std: np.ndarray) -> np.ndarray:
        """The log std the samples are drawn with: the learned one, under the ceiling where there is one."""
        return log_std if self.log_std_max is None else np.minimum(log_std, self.log_std_max).astype(log_std.dtype)

    def mean(self, head: np.ndarray) -> np.ndarray:
        return (self.center + self.half_range * np.tanh(head)).astype(head.dtype) if self.bounded else head

    def sample(self, head: np.ndarray, log_std: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        mean = self.mean(head)
        return (mean + np.exp(self.effective_log_std(log_std)) * rng.standard_normal(mean.shape)).astype(np.float32)

    def greedy(self, head: np.ndarray) -> np.ndarray:
        return self.mean(head).astype(np.float32)

    def log_prob_entropy(self, head: np.ndarray, log_std: np.ndarray, actions: np.ndarray):
        """Of the unclipped sample; summed over the action dimensions."""
        log_std = self.effective_log_std(log_std)
        z = (actions - self.mean(head)) * np.exp(-log_std)
        log_probs = (-0.5 * z**2 - log_std - 0.5 * LOG_2PI).sum(-1)
        entropy = np.full(log_probs.shape, (0.5 + 0.5 * LOG_2PI + log_std).sum(), dtype=log_probs.dtype)
        return log_probs, entropy

    def backward(
        self,
        head: np.ndarray,
        log_std: np.ndarray,
        actions: np.ndarray,
        d_log_probs: np.ndarray,
        d_entropies: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """d loss / d head and d loss / d log_std, given d loss / d log-prob and d entropy of each sample.

        d log p / d mean = z / std;  d log p / d log_std = z^2 - 1;  d entropy / d log_std = 1.
        """
        inv_std = np.exp(-self.effective_log_std(log_std))
        z = (actions - self.mean(head)) * inv_std
        d_mean = d_log_probs[..., None] * z * inv_std
        d_head = d_mean * self.half_range * (1 - np.tanh(head) ** 2) if self.bounded else d_mean
        batch_axes = tuple(range(head.ndim - 1))
        d_log_std = (d_log_probs[..., None] * (z**2 - 1)).sum(axis=batch_axes) + d_entropies.sum()
        if self.log_std_max is not None:
            d_log_std = under_ceiling(log_std, self.log_std_max, d_log_std)
        return d_head.astype(head.dtype), d_log_std.astype(log_std.dtype)


def under_ceiling(value: np.ndarray, ceiling: np.ndarray, d_value: np.ndarray) -> np.ndarray:
    """The gradient of a loss for a parameter read as min(value, ceiling): where the value is at or above
    the ceiling, only the part that lowers it in descent (a positive gradient) is kept, so the parameter
    returns under the ceiling when the loss asks and never climbs past it."""
    return np.where((value >= ceiling) & (d_value < 0), 0.0, d_value)


def distribution(spec, limit_std: bool = False) -> Categorical | MultiCategorical | Gaussian:
    """For an EnvSpec: the policy head's distribution over its actions; `limit_std`: a Box action's std at
    most half its range (Gaussian)."""
    if spec.continuous:
        return Gaussian(spec.action_low, spec.action_high, limit_std)
    return Categorical() if spec.action_parts is None else MultiCategorical(spec.action_parts)
