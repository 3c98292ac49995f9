"""A Hogwild shared-memory A3C trainer (LSTM + NoisyNet) for gymnasium environments.

import a3c
result = a3c.train(a3c.Config.for_env("Pendulum-v1"))
agent = a3c.load_agent(result.run_dir / "checkpoints" / "best.pt")
"""

from a3c._version import __version__
from a3c.api import load_agent, train
from a3c.config.settings import Config
from a3c.run.callbacks import Callback

__all__ = ["Callback", "Config", "__version__", "load_agent", "train"]
