"""The child processes both backends run on their own machine: started with a pipe each, watched for a hang,
restarted within --max-worker-restarts, stopped and killed. LocalBackend runs its workers and the evaluator
with them; RayBackend only the evaluator (its workers are in the node groups, each a LocalBackend)."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable, Optional

import torch.multiprocessing as mp

from a3c.backends.base import MessageSink
from a3c.config.settings import Config
from a3c.parallel.evaluator import run_evaluator
from a3c.parallel.processes import Shared

STOP_GRACE_SECONDS = 5.0  # then stragglers are terminated: Ctrl-C must end a run within 10 s


def exit_cause(exitcode: int) -> str:
    return f"killed by signal {-exitcode}" if exitcode < 0 else f"exit code {exitcode}"


class ChildProcesses:
    """Starts processes that each get the config, the shared state and their own one-way pipe to this process,
    reads the pipes, and watches, restarts, stops and kills the processes that its owner names."""

    def __init__(self, ctx, config: Config, shared: Shared, console: MessageSink):
        self.ctx, self.config, self.shared, self.console = ctx, config, shared, console
        self.pipes: dict = {}  # receiving end -> process name

    def start(self, name: str, target, *args) -> mp.Process:
        """Run target(config, shared, pipe, our pid, *args) in a new daemon process."""
        receiver, sender = self.ctx.Pipe(duplex=False)
        process = self.ctx.Process(
            target=target, name=name, daemon=True, args=(self.config, self.shared, sender, os.getpid(), *args)
        )
        process.start()
        sender.close()  # the child holds it now; EOF on `receiver` then means the child is gone
        self.pipes[receiver] = name
        return process

    def receive(self, handle, timeout: float) -> None:
        """Pass every waiting message to `handle`, waiting up to `timeout` for the first; forget closed pipes."""
        for receiver in wait(list(self.pipes), timeout):
            try:
                while receiver.poll():
                    handle(receiver.recv())
            except (EOFError, OSError):
                del self.pipes[receiver]
                receiver.close()

    def hung_for(self, slot: int, process: mp.Process) -> Optional[float]:
        """How long a live process has shown no progress, if longer than --worker-timeout; else None."""
        timeout = self.config.worker_timeout
        if not timeout or self.shared.heartbeats is None or process.exitcode is not None:
            return None
        silence = self.shared.heartbeats.silence(slot)
        return silence if silence > timeout else None

    @staticmethod
    def kill_hung(process: mp.Process) -> None:
        """SIGKILL: a process stuck in an env's C code may never see a gentler signal."""
        os.kill(process.pid, signal.SIGKILL)
        process.join()

    def restart_within_limit(self, restarts: dict, key, what_happened: str, how: str, start) -> bool:
        """Count a restart of `key` and call start(key), saying so; False, saying why, once
        --max-worker-restarts restarts of it were made."""
        limit = self.config.max_worker_restarts
        if restarts[key] >= limit:
            self.console.message(
                f"{what_happened} and has no restarts left (--max-worker-restarts {limit})", error=True
            )
            return False
        restarts[key] += 1
        self.console.message(f"{what_happened}; {how} ({restarts[key]}/{limit})", error=True)
        start(key)
        return True

    @staticmethod
    def wind_down(processes: list[mp.Process], receive: Callable[[float], None]) -> None:
        """Give `processes` STOP_GRACE_SECONDS to end, calling receive(timeout) meanwhile so that none blocks
        on a full pipe; then terminate the stragglers, join all, and receive what they sent last."""
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
            receive(0.05)
        for process in processes:
            if process.is_alive():
                process.terminate()
            process.join()
        receive(0.0)

    @staticmethod
    def kill(processes: list[mp.Process]) -> None:
        """SIGKILL every started process that has not ended; waits for none of them."""
        for process in processes:
            if process.pid is not None and process.exitcode is None:
                os.kill(process.pid, signal.SIGKILL)


@dataclass(frozen=True)
class EvaluatorSettings:
    """What the evaluator process starts from: the run dir it keeps best.pt (and the films) in, the run's start
    time (its evaluations' wall clock) and the best evaluation mean of the run before it (None: none yet)."""

    run_dir: Optional[Path]
    start_time: float
    best_eval: Optional[float]


class EvaluatorProcess:
    """The evaluator, a child process on the trainer's machine with either backend: started with --eval-episodes
    above 0, killed and restarted when hung (--worker-timeout) while restarts last."""

    def __init__(self, children: ChildProcesses, settings: Optional[EvaluatorSettings]):
        """`settings` None: never an evaluator (a node group's local backend)."""
        self.children, self.settings = children, settings
        self.process: Optional[mp.Process] = None
        self.restarts = {"evaluator": 0}  # as restart_within_limit counts them: by key

    def start(self) -> None:
        """Start (or restart) the evaluator if the run has one: settings given and --eval-episodes above 0."""
        shared = self.children.shared
        if self.settings is not None and self.children.config.eval_episodes > 0:
            if shared.heartbeats is not None:
                shared.heartbeats.beat(shared.heartbeats.evaluator)
            self.process = self.children.start(
                "a3c-evaluator",
                run_evaluator,
                self.settings.start_time,
                str(self.settings.run_dir),
                self.settings.best_eval,
            )

    def check(self) -> Optional[str]:
        """Restart a hung evaluator while restarts last; "evaluator_failed" if it failed or cannot be restarted."""
        children, heartbeats = self.children, self.children.shared.heartbeats
        silence = (
            None
            if self.process is None or heartbeats is None
            else children.hung_for(heartbeats.evaluator, self.process)
        )
        if silence is not None:
            children.kill_hung(self.process)
            what_happened = f"the evaluator showed no progress for {silence:.0f} s (--worker-timeout) and was killed"
            if not children.restart_within_limit(
                self.restarts, "evaluator", what_happened, "restarting it", lambda _: self.start()
            ):
                return "evaluator_failed"
        return "evaluator_failed" if self.failed() else None

    def failed(self) -> bool:
        return self.process is not None and self.process.exitcode not in (None, 0)

    def processes(self) -> list[mp.Process]:
        """The evaluator's current process, if it was started: to stop or kill with the others."""
        return [self.process] if self.process else []
