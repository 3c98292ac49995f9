"""The policy interface: act on a batch with a recurrent state; backpropagate a rollout's loss.

A rollout, as a worker runs it:

    model.resample_noise()                      # NoisyNet: one draw for the whole rollout
    state = policy.begin_rollout(state)         # after the weights are loaded
    for each step:
        head, value, state = policy.act(obs, state)
        ... sample an action from `head`, step the envs ...
        state = policy.restart(state, ended)    # zero the state of envs whose episode ended
    policy.backward(d_heads, d_values, d_log_std, restarted)

`act(..., record=False)` evaluates without adding a step to the rollout (bootstrap
values, evaluation, a loaded agent). Observations go in raw: the policy applies the
model's observation statistics. Heads and values come out as numpy arrays; the
recurrent state is the policy's own (numpy or torch), opaque to its caller. The
loss and the action distribution are numpy math shared by every policy
(a3c/learn/returns.py, a3c/learn/distributions.py): a policy backpropagates from d loss / d head
and d loss / d value into the model's parameters' .grad, which the caller zeroes
first.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from a3c.nets.actor_critic import Network


class Policy:
    def __init__(self, model: Network):
        self.model = model

    @property
    def log_std(self) -> Optional[np.ndarray]:
        """The Gaussian's log std (a view of the model's parameter), None for a Discrete space."""
        return None if self.model.log_std is None else self.model.log_std.detach().numpy()

    def initial_state(self, batch_size: int) -> Any:
        raise NotImplementedError

    def state_to_numpy(self, state: Any) -> tuple[np.ndarray, ...]:
        """A copy of the state as numpy arrays, to store (a replayed rollout starts from it)."""
        raise NotImplementedError

    def state_from_numpy(self, arrays: tuple[np.ndarray, ...]) -> Any:
        raise NotImplementedError

    def begin_rollout(self, state: Any) -> Any:
        """Fix the weights (and noise) this rollout's steps use and forget the last rollout;
        returns the state to start from."""
        raise NotImplementedError

    def act(self, obs: np.ndarray, state: Any, record: bool = True) -> tuple[np.ndarray, np.ndarray, Any]:
        """Policy head [B, n] and values [B] of a raw observation batch, and the next state."""
        raise NotImplementedError

    def mean_heads(self) -> Optional[np.ndarray]:
        """The recorded steps' heads [T, B, n] at the policy head's mean weights, NoisyNet's draw left out;
        None where the head has no noise or this policy does not tell."""
        return None

    def restart(self, state: Any, restarting: np.ndarray) -> Any:
        """The state with the rows where `restarting` [B] is True zeroed: a new episode starts there."""
        raise NotImplementedError

    def backward(
        self, d_heads: np.ndarray, d_values: np.ndarray, d_log_std: Optional[np.ndarray], restarted: np.ndarray
    ) -> None:
        """Add d loss / d parameter to the model's .grad, given d loss / d head [T, B, n] and
        d loss / d value [T, B] of every recorded step, and d loss / d log std. `restarted[t]`
        [T, B] is True where act() was followed by a restart at step t."""
        raise NotImplementedError

    def write_log_std_grad(self, d_log_std: Optional[np.ndarray]) -> None:
        """The log std enters only the distribution's numpy math, so its gradient is written directly."""
        if d_log_std is not None:
            self.model.log_std.grad.numpy()[...] = d_log_std
