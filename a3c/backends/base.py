"""What the trainer drives, whichever backend runs the workers, and what a backend prints to."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Optional, Protocol


class MessageSink(Protocol):
    """Where a backend's lines go: the trainer's Console, or a node group's Outbox that forwards them to the
    trainer. A protocol, so that the backends need not import the run layer above them."""

    def message(self, line: str, error: bool = False) -> None:
        """A line of its own; `error` lines are the faults the user must see (stderr on a Console)."""


class Backend(ABC):
    """Where the workers run and how they get weights and hand back gradients, seen from the trainer.

    The trainer calls start(), then in a loop receive(), sync_state() before each checkpoint and
    check(); at the end stop(), or kill() on a second Ctrl-C. It never needs to know which backend it has.
    """

    @abstractmethod
    def start(self) -> None:
        """Start the workers (and the evaluator, if the run has one); return without waiting for them."""

    @abstractmethod
    def receive(self, handle, timeout: float) -> None:
        """Pass every waiting message (Update, Failure, the evaluator's) to `handle`, waiting up to `timeout`
        seconds for the first: the trainer's loop is paced by this wait."""

    @abstractmethod
    def check(self) -> Optional[str]:
        """Restart what died or hung while restarts last; the reason the run must stop ("max_steps",
        "worker_failed", ...), if it must, else None."""

    @abstractmethod
    def sync_state(self) -> bool:
        """Make the shared model and optimizer current for a checkpoint; False if they cannot be vouched for,
        and then no checkpoint is written."""

    @abstractmethod
    def report(self) -> dict:
        """The backend's own figures, added to summary.json ({} for none)."""

    @abstractmethod
    def stop(self, handle) -> None:
        """End the run: let every process finish its update and send its last messages to `handle`, then
        release what the backend holds."""

    @abstractmethod
    def kill(self) -> None:
        """A second Ctrl-C, or a fault of the trainer itself: end every process at once. It may run in a signal
        handler, so it neither waits nor takes a lock."""
