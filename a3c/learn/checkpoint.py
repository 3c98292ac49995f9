"""Checkpoints: one versioned dict, written atomically, loaded without running pickled code."""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import torch

from a3c._version import __version__
from a3c.config.settings import Config
from a3c.errors import CheckpointError, first_line, writing

FORMAT = "a3c-checkpoint"
VERSION = 7  # the format this a3c writes


def upgrade_from_1(payload: dict) -> dict:
    """Format 1 (a3c 0.1 to 0.4): a3c 0.1's config named one `hidden_size`; format 2 always names
    `hidden_sizes`, as Config does."""
    config = dict(payload["config"])
    if "hidden_size" in config:
        config.setdefault("hidden_sizes", [config.pop("hidden_size")])
    return {**payload, "config": config, "version": 2}


def upgrade_from_2(payload: dict) -> dict:
    """Format 2 (a3c 0.5 to 0.6): the value head learned whole returns; format 3's config says whether it
    learns them less the running mean of the value targets (`center_values`, auto from a3c 0.7)."""
    return {**payload, "config": {"center_values": "off", **payload["config"]}, "version": 3}


def upgrade_from_3(payload: dict) -> dict:
    """Format 3 (a3c 0.7 to 0.12): the value head read what the policy head read; format 4's config says
    whether it reads an encoder of its own (`critic`, from a3c 0.13)."""
    return {**payload, "config": {"critic": "shared", **payload["config"]}, "version": 4}


def upgrade_from_4(payload: dict) -> dict:
    """Format 4 (a3c 0.13 to 0.23): a config without `novelty_coef` had no novelty bonus, then the default;
    from a3c 0.24 the default is auto, which turns it on for flat observations."""
    return {**payload, "config": {"novelty_coef": 0.0, **payload["config"]}, "version": 5}


def upgrade_from_5(payload: dict) -> dict:
    """Format 5 (a3c 0.24 to 0.27): a Box action's std was unlimited; from a3c 0.28 it is at most half the
    action's range unless `std_limit` says none."""
    return {**payload, "config": {"std_limit": "none", **payload["config"]}, "version": 6}


def upgrade_from_6(payload: dict) -> dict:
    """Format 6 (a3c 0.28 to 0.31): the novelty bonus joined the reward and was divided by its errors' spread
    unless the config said otherwise; from a3c 0.32 `novelty_value` and `novelty_scale` default to auto, which on
    pictures learns the bonus's return apart and divides it by that return's spread."""
    config = {"novelty_value": "shared", "novelty_scale": "step", **payload["config"]}
    return {**payload, "config": config, "version": 7}


# format N -> N + 1
UPGRADES = {
    1: upgrade_from_1,
    2: upgrade_from_2,
    3: upgrade_from_3,
    4: upgrade_from_4,
    5: upgrade_from_5,
    6: upgrade_from_6,
}
OLDEST_READABLE = min(UPGRADES, default=VERSION)


def checkpoint_payload(config: Config, model: torch.nn.Module, env_steps: int, **extra) -> dict:
    """A checkpoint's contents: the config, a snapshot of the model's weights (live ones change under a
    save), the env steps, the env's spaces (EnvSpec.record), and `extra` (a resumable one's optimizer
    state and counters, best.pt's eval return)."""
    from a3c.envs.make import env_spec  # gymnasium: not for loading a checkpoint

    return {
        "config": config.to_dict(),
        "model": {k: v.clone() for k, v in model.state_dict().items()},
        "env_steps": env_steps,
        "a3c_version": __version__,
        "spaces": env_spec(config.env).record(),
        **extra,
    }


def check_spaces(payload: dict, spec, env_id: str) -> None:
    """Refuse an env whose observation parts the network would read otherwise than the checkpoint's did
    (their sizes may add up alike), or whose action mask comes from elsewhere (a policy trained with a mask
    scored illegal actions at nothing). Older checkpoints keep no spaces and are not checked."""
    saved, record = payload.get("spaces"), spec.record()
    if saved is None:
        return
    if saved["observation_parts"] != record["observation_parts"]:
        raise CheckpointError(
            f"the checkpoint's network read the observation parts {saved['observation_parts']}; "
            f"{env_id} gives {record['observation_parts']}"
        )
    if saved["action_mask"] != record["action_mask"]:
        raise CheckpointError(
            f"the checkpoint's policy acted on an env with {mask_origin(saved['action_mask'])}; "
            f"{env_id} gives {mask_origin(record['action_mask'])}"
        )


def mask_origin(source) -> str:
    return "no action mask" if source is None else f"its action mask in its {source}"


def save_checkpoint(path: str | os.PathLike, payload: dict) -> None:
    """Write to a temporary file, fsync, then rename: a crash leaves the old file intact. The bytes are made
    in memory first: torch's zip writer, failing mid-file on a full disk, replaces the OSError with a
    RuntimeError of its own, where a plain write raises the OSError that `writing` names."""
    path = Path(path)
    serialized = io.BytesIO()
    torch.save({"format": FORMAT, "version": VERSION, **payload}, serialized)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in path.parent.glob(path.name + ".*.tmp"):  # left by a writer killed mid-write
            stale.unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(serialized.getbuffer())
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
        raise CheckpointError(f"{path} is not a readable checkpoint: {first_line(error)}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not an a3c checkpoint")
    missing = [key for key in ("config", "model") if key not in payload]
    if missing:
        raise CheckpointError(f"{path} lacks {', '.join(missing)}")
    return upgraded(payload, path)


def upgraded(payload: dict, path) -> dict:
    """The payload in today's format, upgraded step by step from an older one; a format this a3c cannot
    read is refused, naming both."""
    version = payload.get("version")
    if not isinstance(version, int) or not OLDEST_READABLE <= version <= VERSION:
        newer = isinstance(version, int) and version > VERSION
        raise CheckpointError(
            f"{path} is in checkpoint format {version}; a3c {__version__} reads formats "
            f"{OLDEST_READABLE} to {VERSION}" + ("; upgrade a3c to load it" if newer else "")
        )
    while payload["version"] < VERSION:
        payload = UPGRADES[payload["version"]](payload)
    return payload
