"""Shared setup: one torch thread per process before anything forks (docs/design.md, fact 3)."""

from __future__ import annotations

import os
import subprocess
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported anywhere in this process

from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

REPO_ROOT = Path(__file__).resolve().parent.parent


def _swallow(*args, **kwargs) -> None:
    pass


@pytest.fixture
def quiet():
    """A print_fn for a3c.trainer.train that drops the progress output."""
    return _swallow


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """python main.py ARGS from the repo root, as a user runs it."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "main.py", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
