"""Every hyperparameter of a run: one frozen dataclass, its defaults and validation."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Any, Union

from a3c.config.file import is_number
from a3c.config.options import option_name
from a3c.config.presets import preset_for
from a3c.envs.families import ATARI_FRAME_STACK, is_atari
from a3c.envs.spec import EnvSpec
from a3c.errors import ConfigError

# What auto means, for each kind of observation (observation_kind), of the settings that depend on it
# (docs/design/choices.md, "Defaults that explore"): on a flat vector, the bonus that with normalised observations
# found MountainCar's flag and DeepSea's corner on every seed; on a picture, the bonus scaled by its return's spread
# and learned by a value of its own that found KeyDoor's goal and DeepSea's corner drawn as a picture, the
# picture normalised for the bonus's networks only; on a Dict or Tuple, neither (not measured there)
AUTO_FOR_OBSERVATIONS = {
    "flat": dict(novelty_coef=0.1, novelty_scale="step", novelty_value="shared", normalize_obs=True),
    "picture": dict(novelty_coef=0.03, novelty_scale="return", novelty_value="non-episodic", normalize_obs=False),
    "parts": dict(novelty_coef=0.0, novelty_scale="step", novelty_value="shared", normalize_obs=False),
}
MAX_PROCESSES = 1024  # worker processes of one machine: 4 a core on 256 cores


@dataclass(frozen=True)
class Config:
    env: str = "CartPole-v1"
    num_processes: int = os.cpu_count() or 1
    envs_per_process: int = 8
    active_workers: int = 0  # at most this many workers act and update at once; 0: one per core (a3c/parallel/turns.py)
    t_max: int = 10
    max_steps: int = 1_000_000
    max_minutes: float = 0.0  # a wall-clock budget besides max_steps; 0: none
    seed: int = 0
    # model
    hidden_sizes: tuple[int, ...] = (64,)  # the encoder's layers; the LSTM is as wide as the last
    core: str = "lstm"  # lstm, or none: a feed-forward network
    noise: bool = True
    sigma_init: float = 0.017
    # a Box action space's Gaussian: the log standard deviation every action dimension starts from (learned,
    # one per dimension, independent of the state); 0: a std of 1, as wide as a [-1, 1] bound
    log_std_init: float = 0.0
    # range: the std at most half the action's range, where both bounds are finite (a3c/learn/distributions.py,
    # Gaussian); none: as wide as it learns to be (runs before a3c 0.28)
    std_limit: str = "range"
    # the stock policy head's initial weights times this, its biases zero: 0.01 starts a policy the same in
    # every state, as the field's PPO references start theirs
    policy_init_scale: float = 1.0
    # NoisyNet's draw: worker, one a rollout for all of a worker's envs; env, one a rollout for each env;
    # episode, one for each env, held until its episode ends (redrawn at the next rollout's start)
    noise_draw: str = "worker"
    # the mean KL (nats) a draw should move the policy by: each worker scales its draws to hold it
    # (a3c/learn/noise_scale.py); 0: the draws as sigma makes them
    noise_kl_target: float = 0.0
    # the weight of a bonus reward for observations the novelty's networks predict badly (random network
    # distillation, a3c/nets/novelty.py), each worker's errors less their rollout's mean over their running
    # spread (--novelty-scale); 0: none; auto: AUTO_FOR_OBSERVATIONS's for the env's observations (for_spaces)
    novelty_coef: Union[float, str] = "auto"
    # which value learns the bonus's return: shared, the env's reward and the bonus summed, one value head; episodic,
    # a value head of its own, its return ending with the episode; non-episodic, running on across episodes
    # (random network distillation's); the policy follows both values' advantages summed; auto:
    # AUTO_FOR_OBSERVATIONS's where the run has a bonus and learns two values, else shared
    novelty_value: str = "auto"
    # what each worker divides the bonus by, a running spread: step, its errors' root mean square (the weight is
    # about the bonus of a step to new ground); return, the standard deviation of the bonus's discounted sums
    # (random network distillation's: the weight is about the spread of the bonus's return); auto:
    # AUTO_FOR_OBSERVATIONS's
    novelty_scale: str = "auto"
    model: str = ""  # module:function building the user's own torch network instead of the stock one
    learner: str = "auto"  # numpy: the stock network's fast path; torch: autograd; auto: numpy where it covers
    # the frames encoder's convolutions: float32, bfloat16 (autocast), or auto: bfloat16 where the CPU has it
    # natively; float32 by default until bfloat16 is shown to learn as well (docs/design/choices.md,
    # "bfloat16 convolutions")
    precision: str = "float32"
    # loss and returns
    gamma: float = 0.99
    # rewards are multiplied by this in the loss (logs show them unscaled). With Adam, 0.1 and a value
    # coefficient of 0.5 act as an entropy bonus ten times stronger relative to the policy gradient and
    # clipping ten times looser: CartPole solved sooner, and on every seed (docs/design/choices.md,
    # "Reward scale 0.1 and the value-loss coefficient")
    reward_scale: float = 0.1
    # running mean/std of observations, shared by the workers; auto: on for a flat vector of observations, off
    # for frames and Dict or Tuple ones (for_spaces)
    normalize_obs: Union[bool, str] = "auto"
    # rewards divided by the running std of each env's discounted return, shared by the workers
    # (a3c/learn/return_scale.py), then multiplied by --reward-scale: value targets near unit scale whatever
    # the rewards' units
    normalize_returns: bool = False
    # frames: each frame less its own mean pixel before the convnet; on for Atari, where Pong's grey
    # background hid the ball from the critic (docs/design/choices.md, "Centred frames")
    center_frames: bool = False
    # the frames encoder's convolutions: a3c, the A3C paper's on 84 x 84 frames; small, four 3x3 stride-2
    # convolutions on frames averaged to 42 x 42 (docs/design/choices.md, "The small convnet")
    convnet: str = "a3c"
    # Atari: how many of the stacked frames the convnet reads, the newest (0: all four); 1 as the references'
    # LSTM agents read, the LSTM carrying the motion (docs/design/choices.md, "One frame")
    frames: int = 0
    # on: the value head learns the return less the running mean of the value targets (shared by the
    # workers). auto: on for the LSTM, whose tanh-bounded state must otherwise reach returns of -10 and
    # more (on Acrobot, Adam saturated it instead), off for feed-forward networks, which reach
    # them with ReLU features and explore by the optimism of a value starting near 0
    # (docs/design/choices.md, "The LSTM's scale")
    center_values: str = "auto"
    # own: the value head reads an encoder of its own beside the LSTM's output, with no gradient into it;
    # shared: what the policy head reads, training the encoder and the LSTM with the policy. Shared by
    # default: on CartPole and Pendulum the value's error teaches the LSTM what to attend to (own takes
    # more env steps); on Acrobot it saturates the cell, and the own critic brings the LSTM close to
    # feed-forward there (docs/design/choices.md, "The critic's own encoder")
    critic: str = "shared"
    clip_rewards: bool = False  # the loss sees the sign of each reward (Atari's standard); logs do not
    gae_lambda: float = 1.0
    value_loss_coef: float = 0.5
    # The NoisyNet paper drops the entropy bonus; without it, 1 env per worker (CartPole, t-max 20)
    # collapsed early to a near-deterministic policy on some seeds, and with it every seed solved
    # (docs/design/choices.md, "The entropy bonus with NoisyNet")
    entropy_coef: float = 0.01
    max_grad_norm: float = 5.0
    # experience replay inside each worker (ACER-style), corrected by V-trace (a3c/learn/returns.py)
    replay_ratio: float = 0.0  # replayed updates after each on-policy one, on average (Poisson); 0: pure A3C
    replay_capacity: int = 64  # rollouts each worker keeps
    replay_priority: float = 0.0  # prioritised replay's alpha; 0: uniform
    rho_bar: float = 1.0  # V-trace's truncation of the importance weights (IMPALA's default)
    c_bar: float = 1.0  # and of the traces
    # optimizer
    optimizer: str = "adam"
    # an env without a preset: at 5e-3 MountainCar's policy turned deterministic before it found the flag,
    # at 1e-3 it found and held it (CartPole's preset keeps 5e-3; docs/design/choices.md, "The learning rate")
    lr: float = 1e-3
    lr_decay: bool = True
    # evaluation and logging
    eval_interval: float = 0.5
    eval_episodes: int = 10
    # an evaluation that reaches the target solves only if this many new episodes of the same weights
    # confirm it (0: it solves alone): the best of many evaluations' means is a lucky draw
    # (docs/design/choices.md, '"Solved" is confirmed on new episodes')
    confirm_episodes: int = 100
    video_interval: float = 0.0  # seconds between the evaluator's videos in RUN_DIR/videos; 0: none
    target_return: Union[float, str, None] = "auto"  # "auto": the env spec's reward_threshold
    log_interval: int = 20_000
    print_interval: float = 2.0
    tensorboard: bool = True
    track: str = "none"  # mlflow or wandb: the run logged to a tracker as it goes (a3c/run/tracking.py)
    # robustness
    checkpoint_interval: float = 60.0  # seconds between checkpoints/last.pt writes
    max_worker_restarts: int = 3
    # seconds a worker or the evaluator may show no progress before it is killed and restarted; 0: never.
    # Far above the longest silence of a healthy run seen (a worker's start-up, many Atari workers on few
    # cores), to leave room for slower machines and simulators (docs/design/choices.md, "Faults")
    worker_timeout: float = 300.0
    run_dir: str = ""
    start_method: str = ""
    # transport
    backend: str = "local"  # local: shared-memory processes; ray: a node group per node, synced now and then
    ray_address: str = ""  # "": start a local Ray instance; "auto" or HOST:PORT: join a running cluster
    # join a cluster that requires no token, whose every client may run code on its machines
    # (docs/guides/clusters.md, "Security")
    ray_allow_unauthenticated: bool = False
    nodes: int = 0  # node groups of --num-processes workers each; 0: one per node of the cluster
    # updates of a group's optimizer between its exchanges with the global model: 50 makes many times fewer calls
    # than one per update, and with the groups' deltas averaged the presets solve at it (docs/design/choices.md,
    # "Node groups", with the measurements)
    sync_interval: int = 50
    global_shards: int = 0  # actors holding the global weights; 0: one per 4M parameters
    placement_timeout: float = 120.0  # seconds a (replacement) node group may take to find free CPUs and start

    def __post_init__(self) -> None:
        """Refuse a setting out of its range, naming the option: the first broken rule of the topics in order."""
        widths = (self.hidden_sizes,) if isinstance(self.hidden_sizes, int) else tuple(self.hidden_sizes)
        object.__setattr__(self, "hidden_sizes", widths)  # hashable and JSON-stable, however it was given
        require_finite(self)
        rules = (
            *run_size_rules(self),
            *network_rules(self),
            *loss_rules(self),
            *replay_rules(self),
            *optimizer_rules(self),
            *evaluation_rules(self),
            *run_rules(self),
            *backend_rules(self),
        )
        for name, ok, rule in rules:
            if not ok:
                raise ConfigError(f"{option_name(name)} must be {rule}, got {getattr(self, name)!r}")

    @classmethod
    def for_env(cls, env: str, **overrides: Any) -> "Config":
        """The env's preset (a3c/config/presets.py) with `overrides` on top, as the command line applies them.

        Args:
            env: a gymnasium id (`"CartPole-v1"`, `"ALE/Pong-v5"`), or `"module:EnvId"` to import the
                module that registers it.
            **overrides: any field of Config by name (`num_processes=8`, `lr=1e-3`).

        Returns:
            The validated settings.

        Raises:
            a3c.errors.ConfigError: a value out of its range, or settings that do not go together.
        """
        return cls(**{**preset_for(env), **overrides, "env": env})

    @classmethod
    def from_file(cls, path: str | os.PathLike, **overrides: Any) -> "Config":
        """A TOML file's settings (or a run's config.json, to repeat the run) on top of its env's preset,
        and `overrides` on top of those, as --config and the command line apply them.

        Args:
            path: a .toml file of options (spelt as fields or as the command line's options) or a .json
                file, like a run's config.json.
            **overrides: fields of Config on top of the file's.

        Raises:
            a3c.errors.ConfigError: a file that cannot be read, an unknown option, or a bad value (named
                with the file).
        """
        from a3c.config.file import file_options

        values = file_options(path, cls)
        env = overrides.get("env", values.pop("env", cls.env))
        try:
            cls.for_env(env, **values)  # the file's own values, so that an error names the file
        except ConfigError as error:
            raise ConfigError(f"--config {path}: {error}") from None
        return cls.for_env(env, **{**values, **{k: v for k, v in overrides.items() if k != "env"}})

    def replace(self, **changes: Any) -> "Config":
        """A copy with `changes` (fields by name), validated again."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """Plain data, as config.json holds it (a tuple becomes a list)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, values: dict) -> "Config":
        """From a saved config (a3c/learn/checkpoint.py upgrades older ones); fields this version lacks are dropped."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


# A rule of a setting: the field, whether its value keeps the rule, and the rule as the error states it
# ("--gamma must be in (0, 1], got 1.5").
Rule = tuple[str, bool, str]


def require_finite(config: Config) -> None:
    """Every float setting is a finite number: nan passes no comparison, inf passes too many."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{option_name(field.name)} must be a finite number, got {value!r}")


