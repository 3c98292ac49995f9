"""Per-environment settings that differ from the Config defaults (what an env without a preset starts from).

Applied when training starts on one of these envs; any option given on the command
line wins. The measurements behind each entry: docs/design/choices.md, "The presets".
"""

from __future__ import annotations

from a3c.config.options import as_option
from a3c.envs.families import atari_game, is_atari, is_minatar, is_mujoco

# Each preset names --novelty-coef (the flat ones --normalize-obs too), as measured for it: the defaults' auto
# (a novelty bonus, and on flat observations their normalisation, for rewards random play seldom finds) came
# after them (docs/design/choices.md, "Defaults that explore")
PRESETS: dict[str, dict] = {
    # one env per process with 20-step rollouts and prioritised replay: fewer env steps than the defaults'
    # 8 x 8 envs in the same seconds; lr 5e-3: faster than 3e-3, more seeds than 1e-2 (docs/design/choices.md,
    # "The presets" and "The learning rate")
    "CartPole-v1": {
        "envs_per_process": 1,
        "t_max": 20,
        "lr": 5e-3,
        "replay_ratio": 2.0,
        "replay_priority": 0.6,
        "novelty_coef": 0.0,
        "normalize_obs": False,
    },
    # returns near -100 swamp the policy gradient unless scaled; the LSTM with a critic of its own, as the
    # value's error saturated a shared LSTM's cell (docs/design/choices.md, "The critic's own encoder")
    "Acrobot-v1": {
        "max_steps": 500_000,
        "lr": 3e-3,
        "gae_lambda": 0.95,
        "critic": "own",
        "replay_ratio": 1.0,
        "replay_priority": 0.6,
        "novelty_coef": 0.0,
        "normalize_obs": False,
    },
    # angular velocities up to 8 saturate the LSTM unless normalised; replay saves env steps
    # (docs/design/choices.md, "Normalised observations for Pendulum" and "The presets")
    "Pendulum-v1": {
        "max_steps": 2_000_000,
        "gamma": 0.9,
        "gae_lambda": 0.95,
        "reward_scale": 0.125,
        "t_max": 20,
        "lr": 1e-3,
        "entropy_coef": 0.001,
        "normalize_obs": True,
        "eval_interval": 1.0,
        "target_return": -200.0,
        "replay_ratio": 1.0,
        "replay_priority": 0.6,
        "novelty_coef": 0.0,
    },
    # Acrobot's settings with the LSTM; an evaluation of long episodes every 5 s, to leave the cores to the
    # workers (docs/design/choices.md, "The presets")
    "LunarLander-v3": {
        "max_steps": 3_000_000,
        "lr": 3e-3,
        "gae_lambda": 0.95,
        "eval_interval": 5.0,
        "replay_ratio": 1.0,
        "replay_priority": 0.6,
        "novelty_coef": 0.0,
        "normalize_obs": False,
    },
}


# Every ALE/ game: the A3C paper's Atari settings scaled to a small machine, with its LSTM agent: 16 envs x
# t-max 20 a process (wide acting batches: more env steps a second than 4 envs, and on Breakout each
# seed left random play where 4 envs did not), frames centred (Pong's ball was hidden in its
# background), lr 5e-4 (at 1e-3 Pong learned, then its LSTM saturated), the convolutions in bfloat16 where
# the CPU has it (more env steps an hour, Pong learned as well per env step), the newest frame only (more
# env steps an hour again, and the first Pong run confirmed at +18 within the hour) (docs/design/choices.md,
# "The presets", "Centred frames", "bfloat16 convolutions" and "One frame")
ATARI = {
    "max_steps": 20_000_000,
    "clip_rewards": True,
    "reward_scale": 1.0,
    "hidden_sizes": (256,),
    "t_max": 20,
    "envs_per_process": 16,
    "lr": 5e-4,
    "center_frames": True,
    "frames": 1,
    "precision": "auto",
    "eval_interval": 300.0,
    "eval_episodes": 4,
    # a greedy game of Pong lasts minutes once the ball comes back: fewer new games confirm a target than
    # the default's episodes, enough to confirm a policy a few tenths above it (docs/design/choices.md,
    # "Atari's confirmation")
    "confirm_episodes": 30,
    "log_interval": 100_000,
    "print_interval": 10.0,
    "novelty_coef": 0.0,
}

# The games with a target (ALE registers none); the others run to --max-steps
# (docs/design/choices.md, "Atari's confirmation")
ATARI_TARGETS = {"Pong": 18.0}


# Every MinAtar/ game: the LSTM (the default core) after the MinAtar paper's convnet and 128 units, the
# paper's budget; the evaluator plays rarely, so the workers keep the cores (docs/design/choices.md,
# "The presets")
MINATAR = {
    "max_steps": 5_000_000,
    "hidden_sizes": (128,),
    "lr": 1e-3,
    "eval_interval": 30.0,
    "eval_episodes": 5,
    "log_interval": 100_000,
    "print_interval": 10.0,
    "novelty_coef": 0.0,
}


# Every gymnasium MuJoCo task, at the field's budget of 1M env steps: no novelty bonus (dense rewards: on Hopper it
# cost a fifth of the return) and GAE 0.95; no entropy bonus (with the std limited to the action's range it still
# lost a third of HalfCheetah's return and most of Hopper's); returns normalised, 128 units and lr 2e-3
# (docs/design/choices.md, "MuJoCo's preset")
MUJOCO = {
    "max_steps": 1_000_000,
    "gae_lambda": 0.95,
    "novelty_coef": 0.0,
    "normalize_obs": True,
    "entropy_coef": 0.0,
    "normalize_returns": True,
    "reward_scale": 1.0,
    "hidden_sizes": (128,),
    "lr": 2e-3,
    "eval_interval": 15.0,
}


def preset_for(env_id: str) -> dict:
    if is_atari(env_id):
        target = ATARI_TARGETS.get(atari_game(env_id))
        return ATARI if target is None else {**ATARI, "target_return": target}
    if is_minatar(env_id):
        return MINATAR
    if is_mujoco(env_id):
        return MUJOCO
    return PRESETS.get(env_id.split(":")[-1], {})


def format_presets() -> str:
    lines = []
    games = {f"ALE/{game}-v5": preset_for(f"ALE/{game}-v5") for game in ATARI_TARGETS}
    families = {"ALE/* (Atari)": ATARI, **games, "MinAtar/*": MINATAR, "MuJoCo tasks": MUJOCO}
    for env_id, settings in {**PRESETS, **families}.items():
        values = " ".join(as_option(k, v) for k, v in settings.items()) or "(the defaults)"
        lines.append(f"{env_id:<14} {values}")
    return "\n".join(lines)
