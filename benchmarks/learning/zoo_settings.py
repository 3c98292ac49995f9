"""The RL Baselines3 Zoo's hyperparameters (its hyperparams/a2c.yml and ppo.yml) for the envs the benchmarks run
Stable-Baselines3 on, as sb3_solve.py passes them: (env, algo): n_envs, n_timesteps, normalize (VecNormalize of
observations and rewards), the algorithm's keyword arguments. n_timesteps is also the horizon of the Zoo's linear
schedules."""

from __future__ import annotations

from torch import nn


def linear(start: float):
    """The Zoo's lin_<start>: decays linearly from start to 0 over the step budget."""
    return lambda progress_remaining: progress_remaining * start


# (env, algo): n_envs, n_timesteps, normalize, the algorithm's keyword arguments. LunarLander-v3 takes
# the Zoo's LunarLander-v2 entry (v3 only fixed bugs of the simulation).
ZOO = {
    ("CartPole-v1", "a2c"): (8, 500_000, False, dict(ent_coef=0.0)),
    ("CartPole-v1", "ppo"): (
        8,
        100_000,
        False,
        dict(
            n_steps=32,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate=linear(0.001),
            clip_range=linear(0.2),
        ),
    ),
    ("Acrobot-v1", "a2c"): (16, 500_000, True, dict(ent_coef=0.0)),
    ("Acrobot-v1", "ppo"): (
        16,
        1_000_000,
        True,
        dict(n_steps=256, gae_lambda=0.94, gamma=0.99, n_epochs=4, ent_coef=0.0),
    ),
    ("MountainCar-v0", "a2c"): (16, 1_000_000, True, dict(ent_coef=0.0)),
    ("MountainCar-v0", "ppo"): (
        16,
        1_000_000,
        True,
        dict(n_steps=16, gae_lambda=0.98, gamma=0.99, n_epochs=4, ent_coef=0.0),
    ),
    ("LunarLander-v3", "a2c"): (
        8,
        200_000,
        False,
        dict(gamma=0.995, n_steps=5, learning_rate=linear(0.00083), ent_coef=0.00001),
    ),
    ("LunarLander-v3", "ppo"): (
        16,
        1_000_000,
        False,
        dict(n_steps=1024, batch_size=64, gae_lambda=0.98, gamma=0.999, n_epochs=4, ent_coef=0.01),
    ),
    ("Pendulum-v1", "a2c"): (
        8,
        1_000_000,
        True,
        dict(
            ent_coef=0.0,
            max_grad_norm=0.5,
            n_steps=8,
            gae_lambda=0.9,
            vf_coef=0.4,
            gamma=0.9,
            use_rms_prop=True,
            normalize_advantage=False,
            learning_rate=linear(7e-4),
            use_sde=True,
            policy_kwargs=dict(log_std_init=-2, ortho_init=False),
        ),
    ),
    ("Pendulum-v1", "ppo"): (
        4,
        100_000,
        False,
        dict(
            n_steps=1024,
            gae_lambda=0.95,
            gamma=0.9,
            n_epochs=10,
            ent_coef=0.0,
            learning_rate=1e-3,
            clip_range=0.2,
            use_sde=True,
            sde_sample_freq=4,
        ),
    ),
}


# MuJoCo's tasks: the Zoo's entries for their v4 (InvertedPendulum, InvertedDoublePendulum and Reacher: v2)
# versions, the same tasks as v5. A2C: SB3's defaults with observations and rewards normalised, one env.
for task in ("HalfCheetah-v5", "Hopper-v5", "Ant-v5", "Walker2d-v5", "Swimmer-v5"):
    ZOO[(task, "a2c")] = (1, 1_000_000, True, dict(gamma=0.9999) if task == "Swimmer-v5" else {})
# PPO's tuned entries: batch size, rollout steps, gamma, learning rate, entropy weight, clip range, epochs,
# GAE lambda, gradient clip, value weight
PPO_MUJOCO = {
    "HalfCheetah-v5": (64, 512, 0.98, 2.0633e-05, 0.000401762, 0.1, 20, 0.92, 0.8, 0.58096),
    "Hopper-v5": (32, 512, 0.999, 9.80828e-05, 0.00229519, 0.2, 5, 0.99, 0.7, 0.835671),
    "Walker2d-v5": (32, 512, 0.99, 5.05041e-05, 0.000585045, 0.1, 20, 0.95, 1.0, 0.871923),
    "InvertedPendulum-v5": (64, 32, 0.999, 0.000222425, 1.37976e-07, 0.4, 5, 0.9, 0.3, 0.19816),
    "InvertedDoublePendulum-v5": (512, 128, 0.98, 0.000155454, 1.05057e-06, 0.4, 10, 0.8, 0.5, 0.695929),
    "Reacher-v5": (32, 512, 0.9, 0.000104019, 7.52585e-08, 0.3, 5, 1.0, 0.9, 0.950368),
}
PPO_NAMES = (
    "batch_size",
    "n_steps",
    "gamma",
    "learning_rate",
    "ent_coef",
    "clip_range",
    "n_epochs",
    "gae_lambda",
    "max_grad_norm",
    "vf_coef",
)
# the locomotion entries' network: 256-256 ReLU, the log-std starting at -2
WIDE = dict(log_std_init=-2, ortho_init=False, activation_fn=nn.ReLU, net_arch=dict(pi=[256, 256], vf=[256, 256]))
for task, values in PPO_MUJOCO.items():
    wide = dict(policy_kwargs=WIDE) if task in ("HalfCheetah-v5", "Hopper-v5") else {}
    ZOO[(task, "ppo")] = (1, 1_000_000, True, {**dict(zip(PPO_NAMES, values)), **wide})
ZOO[("Ant-v5", "ppo")] = (1, 1_000_000, True, {})  # the Zoo's MuJoCo defaults: SB3's own settings
# The sparse tasks seen as pictures (explore.py --pictures): the Zoo has no entry for them; its MiniGrid entries
# (grid worlds of keys, doors and goals seen from above, after the rl-starter-files' PPO) are the nearest. Their
# observations are flattened for the MLP (the Zoo flattens MiniGrid's too) and normalised; the budget is the
# trainer's default, 1M env steps, where the Zoo's MiniGrid tasks take 100k.
MINIGRID_PPO = dict(
    n_steps=128, batch_size=64, gae_lambda=0.95, gamma=0.99, n_epochs=10, ent_coef=0.0, learning_rate=2.5e-4,
    clip_range=0.2,
)  # fmt: skip
for task in ("a3c/PixelDeepSea20-v0", "a3c/KeyDoor8-v0", "a3c/KeyDoor16-v0"):
    ZOO[(task, "ppo")] = (8, 1_000_000, True, MINIGRID_PPO)
ZOO[("Swimmer-v5", "ppo")] = (
    4,
    1_000_000,
    True,
    dict(gamma=0.9999, n_steps=1024, batch_size=256, learning_rate=6e-4, gae_lambda=0.98),
)
