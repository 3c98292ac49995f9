"""A Hogwild shared-memory A3C trainer (LSTM + NoisyNet) for gymnasium environments."""

__version__ = "0.2.0"
