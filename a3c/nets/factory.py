"""The one place a network is built from a run's Config and an env's EnvSpec: the stock ActorCritic, its
structured variant for Dict and Tuple observations, or the user's own module (--model)."""

from __future__ import annotations

import torch
from torch import nn

from a3c.config.settings import Config, centers_values, for_spaces
from a3c.envs.spec import EnvSpec
from a3c.errors import ConfigError
from a3c.nets.actor_critic import ActorCritic, Network, NoisyLinear, RunningNorm, StockOptions
from a3c.nets.novelty import NORM_CLIP, NoveltyNets, novelty_parts
from a3c.nets.precision import resolved_precision
from a3c.nets.structured import PartsNorm, StructuredActorCritic
from a3c.nets.user import user_network


def stock_options(config: Config, spec: EnvSpec) -> StockOptions:
    """What the stock network's options are under a Config whose auto settings build_model has decided (every
    stock network is built with these)."""
    return StockOptions(
        hidden_sizes=tuple(config.hidden_sizes),
        core=config.core,
        noisy=config.noise,
        sigma_init=config.sigma_init,
        continuous=spec.continuous,
        normalize_obs=config.normalize_obs,
        center_values=centers_values(config),
        own_critic=config.critic == "own",
        bfloat16=resolved_precision(config.precision) == "bfloat16",
        center_frames=config.center_frames,
        convnet=config.convnet,
        frames=config.frames,
        value_heads=1 if config.novelty_value == "shared" else 2,
    )


def build_model(config: Config, spec: EnvSpec) -> Network:
    """The network a run's Config asks for, for an env's EnvSpec: the stock one, or the user's (--model).

    A Dict or Tuple observation (`spec.obs_parts`) gets the stock network with its parts encoded one by one
    (a3c/nets/structured.py), or hands the user's module a dict of tensors; its statistics cover the Box parts only.
    With --novelty-coef the network carries the novelty's networks too, and for a picture or a Dict or Tuple
    their statistics (a3c/nets/novelty.py).
    """
    config = for_spaces(config, spec)
    if spec.obs_parts is not None and config.learner == "numpy":
        raise ConfigError(
            "--learner numpy runs flat observations and frames only; a Dict or Tuple observation "
            "trains with --learner auto or torch"
        )
    if config.novelty_value != "shared" and not config.novelty_coef:
        raise ConfigError(
            f"--novelty-value {config.novelty_value} learns the novelty bonus's return, and this run has no bonus: "
            "give --novelty-coef above 0 (the presets name 0, and auto is 0 on Dict or Tuple observations)"
        )
    if config.model:
        model = user_network(config.model, spec, config.normalize_obs, centers_values(config))
    elif spec.obs_parts is not None:
        model = StructuredActorCritic(spec.obs_parts, spec.num_actions, stock_options(config, spec))
    else:
        model = ActorCritic(spec.obs_shape, spec.num_actions, stock_options(config, spec))
    if spec.obs_parts is not None and model.obs_norm is not None:
        model.obs_norm = PartsNorm(spec.obs_parts)
    if config.novelty_coef:
        parts = novelty_parts(spec.obs_shape, spec.obs_parts)
        model.novelty = NoveltyNets(spec.obs_shape, parts, config.frames)
        if parts is not None:
            model.novelty_norm = PartsNorm(model.novelty.view.viewed_parts, NORM_CLIP, normalised=("box", "frames"))
    if config.normalize_returns:
        model.return_stats = RunningNorm(())
    if model.log_std is not None:
        model.log_std.data.fill_(config.log_std_init)
    if config.policy_init_scale != 1.0 and not config.model:
        scale_policy_head(model.policy, config.policy_init_scale)
    return model


@torch.no_grad()
def scale_policy_head(head: nn.Module, scale: float) -> None:
    """The stock policy head's initial weights times `scale` and its biases zero: with a small scale the
    policy starts the same in every state (its mean at the action's centre, or uniform logits)."""
    weight, bias = (head.weight_mu, head.bias_mu) if isinstance(head, NoisyLinear) else (head.weight, head.bias)
    weight.mul_(scale)
    bias.zero_()
