"""make_env / describe / EnvBatch (a3c.envs.spec) with the test environments of tests/cue_env.py."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from a3c.envs.batch import EnvBatch, VectorEnvBatch, make_env_batch
from a3c.envs.make import env_spec, make_env
from a3c.envs.masks import action_mask_problem
from a3c.envs.parts import flatten_batch, observation_parts
from a3c.errors import EnvError

CUE = "tests.cue_env:Cue-v0"


def test_env_spec_reads_sizes_and_reward_threshold():
    spec = env_spec(CUE)
    assert (spec.obs_shape, spec.num_actions, spec.action_start) == ((3,), 3, 0)
    assert spec.reward_threshold == 0.95
    cartpole = env_spec("CartPole-v1")
    assert (cartpole.obs_shape, cartpole.num_actions, cartpole.reward_threshold) == ((4,), 2, 475.0)


def test_unknown_env_id_is_a_one_line_env_error():
    with pytest.raises(EnvError) as info:
        make_env("NoSuchEnv-v0")
    assert "NoSuchEnv-v0" in str(info.value) and "\n" not in str(info.value)


def test_unknown_module_is_an_env_error():
    with pytest.raises(EnvError):
        make_env("no_such_module_xyz:Cue-v0")


@pytest.mark.parametrize(
    "env_id, words",
    [
        ("tests.cue_env:CueText-v0", ["action space", "Text"]),
        ("tests.cue_env:CueUnboundedBox-v0", ["action space", "Box", "bounded"]),
        ("tests.cue_env:CueTextObs-v0", ["observation space", "Text"]),
        ("tests.cue_env:CueSequenceObs-v0", ["observation space", "Sequence"]),
        ("tests.cue_env:CueGraphObs-v0", ["observation space", "Graph"]),
        ("tests.structured_env:CueAndText-v0", ["observation space", "part 'note' is a Text"]),
    ],
)
def test_unsupported_spaces_are_refused_naming_the_space(env_id, words):
    with pytest.raises(EnvError) as info:
        make_env(env_id)
    for word in words:
        assert word in str(info.value)


def test_env_batch_maps_action_indices_onto_a_discrete_space_with_a_start():
    batch = EnvBatch("tests.cue_env:CueOffset-v0", seeds=[0, 1, 2, 3, 4, 5])
    spec = batch.spec
    assert (spec.num_actions, spec.action_start) == (3, 3)
    cues = batch.obs.argmax(axis=1)
    result = batch.step(cues)  # index i means action start + i, which the env rewards for cue i
    assert result.rewards.tolist() == [1.0] * 6
    wrong = batch.step((batch.obs.argmax(axis=1) + 1) % 3)
    assert wrong.rewards.tolist() == [0.0] * 6
    batch.close()


def test_env_batch_resets_ended_episodes_and_reports_them():
    batch = EnvBatch(CUE, seeds=[10, 11, 12, 13])
    result = batch.step(batch.obs.argmax(axis=1))
    assert result.terminated.all() and not result.truncated.any()
    assert result.finished_returns == [1.0] * 4 and result.finished_lengths == [1] * 4
    assert np.count_nonzero(result.final_obs) == 0  # kept only where truncated
    # the next observations are fresh one-hot cues
    assert (result.obs.sum(axis=1) == 1).all() and result.obs is batch.obs
    batch.close()


def test_env_batch_keeps_the_final_observation_of_a_truncated_episode():
    batch = EnvBatch("tests.cue_env:CueTruncated-v0", seeds=[0, 1])
    first = batch.step(np.zeros(2, dtype=np.int64))
    assert not first.terminated.any() and not first.truncated.any() and first.finished_returns == []
    second = batch.step(np.zeros(2, dtype=np.int64))
    assert second.truncated.all() and not second.terminated.any()
    assert second.finished_lengths == [2, 2]
    assert (second.final_obs.sum(axis=1) == 1).all()  # the last observation, one-hot, not zeros
    batch.close()


def test_env_batch_seeds_make_it_reproducible():
    a = EnvBatch(CUE, seeds=[3, 4, 5])
    b = EnvBatch(CUE, seeds=[3, 4, 5])
    for _ in range(5):
        assert np.array_equal(a.obs, b.obs)
        actions = np.zeros(3, dtype=np.int64)
        a.step(actions)
        b.step(actions)
    a.close()
    b.close()


def test_random_play_on_the_cue_task_scores_about_one_over_the_number_of_cues():
    batch = EnvBatch(CUE, seeds=list(range(50)))
    rng = np.random.default_rng(0)
    returns = []
    for _ in range(12):
        returns += batch.step(rng.integers(0, 3, size=50)).finished_returns
    assert len(returns) == 600
    assert 0.25 < np.mean(returns) < 0.42  # 1/3 +- about 4 standard errors
    batch.close()


def test_large_cartpole_batches_use_the_vectorised_implementation_and_a_loop_elsewhere():
    assert isinstance(make_env_batch("CartPole-v1", list(range(8)), vector_seed=0), VectorEnvBatch)
    assert isinstance(make_env_batch("CartPole-v1", [0], vector_seed=0), EnvBatch)  # the loop is faster for few envs
    assert isinstance(make_env_batch("Acrobot-v1", list(range(8)), vector_seed=0), EnvBatch)
    assert isinstance(make_env_batch(CUE, [0, 1], vector_seed=0), EnvBatch)


def test_vector_batch_marks_the_reset_step_after_an_episode_ends_as_not_valid():
    vector_env = gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="vector_entry_point")
    batch = VectorEnvBatch(vector_env, env_spec("CartPole-v1"), seed=0)
    always_left = np.zeros(3, dtype=np.int64)  # falls over within a few dozen steps
    ended_before = np.zeros(3, dtype=bool)
    finished = []
    for _ in range(200):
        result = batch.step(always_left)
        assert np.array_equal(result.valid, ~ended_before)  # exactly the step after an end
        assert np.all(result.rewards[~result.valid] == 0)
        ended_before = result.terminated | result.truncated
        assert not np.any(ended_before & ~result.valid)  # a reset step never ends an episode
        finished += list(zip(result.finished_returns, result.finished_lengths))
    assert len(finished) >= 3
    # CartPole pays 1 per real step, so each episode's return equals its length
    assert all(ret == length and length > 1 for ret, length in finished)


MASKED = "tests.masked_env:"  # MaskedCue: two of four actions legal each step, an illegal one pays -1 and ends


@pytest.mark.parametrize("env_id, source", [("MaskedCue-v0", "info"), ("MaskedCueDict-v0", "observation")])
def test_an_env_batch_gives_the_action_mask_of_the_observation_it_hands_over(env_id, source):
    """From the info or from a Dict observation's "action_mask" key, whose other key is then the observation."""
    spec = env_spec(MASKED + env_id)
    assert spec.action_mask == source and spec.obs_shape == (4,) and env_spec(CUE).action_mask is None
    batch = EnvBatch(MASKED + env_id, seeds=list(range(8)))
    assert batch.obs.shape == (8, 4) and (batch.obs.sum(axis=1) == 1).all()
    for _ in range(12):  # across episode ends: a reset's mask replaces the ended episode's
        assert (batch.action_mask.sum(axis=1) == 2).all()
        result = batch.step(batch.action_mask.argmax(axis=1))  # a legal action in every env
        assert (result.rewards >= 0).all()
    illegal = batch.step(batch.action_mask.argmin(axis=1))
    assert (illegal.rewards == -1).all() and illegal.terminated.all()
    assert isinstance(make_env_batch(MASKED + env_id, list(range(8)), vector_seed=0), EnvBatch)
    batch.close()


