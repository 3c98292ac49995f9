"""A trained network that acts: `load_agent(path)` and `Agent.act(obs, state)`, for the evaluator,
the `evaluate` command and users' own code."""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np
import torch

from a3c.config.settings import Config
from a3c.envs.make import env_spec
from a3c.envs.parts import flatten_batch
from a3c.envs.spec import EnvSpec
from a3c.errors import EnvError
from a3c.learn.checkpoint import check_spaces, load_checkpoint
from a3c.learn.distributions import distribution, mask_logits
from a3c.learn.policies import make_policy
from a3c.nets.actor_critic import Network
from a3c.nets.factory import build_model


class Agent:
    """Acts on observation batches with a network's mean weights (no NoisyNet noise).

    `act` gives the actions the env takes: [B] for a Discrete space (offset by its
    start), [B, *shape] for a Box (the Gaussian mean, squashed into the bounds);
    observation normalisation is applied as in training. The recurrent state is
    per row: pass `episode_start` [B] (True where a new episode begins) to reset rows.
    """

    def __init__(
        self,
        model: Network,
        spec: EnvSpec,
        learner: str = "auto",
        config: Optional[Config] = None,
        seed: Optional[int] = None,
    ):
        self.model, self.spec, self.config = model.eval(), spec, config
        self.distribution = distribution(spec, (config or Config()).std_limit == "range")
        self.policy = make_policy(model, learner)
        self.rng = np.random.default_rng(seed)
        self.weights_changed()

    def weights_changed(self) -> None:
        """Call after the model's weights were replaced in place (the fast path caches derived weights)."""
        self.policy.begin_rollout(())

    def initial_state(self, batch_size: int) -> Any:
        """The recurrent state of `batch_size` new episodes: zeros of [batch_size, width] (h, c); () without LSTM."""
        return self.policy.initial_state(batch_size)

    @torch.no_grad()
    def act(
        self,
        obs: np.ndarray | dict | tuple,
        state: Any = None,
        deterministic: bool = True,
        episode_start: Optional[np.ndarray] = None,
        action_mask: Optional[np.ndarray] = None,
    ) -> tuple[np.ndarray, Any]:
        """The actions for a batch of observations, and the recurrent state to pass with the next batch.

        Args:
            obs: [B, *obs_shape] observations; a Dict observation's batch may come as a dict of each
                part's batch, a Tuple's as a tuple of them.
            state: the state `act` returned for the previous batch of the same episodes; None at the start
                (the initial state of B episodes).
            deterministic: the greedy action (the argmax, or a Box's mean); else a sample of the policy.
            episode_start: [B] bool, True where a new episode begins: those rows' state is reset.
            action_mask: [B, n] bool (or 0/1), True where an action is legal (a multi-part action's parts
                one after another): only legal actions are taken.

        Returns:
            (actions, state): actions as the env takes them, [B] for a Discrete space (offset by its
                start), [B, parts] for a MultiDiscrete or MultiBinary one, [B, *shape] for a Box (squashed
                into its bounds); state: the LSTM's (h, c) of [B, width] each, () for a feed-forward
                network.

        Raises:
            ValueError: `obs` or `action_mask` of the wrong shape.
        """
        if self.spec.obs_parts is not None and isinstance(obs, (dict, tuple)):
            obs = flatten_batch(self.spec.obs_parts, obs)
        obs = np.asarray(obs, dtype=self.spec.obs_dtype)
        if obs.shape[1:] != self.spec.obs_shape:
            raise ValueError(
                f"obs must be a batch [B, {', '.join(map(str, self.spec.obs_shape))}], got shape {list(obs.shape)}"
            )
        if state is None:
            state = self.initial_state(len(obs))
        elif episode_start is not None:
            state = self.policy.restart(state, np.asarray(episode_start, dtype=bool))
        head, _, state = self.policy.act(obs, state, record=False)
        if action_mask is not None:
            head = mask_logits(head, self.checked_mask(action_mask, len(obs)))
        actions = (
            self.distribution.greedy(head)
            if deterministic
            else self.distribution.sample(head, self.policy.log_std, self.rng)
        )
        return self.spec.env_actions(actions), state

    def checked_mask(self, action_mask, batch: int) -> np.ndarray:
        mask = np.asarray(action_mask)
        if self.spec.continuous or mask.shape != (batch, self.spec.num_actions):
            raise ValueError(
                f"action_mask must be a batch [{batch}, {self.spec.num_actions}] for the action space "
                f"{self.spec.action_space}, got shape {list(mask.shape)}"
            )
        return mask.astype(bool, copy=False)


def model_from_checkpoint(payload: dict, env_id: Optional[str] = None) -> tuple[Network, Config, EnvSpec]:
    """The checkpoint's network with its weights, for its own env or another with the same spaces."""
    config = Config.from_dict(payload["config"])
    if env_id is not None:
        config = config.replace(env=env_id)
    spec = env_spec(config.env)
    check_spaces(payload, spec, config.env)
    model = build_model(config, spec)
    try:
        model.load_state_dict(payload["model"])
    except RuntimeError:
        raise EnvError(f"the checkpoint's network does not fit {config.env}'s spaces") from None
    return model, config, spec


def load_agent(path: str | os.PathLike, env_id: Optional[str] = None, seed: Optional[int] = None) -> Agent:
    """An Agent from a checkpoint (a run's checkpoints/best.pt or last.pt), for its env or `env_id`."""
    model, config, spec = model_from_checkpoint(load_checkpoint(path), env_id)
    return Agent(model, spec, config.learner, config, seed)
