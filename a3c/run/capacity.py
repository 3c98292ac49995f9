"""What a run will ask of the machine, against what the machine has: checked before anything is written.

A run that cannot fit is refused in one line naming the option, the estimate and what is
available (a ConfigError: exit 2). The estimates count only what surely will be held, so a
refusal is never a guess: the network's numbers in their copies, each process's own memory,
the rollouts and replay memory; a process's share of what it touches later (copy-on-write
pages, an env's own state) comes on top.
"""

from __future__ import annotations

import math
import os
import resource
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from a3c.config.settings import Config
from a3c.envs.spec import EnvSpec
from a3c.errors import ConfigError

PROCESS_BYTES = 12 * 2**20  # a forked worker's own memory at its start (CartPole, measured: 12 MB)
FLOAT_BYTES = 4
OPTIMIZER_SLOTS = {"adam": 2, "rmsprop": 1}  # state tensors the size of the weights
PROCESSES_PER_CORE = 4  # beyond this a run is warned about: the workers mostly wait their turn
# on frames, beyond this: each worker's convolutions and frames crowd the others' out of the caches (Pong's
# preset, 8 processes on 2 cores: 0.65x the env steps/s of 4; docs/results/history.md, "Atari throughput")
FRAME_PROCESSES_PER_CORE = 2


def network_size(config: Config, spec: EnvSpec) -> Optional[int]:
    """The numbers the stock network holds (parameters and buffers), counted on torch's meta device,
    where building allocates nothing: a network too large for the machine is sized without being built.
    None for a user's --model, whose code runs once, when the trainer builds it."""
    if config.model:
        return None
    from a3c.nets.factory import build_model  # torch's modules: the trainer has them loaded already

    with torch.device("meta"):
        model = build_model(config, spec)
    return sum(t.numel() for t in (*model.parameters(), *model.buffers()))


@dataclass(frozen=True)
class Estimate:
    """Bytes a local run holds at the least."""

    network: int  # one copy of the weights
    shared: int  # in shared memory: the weights and the optimizer's state
    checkpoints: int  # on disk at once: last.pt, its next version being written, best.pt
    per_worker: int  # a worker's copy of the weights and its gradient, its process, rollout and replay memory
    replay: int  # of per_worker: the replay memory
    memory: int  # all of it: the shared model, the evaluator and every worker


def estimate(config: Config, spec: EnvSpec, network_numbers: int) -> Estimate:
    network = network_numbers * FLOAT_BYTES
    shared = network * (1 + OPTIMIZER_SLOTS[config.optimizer])
    obs_bytes = math.prod(spec.obs_shape) * np.dtype(spec.obs_dtype).itemsize
    rollout = config.t_max * config.envs_per_process * obs_bytes
    replay = 2 * rollout * config.replay_capacity if config.replay_ratio > 0 else 0  # observations and final_obs
    per_worker = 2 * network + PROCESS_BYTES + rollout + replay
    evaluator = network + PROCESS_BYTES + config.eval_episodes * obs_bytes if config.eval_episodes else 0
    return Estimate(
        network,
        shared,
        2 * shared + network,
        per_worker,
        replay,
        shared + evaluator + config.num_processes * per_worker,
    )


