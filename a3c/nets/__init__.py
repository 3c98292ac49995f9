"""Networks: the stock actor-critic and its layers, structured and user networks, and the one factory that builds them."""
