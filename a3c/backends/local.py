"""The local backend (--backend local): worker processes that update a model in shared memory."""

from __future__ import annotations

import os
import signal
import time
from multiprocessing.connection import wait
from pathlib import Path
from typing import Optional

import torch.multiprocessing as mp

from a3c.config.settings import Config
from a3c.learn.seeding import worker_seeds
from a3c.parallel.evaluator import run_evaluator
from a3c.parallel.messages import Update
from a3c.parallel.processes import Shared
from a3c.parallel.worker import run_worker
from a3c.run.console import Console

STOP_GRACE_SECONDS = 5.0  # then stragglers are terminated: Ctrl-C must end a run within 10 s
WAVE_SECONDS = 30.0  # a wave of workers that has not all updated by then no longer holds the next one back


def exit_cause(exitcode: int) -> str:
    return f"killed by signal {-exitcode}" if exitcode < 0 else f"exit code {exitcode}"


class LocalBackend:
    """The worker processes and the evaluator on this machine, each with its own message pipe."""

    def __init__(self, ctx, config: Config, shared: Shared, run_dir: Optional[Path], start_time: float,
                 best_eval: Optional[float], console: Console, first_rank: int = 0, first_incarnation: int = 0):
        """`run_dir`, `start_time` and `best_eval` are the evaluator's; None and --eval-episodes 0 for none."""
        self.ctx, self.config, self.shared, self.console = ctx, config, shared, console
        # a node group's workers are ranks first_rank.. of the run, and its replacement's are new incarnations
        self.first_rank, self.first_incarnation = first_rank, first_incarnation
        self.evaluator_args = (start_time, str(run_dir), best_eval)
        self.workers: dict[int, mp.Process] = {}
        self.restarts = {rank: 0 for rank in range(config.num_processes)} | {"evaluator": 0}
        self.evaluator: Optional[mp.Process] = None
        self.pipes: dict = {}  # receiving end -> process name
        self.unstarted: list[int] = []  # ranks of the waves to come
        self.wave: list[int] = []  # the ranks started last
        self.wave_started_at = 0.0
        self.updated: set[int] = set()  # ranks whose current process has sent an update

    def _start(self, name: str, target, *args) -> mp.Process:
        receiver, sender = self.ctx.Pipe(duplex=False)
        process = self.ctx.Process(target=target, name=name, daemon=True,
                                   args=(self.config, self.shared, sender, os.getpid(), *args))
        process.start()
        sender.close()  # the child holds it now; EOF on `receiver` then means the child is gone
        self.pipes[receiver] = name
        return process

    def start_worker(self, rank: int) -> None:
        seeds = worker_seeds(self.config, self.first_rank + rank, self.first_incarnation + self.restarts[rank])
        if self.shared.heartbeats is not None:
            self.shared.heartbeats.beat(rank)  # its start-up counts against --worker-timeout
        self.workers[rank] = self._start(f"a3c-worker-{rank}", run_worker, rank, seeds)
        self.updated.discard(rank)

    def start_evaluator(self) -> None:
        if self.config.eval_episodes > 0:
            if self.shared.heartbeats is not None:
                self.shared.heartbeats.beat(self.shared.heartbeats.evaluator)
            self.evaluator = self._start("a3c-evaluator", run_evaluator, *self.evaluator_args)

    def start(self) -> None:
        """The workers in waves of one a core (or --active-workers), each wave once the one before has
        updated; the evaluator with the second wave (or the only one). Workers that make their envs all
        at once share the cores until all are made: 8 Breakout workers of 16 envs each (7 s of a core
        apiece) sent their first update 28 s after launch; a first wave of 2 updates after 9 s and
        trains while the others start."""
        self.unstarted = list(range(self.config.num_processes))
        self.start_next_wave()

    def start_next_wave(self) -> None:
        size = self.config.active_workers or os.cpu_count() or 1
        first = len(self.unstarted) == self.config.num_processes
        self.wave, self.unstarted = self.unstarted[:size], self.unstarted[size:]
        for rank in self.wave:
            self.start_worker(rank)
        self.wave_started_at = time.monotonic()
        if self.evaluator is None and (not first or not self.unstarted):
            self.start_evaluator()

    def start_waiting_workers(self) -> None:
        """The next wave, once the current one has updated (or WAVE_SECONDS have passed); none after the stop."""
        if self.unstarted and not self.shared.stop.is_set() and (
                self.updated.issuperset(self.wave) or time.monotonic() - self.wave_started_at > WAVE_SECONDS):
            self.start_next_wave()

    def processes(self) -> list[mp.Process]:
        return list(self.workers.values()) + ([self.evaluator] if self.evaluator else [])

    def receive(self, handle, timeout: float) -> None:
        """Pass every waiting message to `handle`, waiting up to `timeout` for the first."""
        for receiver in wait(list(self.pipes), timeout):
            try:
                while receiver.poll():
                    message = receiver.recv()
                    if isinstance(message, Update):
                        self.updated.add(message.rank)
                    handle(message)
            except (EOFError, OSError):
                del self.pipes[receiver]
                receiver.close()
        self.start_waiting_workers()

    def check(self) -> Optional[str]:
        """Restart dead and hung workers (and a hung evaluator) while restarts last; say why the run must
        stop, if it must."""
        for rank, process in list(self.workers.items()):
            silence = self.hung_for(rank, process)
            if silence is not None:
                self.kill_hung(process)
                what_happened = (f"worker {rank} showed no progress for {silence:.0f} s (--worker-timeout) "
                                 "and was killed")
            elif process.exitcode in (None, 0):
                continue
            else:
                what_happened = f"worker {rank} died ({exit_cause(process.exitcode)})"
            process.join()
            if self.shared.turns is not None:
                self.shared.turns.give_back_for(rank)
            if not self.restart_within_limit(self.restarts, rank, what_happened,
                                             "restarting it from the shared weights", self.start_worker):
                return "worker_failed"
        stop_reason = self.check_evaluator()
        if stop_reason is not None:
            return stop_reason
        if all(p.exitcode == 0 for p in self.workers.values()):
            return "max_steps"
        return None

    def check_evaluator(self) -> Optional[str]:
        """Restart a hung evaluator while restarts last; "evaluator_failed" if it failed or cannot be restarted."""
        heartbeats = self.shared.heartbeats
        silence = None if self.evaluator is None or heartbeats is None else self.hung_for(heartbeats.evaluator,
                                                                                          self.evaluator)
        if silence is not None:
            self.kill_hung(self.evaluator)
            if not self.restart_within_limit(self.restarts, "evaluator", f"the evaluator showed no progress for "
                                             f"{silence:.0f} s (--worker-timeout) and was killed", "restarting it",
                                             lambda _: self.start_evaluator()):
                return "evaluator_failed"
        return "evaluator_failed" if self.evaluator_failed() else None

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
            self.console.message(f"{what_happened} and has no restarts left (--max-worker-restarts {limit})",
                                 error=True)
            return False
        restarts[key] += 1
        self.console.message(f"{what_happened}; {how} ({restarts[key]}/{limit})", error=True)
        start(key)
        return True

    def evaluator_failed(self) -> bool:
        return self.evaluator is not None and self.evaluator.exitcode not in (None, 0)

    def sync_state(self) -> bool:
        """Make the shared model and optimizer current for a checkpoint; False if they cannot be vouched for.

        Here the workers step them in shared memory: they always are.
        """
        return True

    def report(self) -> dict:
        """What summary.json adds for this backend."""
        return {}

    def stop(self, handle) -> None:
        """Let every process finish its update, reading their messages so none blocks on a full pipe."""
        self.shared.stop.set()
        for rank, process in self.workers.items():
            if rank not in self.updated and process.is_alive():
                process.terminate()  # still making its envs (Atari: seconds): it has no update to finish
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while any(p.is_alive() for p in self.processes()) and time.monotonic() < deadline:
            self.receive(handle, timeout=0.05)
        for process in self.processes():
            if process.is_alive():
                process.terminate()
            process.join()
        self.receive(handle, timeout=0.0)

    def kill(self) -> None:
        for process in self.processes():
            if process.pid is not None and process.exitcode is None:
                os.kill(process.pid, signal.SIGKILL)
