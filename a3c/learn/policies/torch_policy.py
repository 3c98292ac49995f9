"""The autograd policy: any Network (the stock one in every shape, or a user's module), acted with
torch and backpropagated with torch's autograd through the graph its recorded steps built."""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from a3c.learn.policies.base import Policy
from a3c.nets.actor_critic import State


class TorchPolicy(Policy):
    def initial_state(self, batch_size: int) -> State:
        return self.model.initial_state(batch_size)

    def state_to_numpy(self, state: State) -> tuple[np.ndarray, ...]:
        return tuple(part.detach().numpy().copy() for part in state)

    def state_from_numpy(self, arrays: tuple[np.ndarray, ...]) -> State:
        return tuple(torch.from_numpy(array) for array in arrays)

    def begin_rollout(self, state: State) -> State:
        """The state is cut from the last rollout's graph: truncated backpropagation through time."""
        self.heads: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        return tuple(part.detach() for part in state)

    def act(self, obs: np.ndarray, state: State, record: bool = True):
        with torch.set_grad_enabled(record):
            head, value, state = self.model(self.model.normalize(torch.from_numpy(obs)), state)
        if record:
            self.heads.append(head)
            self.values.append(value)
        return head.detach().numpy(), value.detach().numpy(), state

    def restart(self, state: State, restarting: np.ndarray) -> State:
        if not restarting.any():
            return state
        keep = torch.from_numpy(~restarting)
        # also cuts the gradient into the episode that ended; a user's state may have any shape [B, ...]
        return tuple(part * keep.view(-1, *[1] * (part.dim() - 1)) for part in state)

    def backward(
        self, d_heads: np.ndarray, d_values: np.ndarray, d_log_std: Optional[np.ndarray], restarted: np.ndarray
    ) -> None:
        """`restarted` is already in the graph, as the restarts' multiplications."""
        torch.autograd.backward(
            [torch.stack(self.heads), torch.stack(self.values)], [torch.from_numpy(d_heads), torch.from_numpy(d_values)]
        )
        self.heads, self.values = [], []
        self.write_log_std_grad(d_log_std)
