"""A Hogwild shared-memory A3C trainer (LSTM + NoisyNet) for gymnasium environments.

    import a3c
    result = a3c.train(a3c.Config.for_env("Pendulum-v1"))
    agent = a3c.load_agent(result.run_dir / "checkpoints" / "best.pt")
"""

from ._version import __version__
from .api import load_agent, train
from .callbacks import Callback
from .config import Config

__all__ = ["Callback", "Config", "__version__", "load_agent", "train"]
