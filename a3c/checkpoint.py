"""Checkpoints: one versioned dict, written atomically, loaded without running pickled code."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch

FORMAT = "a3c-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A file that is not a readable checkpoint of this trainer."""


def save_checkpoint(path: str | os.PathLike, payload: dict) -> None:
    """Write to a temporary file, fsync, then rename: a crash leaves the old file intact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(path.name + ".*.tmp"):  # left by a writer killed mid-write
        stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            torch.save({"format": FORMAT, "version": VERSION, **payload}, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Load with weights_only=True: a crafted pickle is refused, never executed."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {path} does not exist") from None
    except Exception as error:  # torch's restricted unpickler raises many kinds on garbage
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise CheckpointError(f"{path} is not a readable checkpoint: {first_line}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not an a3c checkpoint")
    if payload.get("version") != VERSION:
        raise CheckpointError(f"{path} has checkpoint version {payload.get('version')}, expected {VERSION}")
    missing = [key for key in ("config", "model") if key not in payload]
    if missing:
        raise CheckpointError(f"{path} lacks {', '.join(missing)}")
    return payload