def run_size_rules(config: Config) -> list[Rule]:
    """The run's size: its workers, their envs and rollouts, the budget and the seed."""
    return [
        (
            "num_processes",
            1 <= config.num_processes <= MAX_PROCESSES,
            f"in [1, {MAX_PROCESSES}] (more workers: --backend ray, a group of them on each node)",
        ),
        ("envs_per_process", config.envs_per_process >= 1, ">= 1"),
        ("active_workers", config.active_workers >= 0, ">= 0 (0: one per core)"),
        ("t_max", config.t_max >= 1, ">= 1"),
        ("max_steps", config.max_steps >= 1, ">= 1"),
        ("max_minutes", config.max_minutes >= 0, ">= 0 (0: no wall-clock budget)"),
        ("seed", config.seed >= 0, ">= 0"),
    ]


def network_rules(config: Config) -> list[Rule]:
    """The network: its layers, core, critic and noise, and the learner that runs it."""
    return [
        (
            "hidden_sizes",
            len(config.hidden_sizes) >= 1 and all(isinstance(n, int) and n >= 1 for n in config.hidden_sizes),
            "one or more widths >= 1, like 64,64",
        ),
        ("core", config.core in ("lstm", "none"), "one of lstm, none"),
        ("center_values", config.center_values in ("auto", "on", "off"), "one of auto, on, off"),
        ("critic", config.critic in ("own", "shared"), "one of own, shared"),
        ("learner", config.learner in ("auto", "numpy", "torch"), "one of auto, numpy, torch"),
        ("precision", config.precision in ("auto", "float32", "bfloat16"), "one of auto, float32, bfloat16"),
        ("convnet", config.convnet in ("a3c", "small"), "one of a3c, small"),
        ("frames", 0 <= config.frames <= ATARI_FRAME_STACK, f"in [0, {ATARI_FRAME_STACK}] (0: every stacked frame)"),
        ("frames", not config.frames or is_atari(config.env), "0 but for Atari, whose frames are a stack in time"),
        (
            "learner",
            not (config.learner == "numpy" and config.model),
            "auto or torch with --model (the numpy learner runs the stock network only)",
        ),
        ("sigma_init", config.sigma_init >= 0, ">= 0"),
        ("noise_draw", config.noise_draw in ("worker", "env", "episode"), "one of worker, env, episode"),
        ("std_limit", config.std_limit in ("range", "none"), "one of range, none"),
        ("policy_init_scale", config.policy_init_scale > 0, "> 0"),
        ("noise_kl_target", config.noise_kl_target >= 0, ">= 0 (0: the draws as sigma makes them)"),
        ("noise_kl_target", not (config.noise_kl_target and not config.noise), "0 with --no-noise: nothing to scale"),
        (
            "novelty_coef",
            config.novelty_coef == "auto" or is_number(config.novelty_coef) and config.novelty_coef >= 0,
            ">= 0 (0: no novelty bonus), or auto",
        ),
        ("normalize_obs", config.normalize_obs in (True, False, "auto"), "true, false or auto"),
        ("novelty_scale", config.novelty_scale in ("auto", "step", "return"), "one of auto, step, return"),
        (
            "novelty_value",
            config.novelty_value in ("auto", "shared", "episodic", "non-episodic"),
            "one of auto, shared, episodic, non-episodic",
        ),
        (
            "novelty_value",
            config.novelty_value in ("auto", "shared") or not learns_one_value(config),
            "shared or auto with --model or --replay-ratio above 0 (each learns one value)",
        ),
    ]


