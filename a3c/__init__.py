"""A Hogwild shared-memory A3C trainer (LSTM + NoisyNet) for gymnasium environments.

    import a3c
    result = a3c.train(a3c.Config.for_env("Pendulum-v1"))
    agent = a3c.load_agent(result.run_dir / "checkpoints" / "best.pt")
"""

__version__ = "0.13.0"  # before the imports: modules of the package read it while it loads

from .api import load_agent, train  # noqa: E402
from .callbacks import Callback  # noqa: E402
from .config import Config  # noqa: E402

__all__ = ["Callback", "Config", "load_agent", "train"]
