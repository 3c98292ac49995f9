"""The local backend (--backend local): worker processes that update a model in shared memory."""

from __future__ import annotations

import os
import time
from typing import Optional

import torch.multiprocessing as mp

from a3c.backends.base import Backend
from a3c.backends.children import ChildProcesses, EvaluatorProcess, EvaluatorSettings, exit_cause
from a3c.learn.seeding import worker_seeds
from a3c.parallel.messages import Update
from a3c.parallel.worker import run_worker

WAVE_SECONDS = 30.0  # a wave of workers that has not all updated by then no longer holds the next one back


class LocalBackend(Backend):
    """The worker processes and the evaluator on this machine, each with its own message pipe (ChildProcesses)."""

    def __init__(
        self,
        children: ChildProcesses,
        evaluation: Optional[EvaluatorSettings] = None,
        first_rank: int = 0,
        first_incarnation: int = 0,
    ):
        """`children` starts the processes; `evaluation` None (or --eval-episodes 0): no evaluator."""
        self.children, self.config, self.shared = children, children.config, children.shared
        # a node group's workers are ranks first_rank.. of the run, and its replacement's are new incarnations
        self.first_rank, self.first_incarnation = first_rank, first_incarnation
        self.evaluator = EvaluatorProcess(children, evaluation)
        self.workers: dict[int, mp.Process] = {}
        self.restarts = dict.fromkeys(range(self.config.num_processes), 0)
        self.unstarted: list[int] = []  # ranks of the waves to come
        self.wave: list[int] = []  # the ranks started last
        self.wave_started_at = 0.0
        self.updated: set[int] = set()  # ranks whose current process has sent an update

    def start_worker(self, rank: int) -> None:
        seeds = worker_seeds(self.config, self.first_rank + rank, self.first_incarnation + self.restarts[rank])
        if self.shared.heartbeats is not None:
            self.shared.heartbeats.beat(rank)  # its start-up counts against --worker-timeout
        self.workers[rank] = self.children.start(f"a3c-worker-{rank}", run_worker, rank, seeds)
        self.updated.discard(rank)

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
        if self.evaluator.process is None and (not first or not self.unstarted):
            self.evaluator.start()

    def start_waiting_workers(self) -> None:
        """The next wave, once the current one has updated (or WAVE_SECONDS have passed); none after the stop."""
        if (
            self.unstarted
            and not self.shared.stop.is_set()
            and (self.updated.issuperset(self.wave) or time.monotonic() - self.wave_started_at > WAVE_SECONDS)
        ):
            self.start_next_wave()

    def processes(self) -> list[mp.Process]:
        return list(self.workers.values()) + self.evaluator.processes()

    def receive(self, handle, timeout: float) -> None:
        """Pass every waiting message to `handle`, waiting up to `timeout` for the first; start the next wave
        once this one has updated."""

        def note_update(message) -> None:
            if isinstance(message, Update):
                self.updated.add(message.rank)
            handle(message)

        self.children.receive(note_update, timeout)
        self.start_waiting_workers()

    def check(self) -> Optional[str]:
        """Restart dead and hung workers (and a hung evaluator) while restarts last; say why the run must
        stop, if it must."""
        for rank, process in list(self.workers.items()):
            silence = self.children.hung_for(rank, process)
            if silence is not None:
                self.children.kill_hung(process)
                what_happened = (
                    f"worker {rank} showed no progress for {silence:.0f} s (--worker-timeout) and was killed"
                )
            elif process.exitcode in (None, 0):
                continue
            else:
                what_happened = f"worker {rank} died ({exit_cause(process.exitcode)})"
            process.join()
            if self.shared.turns is not None:
                self.shared.turns.give_back_for(rank)
            if not self.children.restart_within_limit(
                self.restarts, rank, what_happened, "restarting it from the shared weights", self.start_worker
            ):
                return "worker_failed"
        stop_reason = self.evaluator.check()
        if stop_reason is not None:
            return stop_reason
        if all(p.exitcode == 0 for p in self.workers.values()):
            return "max_steps"
        return None

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
        self.children.wind_down(self.processes(), lambda timeout: self.receive(handle, timeout))

    def kill(self) -> None:
        self.children.kill(self.processes())