def loss_rules(config: Config) -> list[Rule]:
    """The loss and its returns."""
    return [
        ("gamma", 0 < config.gamma <= 1, "in (0, 1]"),
        ("reward_scale", config.reward_scale > 0, "> 0"),
        ("gae_lambda", 0 <= config.gae_lambda <= 1, "in [0, 1]"),
        ("value_loss_coef", config.value_loss_coef >= 0, ">= 0"),
        ("entropy_coef", config.entropy_coef >= 0, ">= 0"),
        ("max_grad_norm", config.max_grad_norm > 0, "> 0"),
    ]


def replay_rules(config: Config) -> list[Rule]:
    """Experience replay and V-trace's truncations."""
    return [
        ("replay_ratio", 0 <= config.replay_ratio <= 64, "in [0, 64]"),
        ("replay_capacity", config.replay_capacity >= 1, ">= 1"),
        ("replay_priority", config.replay_priority >= 0, ">= 0"),
        ("rho_bar", config.rho_bar > 0, "> 0"),
        ("c_bar", config.c_bar > 0, "> 0"),
    ]


def optimizer_rules(config: Config) -> list[Rule]:
    """The optimizer and its learning rate."""
    return [
        ("optimizer", config.optimizer in ("adam", "rmsprop"), "one of adam, rmsprop"),
        ("lr", config.lr > 0, "> 0"),
    ]


