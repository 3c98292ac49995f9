"""Networks: the stock actor-critic and its layers, structured and user networks, the one factory."""
