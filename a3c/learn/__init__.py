"""Learning without processes: returns, distributions, backward passes, replay, the learner, the optimizers, checkpoints."""