def evaluation_rules(config: Config) -> list[Rule]:
    """The evaluator: its interval, episodes, confirmations and videos."""
    return [
        ("eval_interval", config.eval_interval > 0, "> 0"),
        ("eval_episodes", config.eval_episodes >= 0, ">= 0"),
        (
            "confirm_episodes",
            config.confirm_episodes == 0 or config.confirm_episodes >= 2,
            ">= 2 (a spread needs two), or 0: no confirmation",
        ),
        ("video_interval", config.video_interval >= 0, ">= 0 (0: no videos)"),
        (
            "video_interval",
            not (config.video_interval and not config.eval_episodes),
            "0 without the evaluator (--eval-episodes 0): the evaluator films",
        ),
    ]


def run_rules(config: Config) -> list[Rule]:
    """The run around the learning: its logs, checkpoints and watchdog, its target, where it writes and how its
    processes start."""
    return [
        ("log_interval", config.log_interval >= 1, ">= 1"),
        ("print_interval", config.print_interval > 0, "> 0"),
        ("track", config.track in ("none", "mlflow", "wandb"), "one of none, mlflow, wandb"),
        ("checkpoint_interval", config.checkpoint_interval > 0, "> 0"),
        ("max_worker_restarts", config.max_worker_restarts >= 0, ">= 0"),
        ("worker_timeout", config.worker_timeout >= 0, ">= 0 (0: no watchdog)"),
        (
            "target_return",
            config.target_return in ("auto", None) or isinstance(config.target_return, (int, float)),
            "a number, auto or none",
        ),
        ("run_dir", "\x00" not in config.run_dir, "a path without NUL characters"),
        ("start_method", config.start_method in ("", "fork", "spawn", "forkserver"), "one of fork, spawn, forkserver"),
    ]


