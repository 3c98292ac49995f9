"""Per-environment settings that differ from the Config defaults (which are tuned for CartPole-v1).

Applied when training starts on one of these envs; any option given on the command
line wins. Each entry's budget and result are in the README.
"""

from __future__ import annotations

PRESETS: dict[str, dict] = {
    "CartPole-v1": {},
    "Acrobot-v1": {"max_steps": 500_000, "gae_lambda": 0.95, "entropy_coef": 0.01},
    "Pendulum-v1": {"max_steps": 2_000_000, "gamma": 0.9, "gae_lambda": 0.95, "reward_scale": 0.125,
                    "t_max": 20, "lr": 1e-3, "value_loss_coef": 0.5, "entropy_coef": 0.001,
                    "eval_interval": 1.0, "target_return": -200.0},
}


def preset_for(env_id: str) -> dict:
    return PRESETS.get(env_id.split(":")[-1], {})


def format_presets() -> str:
    lines = []
    for env_id, settings in PRESETS.items():
        values = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in settings.items()) or "(the defaults)"
        lines.append(f"{env_id:<14} {values}")
    return "\n".join(lines)
