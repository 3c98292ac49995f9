"""Learning: what the trainer reaches, how fast and how surely, beside Stable-Baselines3 on the same envs and cores."""