def backend_rules(config: Config) -> list[Rule]:
    """The backend: Ray's cluster, node groups, syncs and shards."""
    return [
        ("backend", config.backend in ("local", "ray"), "one of local, ray"),
        ("ray_address", not config.ray_address or config.backend == "ray", "given only with --backend ray"),
        (
            "ray_allow_unauthenticated",
            not config.ray_allow_unauthenticated or bool(config.ray_address),
            "given only with --ray-address (a local instance always has a token)",
        ),
        ("nodes", config.nodes >= 0, ">= 0 (0: one node group per node)"),
        ("sync_interval", config.sync_interval >= 1, ">= 1"),
        ("global_shards", config.global_shards >= 0, ">= 0 (0: one per 4M parameters)"),
        ("placement_timeout", config.placement_timeout > 0, "> 0"),
    ]


# Settings a checkpoint's weights depend on: a resumed run cannot change them.
STRUCTURAL_FIELDS = (
    "env",
    "hidden_sizes",
    "core",
    "noise",
    "model",
    "optimizer",
    "normalize_obs",
    "normalize_returns",
    "center_frames",
    "convnet",
    "frames",
    "novelty_coef",
    "novelty_value",
    "center_values",
    "critic",
)
# Of these, the ones whose weights depend on part of the value only: the novelty networks are there or not,
# whatever the bonus's coefficient, so a resumed run may change it but not turn it on or off.
STRUCTURAL_PARTS = {"novelty_coef": bool}


