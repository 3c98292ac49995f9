"""What a node group and the trainer do when a group cannot reach the global model, or cannot be placed.

A worker host whose own link breaks loses its path to the global model while the head, the trainer and
the other groups are well. The group first rejoins from the global weights where a read of them
answers; where it does not, its run ends, and only the trainer can tell the two cases apart, by asking
the global model itself. Ray's calls are faked here (the group's tests use Ray's exception types); the
real link cut is benchmarks/faults/cluster_faults.py's.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from a3c.backends.node_group import GLOBAL_LOST, STOPPED, NodeGroup, Outbox
from a3c.backends.ray import RayBackend
from a3c.backends.sync import SyncedState


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


class CutOffGlobalModel:
    """Its exchanges get no answer; its reads answer `weights` and `env_steps`, or time out too
    (`exceptions`: Ray's, or FakeRay's)."""

    def __init__(self, exceptions, weights: torch.Tensor, env_steps: int, reads_answer: bool):
        self.exceptions, self.weights, self.env_steps, self.reads_answer = exceptions, weights, env_steps, reads_answer

    def exchange(self, deltas, env_steps):
        raise self.exceptions.GetTimeoutError("Get timed out: some object(s) not ready.")

    def read(self):
        if not self.reads_answer:
            raise self.exceptions.GetTimeoutError("Get timed out: some object(s) not ready.")
        return [self.weights.numpy()], self.env_steps


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
    backend.global_model = CutOffGlobalModel(FakeRay.exceptions, torch.zeros(3), 1000, global_answers)
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


def backend_waiting_for(placed: set) -> tuple[RayBackend, Console]:
    """A backend whose group 1's replacement has waited past --placement-timeout, with `placed` training."""
    backend = RayBackend.__new__(RayBackend)
    backend.ray = FakeRay({})  # no placement answers
    backend.config = SimpleNamespace(placement_timeout=30.0, num_processes=1)
    backend.placing = {"node() of group 1": (1, 0.0)}  # a deadline long past
    backend.placed, backend.console = set(placed), Console()
    return backend, backend.console


def test_a_group_left_unplaced_while_others_train_waits_in_ray_queue_and_the_run_trains_on():
    backend, console = backend_waiting_for(placed={0})
    assert backend._check_placements() is None
    assert console.lines == [
        "node group 1 did not start within --placement-timeout 30 s: no node has 1 free CPUs for it; "
        "training on with 1 group(s), and starting it where a node has room"
    ]
    assert backend._check_placements() is None and len(console.lines) == 1  # said once
    assert list(backend.placing) == ["node() of group 1"]  # still asked for: placed where a node has room
    backend.ray.outcomes["node() of group 1"] = "10.0.0.3 (worker-b)"
    assert backend._check_placements() is None
    assert backend.placed == {0, 1} and console.lines[-1] == "node group 1 runs on 10.0.0.3 (worker-b)"


def test_a_group_left_unplaced_with_no_group_training_stops_the_run():
    backend, console = backend_waiting_for(placed=set())
    assert backend._check_placements() == "node_group_unplaced"
    assert console.lines[-1].endswith("no node has 1 free CPUs for it; stopping")


class Counter:
    def __init__(self, own: int):
        self.own_steps, self.elsewhere = own, None

    def own(self) -> int:
        return self.own_steps

    def set_elsewhere(self, steps: int) -> None:
        self.elsewhere = steps


def group_cut_off(reads_answer: bool) -> tuple[NodeGroup, torch.Tensor]:
    """Group 1, whose workers moved its weights from the global ones it last took, at 3,000 own env steps
    of which it reported 2,000; the global model's weights moved on too, to 5,000 env steps in all."""
    ray = pytest.importorskip("ray", reason="the Ray backend needs pip install -r requirements-ray.txt")
    group = NodeGroup.__new__(NodeGroup)  # none of __init__'s workers and shared memory
    anchor = torch.zeros(4)
    group.synced = SyncedState(anchor + 1.0, [])
    group.anchor = [anchor]
    group.shared = SimpleNamespace(env_steps=Counter(own=3000), optimizer=SimpleNamespace(step_count=lambda: 120))
    group.outbox = Outbox(1, first_rank=1)
    group.reported_steps, group.synced_at, group.syncs, group.sync_seconds = 2000, 100, 3, 0.1
    global_weights = torch.full((4,), 0.5)
    group.global_model = CutOffGlobalModel(ray.exceptions, global_weights, 5000, reads_answer)
    return group, global_weights


def test_a_group_whose_exchange_gets_no_answer_rejoins_from_the_global_weights_and_trains_on():
    group, global_weights = group_cut_off(reads_answer=True)
    group._sync_or_rejoin()
    assert torch.equal(group.synced.weights, global_weights)  # its updates since the last exchange dropped
    assert torch.equal(group.anchor[0], global_weights)
    # the run's count: the global 5,000 and the 1,000 steps this group has not reported yet
    assert group.shared.env_steps.elsewhere + group.shared.env_steps.own() == 6000
    [notice] = group.outbox.drain()
    assert notice.line.startswith("node group 1: its exchange with the global model got no answer")


def test_a_group_that_cannot_read_the_global_model_either_ends_its_run():
    group, _ = group_cut_off(reads_answer=False)
    with pytest.raises(TimeoutError):  # run() returns GLOBAL_LOST on it, and the trainer decides
        group._sync_or_rejoin()
