"""Environments: their spec, making them (Atari and MinAtar their own way), action masks, parts, batches."""