@pytest.mark.parametrize(
    "env_id, words",
    [
        (
            "MaskedCueWrongSize-v0",
            "at its first reset: an action_mask of shape (3,), where its action space Discrete(4) needs (4,)",
        ),
        ("MaskedCueResetOnly-v0", "at its step 1: no action_mask in its info, where its first reset gave one"),
        (
            "MaskedCueFirstEpisode-v0",
            "at its reset after step 5: no action_mask in its info, where its first reset gave one",
        ),
    ],
)
def test_a_mask_of_the_wrong_size_or_that_comes_only_sometimes_is_refused_at_start_up(env_id, words):
    with pytest.raises(EnvError) as info:
        env_spec(MASKED + env_id)
    assert words in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "env_id, words",
    [
        ("MaskedCueStops-v0", "no action_mask in its info, where its first reset gave one"),
        ("MaskedCueStarts-v0", "an action_mask in its info, where its first reset gave none"),
    ],
)
def test_a_mask_that_stops_after_the_start_up_checks_fails_the_batch_in_one_line(env_id, words):
    batch = EnvBatch(MASKED + env_id, seeds=[0])
    with pytest.raises(EnvError) as info:
        for _ in range(300):
            masked = batch.action_mask is not None  # MaskedCueStarts: none, until a reset gives one
            batch.step(batch.action_mask.argmax(axis=1) if masked else np.zeros(1, dtype=np.int64))
    assert words in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "env_id, parts, first",
    [
        ("tests.structured_env:CueAndBit-v0", ["0: one_hot [3]", "1: bits [1]"], None),
        ("tests.structured_env:FrameAndVector-v0", ["frame: frames [1, 6, 6]", "vector: box [2]"], None),
        ("tests.masked_env:MaskedCueParts-v0", ["cue: box [4]", "step: one_hot [5]"], "observation"),
    ],
)
def test_a_dict_or_tuple_observation_becomes_its_parts_encoded_side_by_side(env_id, parts, first):
    """A Discrete part one-hot, bits and frames as floats, a Box as it is; an action mask beside two parts."""
    spec = env_spec(env_id)
    assert spec.record()["observation_parts"] == parts and spec.action_mask == first
    assert isinstance(spec.observation_space, (gym.spaces.Dict, gym.spaces.Tuple))  # what a --model is built for
    raw, wrapped = gym.make(env_id), make_env(env_id)
    for seed in range(6):
        obs, _ = raw.reset(seed=seed)
        flat, _ = wrapped.reset(seed=seed)
        assert flat.shape == spec.obs_shape and flat.dtype == np.float32
        if env_id.endswith("CueAndBit-v0"):
            assert flat.tolist() == [float(obs[0] == k) for k in range(3)] + [float(obs[1][0])]
        elif env_id.endswith("FrameAndVector-v0"):
            assert flat.tolist() == obs["frame"].ravel().astype(float).tolist() + obs["vector"].tolist()
        else:
            assert flat.tolist() == obs["cue"].tolist() + [1.0, 0, 0, 0, 0]  # step 0 of 5
    assert make_env_batch(env_id, list(range(8)), vector_seed=0).obs.shape == (8, *spec.obs_shape)


