"""What the Ray backend's trainer does when a node group reports that it could not reach the global model.

A worker host whose own link breaks loses its path to the global model while the head, the trainer and
the other groups are well; only the trainer can tell the two apart, by asking the global model itself.
Ray is faked here (its calls are what the trainer's check makes), so these run without it; the real
link cut is benchmarks/cluster_faults.py's.
"""

from __future__ import annotations

import numpy as np

from a3c.backends.node_group import GLOBAL_LOST, STOPPED
from a3c.backends.ray import RayBackend


class FakeRay:
    """A ref is a name; the calls in `outcomes` have ended with the value given there, the others run on."""

    class exceptions:
        class RayError(Exception):
            pass

        class RayActorError(RayError):
            pass

        class GetTimeoutError(RayError):
            pass

        class RayTaskError(RayError):
            pass

    def __init__(self, outcomes: dict):
        self.outcomes, self.killed = outcomes, []

    def wait(self, refs, num_returns, timeout):
        return [ref for ref in refs if ref in self.outcomes], [ref for ref in refs if ref not in self.outcomes]

    def get(self, ref, timeout):
        return self.outcomes[ref]

    def kill(self, actor):
        self.killed.append(actor)


class GlobalModel:
    def __init__(self, answers: bool):
        self.answers = answers

    def read(self):
        if not self.answers:
            raise FakeRay.exceptions.GetTimeoutError("Get timed out: some object(s) not ready.")
        return [np.zeros(3, dtype=np.float32)], 1000


class Mirror:
    def __init__(self):
        self.assigned = None

    def assign(self, values):
        self.assigned = values


class Console:
    def __init__(self):
        self.lines = []

    def message(self, line, error=False):
        self.lines.append(line)


class Children:
    """Records the restarts asked for (RayBackend.restart_group's call), and grants them."""

    def __init__(self):
        self.restarts = []

    def restart_within_limit(self, restarts, key, what_happened, how, start):
        self.restarts.append((key, what_happened))
        return True


def backend_after(outcome: str, global_answers: bool) -> tuple[RayBackend, FakeRay]:
    """A backend of two placed groups whose group 1's run() ended with `outcome`."""
    backend = RayBackend.__new__(RayBackend)  # none of __init__'s Ray and processes
    backend.ray = FakeRay({"run of group 1": outcome})
    backend.groups = {0: "actor 0", 1: "actor 1"}
    backend.runs = {"run of group 0 (still running)": 0, "run of group 1": 1}
    backend.placed = {0, 1}
    backend.global_model = GlobalModel(global_answers)
    backend.mirror, backend.console, backend.children = Mirror(), Console(), Children()
    backend.group_restarts = {0: 0, 1: 0}
    backend.failed = None
    return backend, backend.ray


def test_a_group_cut_off_from_a_global_model_that_answers_the_trainer_is_replaced_and_the_run_goes_on():
    backend, ray = backend_after(GLOBAL_LOST, global_answers=True)
    assert backend._check_groups() is None
    assert backend.failed is None
    assert backend.children.restarts == [
        (1, "node group 1 was lost (it could not reach the global model, which answers the trainer)")
    ]
    assert ray.killed == ["actor 1"]  # its CPUs freed for the new group
    assert backend.placed == {0}
    assert backend.mirror.assigned is not None  # the trainer's own read of the global weights


def test_a_group_cut_off_from_a_global_model_that_the_trainer_cannot_reach_either_stops_the_run():
    backend, ray = backend_after(GLOBAL_LOST, global_answers=False)
    assert backend._check_groups() == "global_model_failed"
    assert backend.children.restarts == []
    assert any(line.startswith("the global model is lost") for line in backend.console.lines), backend.console.lines


def test_a_group_that_stopped_is_neither_replaced_nor_a_loss():
    backend, ray = backend_after(STOPPED, global_answers=False)
    assert backend._check_groups() is None
    assert backend.children.restarts == [] and backend.failed is None
