"""Learning without processes: returns, distributions, backprop, replay, the learner, optimizers, checkpoints."""
