"""Speed: env steps a second of the trainer and its parts, start-up, what tracking costs, and a long run's drift."""
