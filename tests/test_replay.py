"""The replay memory (a3c.learn.replay): ring-buffer eviction, uniform and prioritised sampling, IS weights, handles."""

from __future__ import annotations

import numpy as np
import pytest

from a3c.learn.replay import MIN_PRIORITY, ReplayMemory, Rollout

STEPS, BATCH = 3, 2


def rollout(tag: int) -> Rollout:
    """A small rollout of uint8 frames whose rewards all equal `tag`, to tell rollouts apart."""
    frames = np.zeros((STEPS, BATCH, 4, 4), dtype=np.uint8)
    flags = np.zeros((STEPS, BATCH), dtype=bool)
    return Rollout(
        observations=frames,
        actions=np.zeros((STEPS, BATCH), dtype=np.int64),
        behaviour_log_probs=np.zeros((STEPS, BATCH), dtype=np.float32),
        rewards=np.full((STEPS, BATCH), tag, dtype=np.float32),
        dones=flags,
        truncated=flags,
        final_obs=frames,
        valid=~flags,
        restarted=flags,
        start_state=(np.zeros((BATCH, 8), np.float32), np.zeros((BATCH, 8), np.float32)),
        next_obs=frames[0],
    )


def tag(sampled: Rollout) -> int:
    return int(sampled.rewards[0, 0])


def memory_of(tags, capacity=None, alpha=0.0, seed=0) -> tuple[ReplayMemory, list]:
    memory = ReplayMemory(capacity or len(tags), alpha, rng=np.random.default_rng(seed))
    return memory, [memory.add(rollout(t)) for t in tags]


def draws(memory: ReplayMemory, n: int) -> tuple[dict, dict]:
    """How often each tag was drawn, and the IS weight it came with (the same every time)."""
    counts, weights = {}, {}
    for _ in range(n):
        _, sampled, weight = memory.sample()
        counts[tag(sampled)] = counts.get(tag(sampled), 0) + 1
        assert weights.setdefault(tag(sampled), weight) == weight
    return counts, weights


def chi_square(counts: dict, probabilities: dict, n: int) -> float:
    return sum((counts.get(k, 0) - n * p) ** 2 / (n * p) for k, p in probabilities.items())


def test_a_rollout_keeps_its_dtypes_and_counts_its_bytes():
    r = rollout(1)
    assert r.observations.dtype == np.uint8
    assert r.nbytes == sum(a.nbytes for a in (*r[:9], r.next_obs, *r.start_state))
    assert r._replace(start_state=()).nbytes == r.nbytes - 2 * BATCH * 8 * 4


def test_the_ring_buffer_evicts_the_oldest_rollout_first():
    memory = ReplayMemory(3, rng=np.random.default_rng(0))
    for added in range(7):
        memory.add(rollout(added))
        assert len(memory) == min(added + 1, 3)
        kept = set(draws(memory, 200)[0])
        assert kept == set(range(max(0, added - 2), added + 1))  # never an evicted one


def test_uniform_sampling_draws_each_rollout_equally_often_with_weight_one():
    n = 10_000
    memory, _ = memory_of(range(5))
    counts, weights = draws(memory, n)
    # chi-square with 4 degrees of freedom: 18.5 is its 0.999 quantile
    assert chi_square(counts, dict.fromkeys(range(5), 0.2), n) < 18.5
    assert set(weights.values()) == {1.0}


@pytest.mark.parametrize("alpha", [0.5, 1.0])
def test_prioritised_sampling_follows_priority_to_the_alpha_with_weights_p_min_over_p(alpha):
    n = 20_000
    memory, handles = memory_of(range(4), alpha=alpha)
    priorities = [1.0, 2.0, 3.0, 4.0]
    for handle, priority in zip(handles, priorities):
        memory.update_priority(handle, priority)
    scaled = np.array(priorities) ** alpha
    probabilities = dict(enumerate(scaled / scaled.sum()))
    counts, weights = draws(memory, n)
    assert chi_square(counts, probabilities, n) < 16.3  # the 0.999 quantile, 3 degrees of freedom
    for k, p in probabilities.items():
        assert weights[k] == pytest.approx(min(probabilities.values()) / p)
    assert weights[0] == 1.0


def test_priority_zero_is_floored_so_the_rollout_stays_sampleable():
    memory, handles = memory_of(range(2), alpha=1.0)
    memory.update_priority(handles[0], 0.0)
    memory.update_priority(handles[1], 2 * MIN_PRIORITY)
    counts, weights = draws(memory, 3000)
    assert counts[0] > 800 and weights[1] == pytest.approx(0.5)


def test_a_new_rollout_gets_the_largest_priority_stored():
    memory, handles = memory_of(range(3), capacity=4, alpha=1.0)
    for handle, priority in zip(handles, [4.0, 2.0, 0.5]):
        memory.update_priority(handle, priority)
    memory.add(rollout(3))  # priority 4
    assert draws(memory, 2000)[1] == pytest.approx({0: 0.125, 1: 0.25, 2: 1.0, 3: 0.125})
    memory.update_priority(handles[1], 8.0)
    memory.add(rollout(4))  # evicts 0; 8 is now the largest
    assert draws(memory, 2000)[1] == pytest.approx({1: 0.0625, 2: 1.0, 3: 0.125, 4: 0.0625})


def test_an_evicted_rollouts_priority_does_not_pass_to_the_new_ones():
    memory, handles = memory_of(range(2), alpha=1.0)
    memory.update_priority(handles[0], 100.0)
    memory.update_priority(handles[1], 2.0)
    memory.add(rollout(2))  # evicts rollout 0: gets 2, not 100
    assert draws(memory, 500)[1] == pytest.approx({1: 1.0, 2: 1.0})


def test_an_update_through_a_stale_handle_is_ignored():
    memory, handles = memory_of(range(2), alpha=1.0)
    stale = handles[0]
    new = memory.add(rollout(2))  # overwrites rollout 0's slot
    assert new.slot == stale.slot and new != stale
    memory.update_priority(stale, 100.0)
    assert draws(memory, 500)[1] == pytest.approx({1: 1.0, 2: 1.0})  # had it landed, rollout 2 would weigh 0.01
    memory.update_priority(new, 4.0)
    assert draws(memory, 500)[1] == pytest.approx({1: 1.0, 2: 0.25})


def test_sample_returns_a_handle_that_updates_the_sampled_rollout():
    memory, _ = memory_of(range(2), alpha=1.0)
    handle, sampled, _ = memory.sample()
    memory.update_priority(handle, 3.0)
    assert draws(memory, 500)[1][tag(sampled)] == pytest.approx(1 / 3)


def test_sampling_an_empty_memory_raises_a_clear_error():
    with pytest.raises(ValueError, match="empty ReplayMemory"):
        ReplayMemory(4, rng=np.random.default_rng(0)).sample()


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="capacity"):
        ReplayMemory(0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="priority_alpha"):
        ReplayMemory(4, -1.0, rng=np.random.default_rng(0))
    memory, handles = memory_of(range(1))
    with pytest.raises(ValueError, match="finite"):
        memory.update_priority(handles[0], float("nan"))
