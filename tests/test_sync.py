"""What node groups and the global model exchange (a3c/backends/sync.py), with no Ray: the global model is
a list here."""

from __future__ import annotations

import torch

from a3c.backends.sync import SyncedState, merge, moments_to_sums, sums_to_moments, sync_round
from a3c.learn.optim import average_states
from a3c.nets.actor_critic import RunningNorm


def norm_of(data: torch.Tensor) -> RunningNorm:
    norm = RunningNorm((data.shape[1],))
    for batch in data.split(7):
        norm.update(batch)
    return norm


def test_sums_round_trip_to_the_same_moments_and_start_from_mean_0_variance_1():
    norm = norm_of(torch.randn(50, 3) * 4 + 2)
    count, mean, var = sums_to_moments(moments_to_sums(norm.count, norm.mean, norm.var), (3,))
    torch.testing.assert_close((count, mean, var), (norm.count, norm.mean, norm.var))
    fresh = RunningNorm((2, 2))
    count, mean, var = sums_to_moments(moments_to_sums(fresh.count, fresh.mean, fresh.var), (2, 2))
    assert count == 0 and torch.equal(mean, fresh.mean) and torch.equal(var, fresh.var)


def test_adding_two_groups_sums_gives_the_statistics_of_all_their_data():
    first, second = torch.randn(40, 3), torch.randn(90, 3) * 3 + 5
    a, b, both = norm_of(first), norm_of(second), norm_of(torch.cat([first, second]))
    added = moments_to_sums(a.count, a.mean, a.var) + moments_to_sums(b.count, b.mean, b.var)
    torch.testing.assert_close(sums_to_moments(added, (3,)), (both.count, both.mean, both.var))


class GlobalList:
    """The global model's arithmetic (GlobalShard's merge), for `groups` node groups; answers with the values."""

    def __init__(self, values: list[torch.Tensor], groups: int):
        self.values = [value.clone() for value in values]
        self.groups = groups

    def exchange(self, deltas: list[torch.Tensor]) -> list[torch.Tensor]:
        merge(self.values, deltas, self.groups)
        return [value.clone() for value in self.values]


def two_groups_syncing_in_turn(steps) -> tuple[GlobalList, list[SyncedState]]:
    """Two groups from zero weights; in each round, group k applies steps(round, k) and then syncs."""
    start = torch.zeros(4)
    global_model = GlobalList([start], groups=2)
    groups = [SyncedState(start.clone(), []) for _ in range(2)]
    anchors = [[start.clone()] for _ in groups]
    for round_ in range(5):
        for index, group in enumerate(groups):
            group.weights += steps(round_, index)  # a worker's update
            anchors[index] = sync_round(group, anchors[index], global_model.exchange)
    return global_model, groups


def test_the_global_weights_move_by_the_groups_mean_change():
    torch.manual_seed(0)
    drawn = torch.randn(5, 2, 4)
    global_model, groups = two_groups_syncing_in_turn(lambda round_, index: drawn[round_, index])
    torch.testing.assert_close(global_model.values[0], drawn.sum(dim=(0, 1)) / 2)
    # the group that synced last holds the global weights
    torch.testing.assert_close(groups[1].weights, global_model.values[0])


def test_a_push_every_group_makes_counts_once_not_once_a_group():
    push = torch.tensor([0.1, -0.2, 0.0, 0.3])
    global_model, groups = two_groups_syncing_in_turn(lambda round_, index: push)
    torch.testing.assert_close(global_model.values[0], 5 * push)  # five rounds of the same push


def test_an_update_applied_during_the_round_trip_is_kept_and_sent_next_time():
    group = SyncedState(torch.zeros(3), [])
    global_model = GlobalList([torch.zeros(3)], groups=1)
    late = torch.tensor([0.0, 1.0, 0.0])

    def exchange_while_a_worker_updates(deltas):
        group.weights += late  # lands after the snapshot was read
        return global_model.exchange(deltas)

    group.weights += torch.tensor([1.0, 0.0, 0.0])
    anchor = sync_round(group, [torch.zeros(3)], exchange_while_a_worker_updates)
    torch.testing.assert_close(group.weights, torch.tensor([1.0, 1.0, 0.0]))
    torch.testing.assert_close(global_model.values[0], torch.tensor([1.0, 0.0, 0.0]))
    sync_round(group, anchor, global_model.exchange)
    torch.testing.assert_close(global_model.values[0], torch.tensor([1.0, 1.0, 0.0]))


def test_observation_and_return_statistics_of_two_groups_merge_through_the_global_sums():
    first, second = torch.randn(30, 2), torch.randn(60, 2) * 2 - 1
    first_returns, second_returns = torch.randn(40) * 3 - 10, torch.randn(20) + 5
    groups = [SyncedState(torch.zeros(1), [RunningNorm((2,)), RunningNorm(())]) for _ in range(2)]
    start = groups[0].read()
    global_model = GlobalList(start, groups=2)
    anchors = [start, start]
    for group, observations, returns in zip(groups, (first, second), (first_returns, second_returns)):
        group.norms[0].update(observations)
        group.norms[1].update(returns)
    for _ in range(2):  # the second round brings group 0 the data group 1 sent after it
        for index, group in enumerate(groups):
            anchors[index] = sync_round(group, anchors[index], global_model.exchange)
    expected = [norm_of(torch.cat([first, second])), RunningNorm(())]
    expected[1].update(torch.cat([first_returns, second_returns]))
    for group in groups:
        for norm, both in zip(group.norms, expected):
            torch.testing.assert_close((norm.count, norm.mean, norm.var), (both.count, both.mean, both.var))


def test_optimizer_states_average_their_moments_and_keep_the_most_steps():
    states = [
        {"steps": torch.tensor(5.0), "exp_avg": [torch.tensor([1.0, 3.0])], "exp_avg_sq": [torch.tensor([2.0])]},
        {"steps": torch.tensor(9.0), "exp_avg": [torch.tensor([3.0, 5.0])], "exp_avg_sq": [torch.tensor([4.0])]},
    ]
    merged = average_states(states)
    assert merged["steps"] == 9.0
    torch.testing.assert_close(merged["exp_avg"], [torch.tensor([2.0, 4.0])])
    torch.testing.assert_close(merged["exp_avg_sq"], [torch.tensor([3.0])])


def test_shards_split_the_weights_into_contiguous_slices_one_per_4m_parameters_by_default():
    from a3c.backends.global_model import shard_bounds, shard_count

    assert shard_bounds(10, 3) == [0, 3, 6, 10]
    assert shard_bounds(5, 1) == [0, 5]
    assert shard_count(0, 34_000) == 1 and shard_count(0, 9_000_000) == 3 and shard_count(2, 34_000) == 2
