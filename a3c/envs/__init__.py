"""Environments: their spec, the families made in their own way (Atari, MinAtar), action masks, observation parts, batches."""
