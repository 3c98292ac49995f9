"""The evaluator process: a thin shell around Evaluator (a3c/parallel/evaluation.py), as the worker process is
around ActorLearner. It sets the child up, waits out each interval with heartbeats, ends with its parent and
reports its failures; the rounds themselves (judging, best.pt, films) are Evaluator's."""

from __future__ import annotations

import time
import traceback
from pathlib import Path

from a3c.config.settings import Config
from a3c.errors import WriteError
from a3c.parallel.evaluation import Evaluator
from a3c.parallel.messages import Failure, WriteFailed
from a3c.parallel.processes import Shared, become_child_process, parent_is_gone


def wait_beating(stop, seconds: float, beat) -> bool:
    """stop.wait(seconds), beating every second meanwhile: waiting is not hanging."""
    deadline = time.monotonic() + seconds
    while True:
        beat()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return stop.is_set()
        if stop.wait(min(remaining, 1.0)):
            return True


def run_evaluator(
    config: Config,
    shared: Shared,
    messages,
    parent_pid: int,
    start_time: float,
    run_dir: str,
    best_so_far: float | None,
) -> None:
    """Process entry point: an evaluation round (Evaluator.play_round) every eval_interval seconds until the run
    stops (a solving round stops it) or the parent is gone. `best_so_far`: the best evaluation mean of the run
    before this evaluator. A failure is told to the trainer before the process exits."""
    become_child_process()
    beat = (lambda: shared.heartbeats.beat(shared.heartbeats.evaluator)) if shared.heartbeats else (lambda: None)
    evaluator = Evaluator(config, shared.model, Path(run_dir), shared.stop, best_so_far, beat)
    try:
        while not wait_beating(shared.stop, config.eval_interval, beat) and not parent_is_gone(parent_pid):
            decided = evaluator.play_round(
                shared.env_steps.total(), shared.optimizer.params[0], start_time, messages.send
            )
            if not decided.complete:
                break  # stopped mid-round
    except WriteError as error:  # best.pt on a full disk: the trainer stops the run as for its own writes
        messages.send(WriteFailed(str(error)))
        raise SystemExit(1) from None
    except Exception:
        messages.send(Failure("evaluator", traceback.format_exc()))
        raise SystemExit(1) from None
    finally:
        evaluator.close()