def test_a_mask_is_checked_for_its_size_values_and_a_legal_choice_in_every_part():
    multi = env_spec("tests.cue_env:MultiCue-v0")  # MultiDiscrete([3, 3]): a mask of 3 + 3
    assert action_mask_problem([1, 0, 0, 0, 0, 1], multi) is None
    assert action_mask_problem(np.array([True, False, True, False, True, True]), multi) is None
    assert "allows no action in a part" in action_mask_problem([1, 1, 1, 0, 0, 0], multi)
    assert "shape (3,)" in action_mask_problem([1, 1, 1], multi)
    assert "values other than 0 and 1" in action_mask_problem([1, 0, 0, 0, 0.5, 1], multi)
    assert action_mask_problem([0, 0, 0], env_spec(CUE)) == "an action_mask that allows no action"
    assert "where its first reset gave one" in action_mask_problem(None, multi)


def test_parts_are_encoded_by_their_kind_and_nested_ones_refused():
    space = gym.spaces.Dict(
        {
            "d": gym.spaces.Discrete(3, start=2),
            "m": gym.spaces.MultiDiscrete([2, 3]),
            "b": gym.spaces.Box(-1, 1, (2, 2)),
            "f": gym.spaces.Box(0, 255, (2, 3, 3), np.uint8),
            "bits": gym.spaces.MultiBinary(2),
        }
    )
    parts = observation_parts(space)  # in the space's order of keys: gymnasium sorts them
    assert [(part.key, part.kind, part.size) for part in parts] == [
        ("b", "box", 4),
        ("bits", "bits", 2),
        ("d", "one_hot", 3),
        ("f", "frames", 18),
        ("m", "one_hot", 5),
    ]
    obs = {
        "d": np.array([4, 2]),
        "m": np.array([[1, 0], [0, 2]]),
        "b": np.arange(8).reshape(2, 2, 2),
        "f": np.full((2, 2, 3, 3), 255, np.uint8),
        "bits": np.array([[1, 0], [0, 1]]),
    }
    flat = flatten_batch(parts, obs)
    assert flat[1, :4].tolist() == [4, 5, 6, 7] and flat[1, 4:6].tolist() == [0, 1] and (flat[:, 9:27] == 255).all()
    assert flat[0, 6:9].tolist() == [0, 0, 1] and flat[1, 6:9].tolist() == [1, 0, 0]  # Discrete(3, start=2)
    assert flat[0, 27:].tolist() == [0, 1, 1, 0, 0] and flat[1, 27:].tolist() == [1, 0, 0, 0, 1]
    assert observation_parts(gym.spaces.Box(0, 1, (3,))) is None
    with pytest.raises(EnvError, match="its part 'inner' is a Dict"):
        observation_parts(gym.spaces.Dict({"inner": gym.spaces.Dict({"x": gym.spaces.Discrete(2)})}))
