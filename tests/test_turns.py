"""Turns (a3c.parallel.turns): at most N workers at once, and a turn lost with a killed worker comes back."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import pytest

from a3c.config.settings import Config
from a3c.parallel.processes import worker_turns
from a3c.parallel.turns import TURN_TIMEOUT_SECONDS, Turns

CTX = multiprocessing.get_context("fork")


def hold_a_turn(turns: Turns, rank: int, active_now, most_at_once, lock, seconds: float) -> None:
    with turns.turn(rank):
        with lock:
            active_now.value += 1
            most_at_once.value = max(most_at_once.value, active_now.value)
        time.sleep(seconds)
        with lock:
            active_now.value -= 1


@pytest.mark.slow
def test_no_more_than_the_allowed_number_of_workers_hold_a_turn_at_once():
    workers, allowed = 6, 2
    turns = Turns(CTX, allowed, workers)
    active_now, most_at_once, lock = CTX.RawValue("i", 0), CTX.RawValue("i", 0), CTX.Lock()
    processes = [
        CTX.Process(target=hold_a_turn, args=(turns, rank, active_now, most_at_once, lock, 0.1))
        for rank in range(workers)
    ]
    started = time.monotonic()
    for process in processes:
        process.start()
    for process in processes:
        process.join(10)
    assert most_at_once.value == allowed
    assert time.monotonic() - started >= 0.3  # 6 turns of 0.1 s, 2 at a time
    assert all(process.exitcode == 0 for process in processes)


def sleep_in_a_turn(turns: Turns, rank: int, started) -> None:
    with turns.turn(rank):
        started.set()
        time.sleep(60)


@pytest.mark.slow
def test_the_turn_of_a_killed_worker_is_given_back_for_it():
    turns = Turns(CTX, 1, 2)
    started = CTX.Event()
    holder = CTX.Process(target=sleep_in_a_turn, args=(turns, 0, started))
    holder.start()
    assert started.wait(10)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join()
    assert turns.holding[0] == 1  # it died holding its turn

    turns.give_back_for(0)
    waited = time.monotonic()
    with turns.turn(1):
        assert time.monotonic() - waited < TURN_TIMEOUT_SECONDS / 2  # at once, not after the timeout
    turns.give_back_for(1)  # not holding: nothing to give back, and nothing breaks
    assert list(turns.holding) == [0, 0]


def test_a_turn_lost_for_good_delays_a_worker_but_never_blocks_it():
    turns = Turns(CTX, 1, 2)
    assert turns.semaphore.acquire()  # taken and never given back, as by a worker killed unseen
    waited = time.monotonic()
    with turns.turn(1):
        assert turns.holding[1] == 0  # it went ahead without a turn: nothing to give back
    assert TURN_TIMEOUT_SECONDS * 0.9 <= time.monotonic() - waited < TURN_TIMEOUT_SECONDS * 3


def test_a_worker_keeps_its_turn_over_updates_until_its_time_is_up():
    turns = Turns(CTX, 1, 2, seconds=0.2)
    with turns.turn(0):
        pass
    assert turns.holding[0] == 1 and not turns.semaphore.acquire(block=False)  # kept for the next update
    time.sleep(0.25)
    with turns.turn(0):
        assert turns.holding[0] == 1
    assert turns.holding[0] == 0  # its time was up: given back after the update
    assert turns.semaphore.acquire(block=False)
    turns.semaphore.release()


def test_a_worker_that_stops_or_fails_mid_turn_gives_its_turn_back():
    turns = Turns(CTX, 1, 2, seconds=60)
    with turns.turn(0):
        pass
    turns.give_back(0)  # what a stopping worker does
    assert turns.holding[0] == 0 and turns.semaphore.acquire(block=False)
    turns.semaphore.release()
    try:
        with turns.turn(1):
            raise RuntimeError("a failing update")
    except RuntimeError:
        pass
    assert turns.holding[1] == 0 and turns.semaphore.acquire(block=False)


def test_turns_are_taken_only_by_local_workers_that_outnumber_the_active_ones():
    assert isinstance(worker_turns(CTX, Config(num_processes=4, active_workers=2)), Turns)
    assert worker_turns(CTX, Config(num_processes=2, active_workers=2)) is None
    assert worker_turns(CTX, Config(num_processes=4, active_workers=2, backend="ray")) is None


def take_turns(turns: Turns, rank: int, counts, stop) -> None:
    while not stop.is_set():
        with turns.turn(rank):
            busy_until = time.perf_counter() + 0.005  # a rollout's work, on the core
            while time.perf_counter() < busy_until:
                pass
            counts[rank] += 1


@pytest.mark.slow
def test_a_turn_given_back_goes_to_a_waiting_worker():
    """One turn among 4 workers, a core left idle: each worker gets a share of the updates, where the
    worker giving the turn back used to take it again at once (98% of the updates one worker's)."""
    workers = 4
    turns, counts, stop = Turns(CTX, 1, workers), CTX.RawArray("i", workers), CTX.Event()
    processes = [CTX.Process(target=take_turns, args=(turns, rank, counts, stop)) for rank in range(workers)]
    for process in processes:
        process.start()
    time.sleep(1.5)
    stop.set()
    for process in processes:
        process.join(10)
    assert min(counts) >= sum(counts) / (3 * workers), list(counts)
