"""A Hogwild shared-memory A3C trainer (LSTM + NoisyNet) for gymnasium environments.

    import a3c
    result = a3c.train(a3c.Config.for_env("Pendulum-v1"))
    agent = a3c.load_agent(result.run_dir / "checkpoints" / "best.pt")
"""

from .api import load_agent, train
from .config import Config

__version__ = "0.2.0"
__all__ = ["Config", "load_agent", "train"]
