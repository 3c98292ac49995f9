"""Per-environment settings that differ from the Config defaults (which are tuned for CartPole-v1).

Applied when training starts on one of these envs; any option given on the command
line wins. Each entry's budget and result are in the README.
"""

from __future__ import annotations

from a3c.config.options import as_option
from a3c.envs.families import is_atari, is_minatar

PRESETS: dict[str, dict] = {
    # one env per process, 20-step rollouts, two prioritised replays after each: 10 of 10 seeds solved at a
    # median 10k env steps (max 14k) in 4.8 s, against 56k (max 93k) in 4.8 s with the defaults (8 x 8 envs,
    # no replay); more envs per process with replay took 2-5x the env steps (benchmarks/README.md)
    "CartPole-v1": {"envs_per_process": 1, "t_max": 20, "replay_ratio": 2.0, "replay_priority": 0.6},
    # returns near -100 swamp the policy gradient unless scaled to about -10, as the defaults do.
    # The LSTM with a critic of its own (the value's error saturated the shared LSTM's cell: 4-7 times
    # feed-forward's env steps). Confirmed solves, side by side with feed-forward (--core none --critic
    # shared, the preset before 0.13), three invocations (seeds 800-819, 840-849, 860-879): 20/20, 10/10 and
    # 20/20 at 1.20x, 0.97x and 1.01x its median env steps, 1.24-1.48x its seconds (4.6-4.9 s): an LSTM step
    # costs more (docs/design/choices.md, "The critic's own encoder")
    "Acrobot-v1": {"max_steps": 500_000, "lr": 3e-3, "gae_lambda": 0.95, "critic": "own",
                   "replay_ratio": 1.0, "replay_priority": 0.6},
    # angular velocities up to 8 saturated the LSTM (cell states of 20-40, a constant torque and a
    # pendulum spinning for ever) on one seed in three: normalised observations solved all eight
    # replay: 10 seeds all reached -200 at a median 157-191k env steps (12.7-15.3 s) against 251-270k
    # (12.7 s) without, in two 5-seed runs
    "Pendulum-v1": {"max_steps": 2_000_000, "gamma": 0.9, "gae_lambda": 0.95, "reward_scale": 0.125,
                    "t_max": 20, "lr": 1e-3, "entropy_coef": 0.001,
                    "normalize_obs": True, "eval_interval": 1.0, "target_return": -200.0,
                    "replay_ratio": 1.0, "replay_priority": 0.6},
    # Acrobot's settings, with the LSTM (the feed-forward network was slower here); an evaluation (10
    # episodes of up to 1,000 steps: 0.7 s or more of a core) every 5 s, not 0.5, to leave the cores to
    # the workers. Replay: 5 of 5 seeds within 1M env steps (median 592k, 64 s) against 3 of 5 (955k, 76 s)
    "LunarLander-v3": {"max_steps": 3_000_000, "lr": 3e-3, "gae_lambda": 0.95, "eval_interval": 5.0,
                       "replay_ratio": 1.0, "replay_priority": 0.6},
}


# Every ALE/ game: the A3C paper's Atari settings scaled to a small machine, with its LSTM agent. The LSTM
# on 4 envs x t-max 20 (80 transitions an update, as 16 x 5), side by side with feed-forward on 16 x 5,
# Breakout, 5.5 minutes from launch (version 0.11), return a life at the end: seeds 0-4 1.72 (1.58-2.36) at
# 364-461k env steps against 1.58 (1.55-1.91) at 469-562k, seeds 5-7 1.85 against 1.66; over four
# invocations 17 of 18 LSTM seeds left random play by 400k, feed-forward 11 of 11 (docs/results, "Atari
# learning"). 16 x 5 was worse for the LSTM (2 of 3): its 5-step returns and backpropagation are too
# short. lr 4e-4: with 80 transitions an update, the progress per env step of a one-env worker with
# 20-step rollouts at 1e-4. A full Pong run is about 10-20M env steps: hours on 2 cores.
ATARI = {"max_steps": 20_000_000, "clip_rewards": True, "reward_scale": 1.0, "hidden_sizes": (256,),
         "t_max": 20, "envs_per_process": 4, "lr": 4e-4, "eval_interval": 300.0, "eval_episodes": 4,
         "log_interval": 100_000, "print_interval": 10.0}


# Every MinAtar/ game: the LSTM (the default core) after the MinAtar paper's convnet and 128 units. Since
# the frames encoder's signal-preserving init (version 0.9) it ties or wins: 5 minutes a run from launch,
# seeds 0-2, final greedy return, median (version 0.10): Breakout 21.8 against feed-forward's 21.5,
# SpaceInvaders 320 against 217, at 0.7-0.75 times feed-forward's env steps (its extra cost a step).
# lr 1e-3: Breakout, 2 minutes, feed-forward, 10.8 against 6.8 at 5e-3 and 5.4 with the defaults (LSTM of 64,
# version 0.7); replay (1, 0.6) halved the env steps/s for 7.5. 5M env steps, the paper's budget: about 10
# minutes on 2 cores. The evaluator plays 5 episodes every 30 s, so the workers keep the cores.
MINATAR = {"max_steps": 5_000_000, "hidden_sizes": (128,), "lr": 1e-3, "eval_interval": 30.0,
           "eval_episodes": 5, "log_interval": 100_000, "print_interval": 10.0}


def preset_for(env_id: str) -> dict:
    if is_atari(env_id):
        return ATARI
    if is_minatar(env_id):
        return MINATAR
    return PRESETS.get(env_id.split(":")[-1], {})


def format_presets() -> str:
    lines = []
    for env_id, settings in {**PRESETS, "ALE/* (Atari)": ATARI, "MinAtar/*": MINATAR}.items():
        values = " ".join(as_option(k, v) for k, v in settings.items()) or "(the defaults)"
        lines.append(f"{env_id:<14} {values}")
    return "\n".join(lines)