def size(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if count < 1024 or unit == "PB":
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1024


def available_memory() -> Optional[int]:
    """Memory a new process can get without swapping: the kernel's MemAvailable, less a container's
    (cgroup v2) unused limit where that is smaller; None where neither is known."""
    limits = []
    try:
        with open("/proc/meminfo") as file:
            fields = dict(line.split(":", 1) for line in file)
        limits.append(int(fields["MemAvailable"].split()[0]) * 1024)
    except (OSError, KeyError, ValueError):
        pass
    try:
        cgroup = Path("/sys/fs/cgroup")
        limit = (cgroup / "memory.max").read_text().strip()
        if limit != "max":
            limits.append(int(limit) - int((cgroup / "memory.current").read_text()))
    except (OSError, ValueError):
        pass
    return min(limits) if limits else None


def free_space(path: Path) -> Optional[int]:
    """Free bytes on the file system that will hold `path` (its nearest existing folder)."""
    for folder in (path, *path.parents):
        if folder.exists():
            try:
                return shutil.disk_usage(folder).free
            except OSError:
                return None
    return None


def user_tasks(uid: int) -> int:
    """The processes and threads this user runs now: what RLIMIT_NPROC counts."""
    tasks = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                tasks += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue  # a process that ended meanwhile
    return tasks


def process_room() -> Optional[tuple[int, int]]:
    """(RLIMIT_NPROC, the tasks this user runs now); None where no limit holds (none set, or root,
    whom the kernel exempts)."""
    limit = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if limit == resource.RLIM_INFINITY or os.geteuid() == 0:
        return None
    return limit, user_tasks(os.getuid())


def memory_option(config: Config, estimate_: Estimate) -> str:
    """The option whose value the memory estimate grows with most."""
    workers = config.num_processes * (estimate_.per_worker - 2 * estimate_.network)
    network = estimate_.memory - workers
    if network >= workers:
        widths = ",".join(map(str, config.hidden_sizes))
        return f"--model {config.model}" if config.model else f"--hidden-sizes {widths}"
    if config.num_processes * estimate_.replay >= workers / 2:
        return f"--replay-capacity {config.replay_capacity}"
    return f"--num-processes {config.num_processes}"


def check_capacity(
    config: Config,
    spec: EnvSpec,
    network_numbers: Optional[int],
    run_dir: Path,
    memory: Optional[int],
    shm: Optional[int],
    disk: Optional[int],
    processes: Optional[tuple[int, int]],
    cores: int,
) -> list[str]:
    """Refuse (ConfigError) a run that cannot fit; return one-line warnings for one that fits badly.
    `memory`, `shm`, `disk`: bytes available (None: unknown, not checked); `processes`: process_room()."""
    needed = config.num_processes + (1 if config.eval_episodes else 0)
    if processes is not None and processes[1] + needed > processes[0]:
        raise ConfigError(
            f"--num-processes {config.num_processes}: {needed:,} more processes than this user may "
            f"start: {processes[1]:,} running of the {processes[0]:,} allowed (ulimit -u)"
        )
    if network_numbers is not None:
        need = estimate(config, spec, network_numbers)
        if memory is not None and need.memory > memory:
            raise ConfigError(
                f"{memory_option(config, need)}: the run needs about {size(need.memory)} of memory "
                f"({config.num_processes} workers of {size(need.per_worker)}, a network of "
                f"{network_numbers:,} numbers); {size(memory)} is available"
            )
        if shm is not None and need.shared > shm:
            raise ConfigError(
                f"{memory_option(config, need)}: the shared weights and optimizer state need "
                f"{size(need.shared)} of shared memory; /dev/shm has {size(shm)} free"
            )
        if disk is not None and need.checkpoints > disk:
            raise ConfigError(
                f"--run-dir {run_dir}: the checkpoints need about {size(need.checkpoints)} of disk; "
                f"{size(disk)} is free there"
            )
    return oversubscribed(config, len(spec.obs_shape) == 3, cores)


def oversubscribed(config: Config, frames: bool, cores: int) -> list[str]:
    """A warning where the local backend has more workers a core than pay: the run fits, but goes slower."""
    if config.backend != "local":
        return []
    if frames and config.num_processes > FRAME_PROCESSES_PER_CORE * cores:
        return [
            f"--num-processes {config.num_processes} on {cores} cores: on frames more than "
            f"{FRAME_PROCESSES_PER_CORE} workers a core go slower than {FRAME_PROCESSES_PER_CORE * cores} in all "
            "(their convolutions crowd each other out of the caches: docs/results/history.md, Atari throughput)"
        ]
    if config.num_processes > PROCESSES_PER_CORE * cores:
        return [
            f"--num-processes {config.num_processes} on {cores} cores: more than {PROCESSES_PER_CORE} "
            "workers a core mostly wait their turn, and each costs start-up time and memory"
        ]
    return []


def check_machine(config: Config, spec: EnvSpec, run_dir: Path) -> list[str]:
    """check_capacity against this machine. A Ray run's workers live on the cluster's nodes: only the
    network and its checkpoints are checked here."""
    local = config.backend == "local"
    return check_capacity(
        config,
        spec,
        network_size(config, spec),
        run_dir,
        available_memory() if local else None,
        free_space(Path("/dev/shm")) if local and Path("/dev/shm").is_dir() else None,
        free_space(run_dir),
        process_room() if local else None,
        os.cpu_count() or 1,
    )