def structure_of(name: str, value):
    """What of a structural setting's value a checkpoint's weights depend on."""
    return STRUCTURAL_PARTS.get(name, lambda whole: whole)(value)


def centers_values(config: Config) -> bool:
    """Whether the value head learns returns less their running mean: --center-values, where auto means
    the stock network whose value head reads the LSTM's output and trains it (--critic shared)."""
    return config.center_values == "on" or (
        config.center_values == "auto" and config.core == "lstm" and not config.model and config.critic == "shared"
    )


def config_for_resume(saved: Config, overrides: dict, spec: EnvSpec) -> Config:
    """The saved run's config with the options given again on the command line applied; an auto among them
    decided for the env's spaces (`spec`) first, as the saved run's was.

    Refuses a change the checkpoint cannot support (another env or network shape).
    """
    decided = auto_for_spaces(saved.replace(**overrides), spec)
    overrides = {
        name: decided[name] if name in decided and value == "auto" else value for name, value in overrides.items()
    }
    for name in STRUCTURAL_FIELDS:
        if name in overrides and structure_of(name, overrides[name]) != structure_of(name, getattr(saved, name)):
            raise ConfigError(
                f"{option_name(name)} {overrides[name]!r} contradicts the checkpoint, "
                f"which was trained with {getattr(saved, name)!r}"
            )
    changes = {k: v for k, v in overrides.items() if k != "run_dir"}
    if changes.get("backend") == "local":
        # a Ray run resumed locally: its cluster and what it allowed of it mean nothing here
        changes.setdefault("ray_address", "")
        changes.setdefault("ray_allow_unauthenticated", False)
    return saved.replace(**changes)


def learns_one_value(config: Config) -> bool:
    """Whether the run's value learns one return only: the user's network has one value head, and replay's
    corrections follow one return."""
    return bool(config.model or config.replay_ratio)


def observation_kind(spec: EnvSpec) -> str:
    """flat: one vector; picture: one image or stack of frames; parts: a Dict or Tuple's."""
    if spec.obs_parts is not None:
        return "parts"
    return "flat" if len(spec.obs_shape) == 1 else "picture"


def auto_for_spaces(config: Config, spec: EnvSpec) -> dict:
    """What auto means for `config` on this env's observations, of the settings that depend on them
    (AUTO_FOR_OBSERVATIONS): the bonus's value of its own only where the run has a bonus and learns two values."""
    decided = dict(AUTO_FOR_OBSERVATIONS[observation_kind(spec)])
    coef = decided["novelty_coef"] if config.novelty_coef == "auto" else config.novelty_coef
    if not coef or learns_one_value(config):
        decided["novelty_value"] = "shared"
    return decided


def for_spaces(config: Config, spec: EnvSpec) -> Config:
    """`config` with its auto settings of auto_for_spaces decided for the env's observations."""
    decided = auto_for_spaces(config, spec)
    return config.replace(**{name: value for name, value in decided.items() if getattr(config, name) == "auto"})
