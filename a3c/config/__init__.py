"""Settings: the frozen Config, its options, config files and the per-env presets."""
