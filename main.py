"""`python main.py [OPTIONS]`: the command line of a3c/cli.py, run from a checkout."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads (docs/design/facts.md, fact 3)

from a3c.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
