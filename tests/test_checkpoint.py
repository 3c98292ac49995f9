"""save_checkpoint / load_checkpoint: round trip, and refusal of anything that is not ours."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from a3c.agent import load_agent, model_from_checkpoint
from a3c.config.settings import Config, for_spaces
from a3c.envs.make import env_spec
from a3c.errors import WriteError
from a3c.learn.checkpoint import CheckpointError, checkpoint_payload, load_checkpoint, save_checkpoint
from a3c.nets.actor_critic import ActorCritic, StockOptions
from a3c.nets.factory import build_model

from .conftest import fill

DATA = Path(__file__).parent / "data"


class CreatesAFile:
    """Unpickling this calls open(path, 'w'): the file's existence shows the pickle ran code."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_round_trip_keeps_weights_config_and_numbers(tmp_path):
    torch.manual_seed(0)
    model = ActorCritic(4, 2, StockOptions(hidden_sizes=(8,), noisy=True))
    path = tmp_path / "sub" / "ck.pt"  # the parent folder is created
    payload = {
        "config": Config(env="CartPole-v1", seed=3).to_dict(),
        "model": model.state_dict(),
        "env_steps": 1234,
        "eval_return": 99.5,
        "optimizer": {"steps": torch.tensor(7.0, dtype=torch.float64)},
    }
    save_checkpoint(path, payload)
    loaded = load_checkpoint(path)
    assert loaded["config"] == payload["config"]
    assert Config.from_dict(loaded["config"]) == Config(env="CartPole-v1", seed=3)
    assert loaded["env_steps"] == 1234 and loaded["eval_return"] == 99.5
    assert loaded["optimizer"]["steps"].item() == 7.0
    assert loaded["model"].keys() == payload["model"].keys()
    for name, tensor in payload["model"].items():
        assert torch.equal(loaded["model"][name], tensor)
    restored = ActorCritic(4, 2, StockOptions(hidden_sizes=(8,), noisy=True))
    restored.load_state_dict(loaded["model"])
    # nothing but the checkpoint is left behind (no temporary files)
    assert [p.name for p in path.parent.iterdir()] == ["ck.pt"]


def test_a_checkpoint_without_weights_is_refused(tmp_path):
    path = tmp_path / "ck.pt"
    save_checkpoint(path, {"config": {}})
    with pytest.raises(CheckpointError, match="lacks model"):
        load_checkpoint(path)


def test_saving_again_replaces_the_file(tmp_path):
    path = tmp_path / "ck.pt"
    save_checkpoint(path, {"config": {}, "model": {}, "env_steps": 1})
    save_checkpoint(path, {"config": {}, "model": {}, "env_steps": 2})
    assert load_checkpoint(path)["env_steps"] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]


def test_a_disk_that_fills_mid_checkpoint_raises_a_write_error_and_leaves_no_partial_file(small_disk):
    spare = small_disk / "spare"
    spare.write_bytes(bytes(8192))
    fill(small_disk)
    spare.unlink()  # two pages free: the checkpoint's first bytes fit, its end does not
    path = small_disk / "last.pt"
    with pytest.raises(WriteError, match="No space left on device"):
        save_checkpoint(path, {"config": {}, "model": {"weight": torch.zeros(64, 1024)}})
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]


@pytest.mark.parametrize("writer", ["torch.save", "pickle.dump"])
def test_a_crafted_pickle_is_refused_and_never_executed(tmp_path, writer):
    marker = tmp_path / "pwned.txt"
    path = tmp_path / "evil.pt"
    payload = {"format": "a3c-checkpoint", "version": 1, "config": {}, "model": CreatesAFile(marker)}
    with open(path, "wb") as file:
        if writer == "torch.save":
            torch.save(payload, file)
        else:
            pickle.dump(payload, file, protocol=2)
    assert not marker.exists()
    with pytest.raises(CheckpointError):
        load_checkpoint(path)
    assert not marker.exists()
    # the file really is malicious: an unrestricted load would have created the marker
    with open(path, "rb") as file:
        if writer == "torch.save":
            torch.load(file, weights_only=False)
        else:
            pickle.load(file)
    assert marker.exists()


def test_truncated_checkpoint_is_refused(tmp_path):
    path = tmp_path / "ck.pt"
    model = ActorCritic(4, 2, StockOptions(hidden_sizes=(8,), noisy=True))
    save_checkpoint(path, {"model": model.state_dict(), "config": Config().to_dict()})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError):
        load_checkpoint(path)


@pytest.mark.parametrize(
    "content",
    [b"", b"x", b"this is not a checkpoint\n", b"hello world", b"PK\x03\x04 broken zip"],
    ids=["empty", "x", "text", "hello", "broken-zip"],
)
def test_garbage_files_are_refused(tmp_path, content):
    path = tmp_path / "ck.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError):
        load_checkpoint(path)


def test_foreign_torch_file_without_the_format_key_is_refused(tmp_path):
    path = tmp_path / "foreign.pt"
    torch.save({"model": ActorCritic(4, 2, StockOptions(hidden_sizes=(8,), noisy=True)).state_dict(), "epoch": 3}, path)
    with pytest.raises(CheckpointError, match="not an a3c checkpoint"):
        load_checkpoint(path)


def test_foreign_torch_file_that_is_not_a_dict_is_refused(tmp_path):
    path = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), path)
    with pytest.raises(CheckpointError):
        load_checkpoint(path)


@pytest.mark.parametrize(
    "version, words",
    [
        (999, "format 999; a3c .* reads formats 1 to 7; upgrade a3c"),
        (0, "format 0; a3c .* reads formats 1 to 7$"),
        ("2", "format 2; a3c .* reads formats 1 to 7$"),
    ],
)
def test_a_checkpoint_format_this_version_cannot_read_is_refused_naming_both(tmp_path, version, words):
    path = tmp_path / "other.pt"
    torch.save({"format": "a3c-checkpoint", "version": version, "config": {}, "model": {}}, path)
    with pytest.raises(CheckpointError, match=words):
        load_checkpoint(path)


def test_a_format_1_checkpoint_is_upgraded_on_load_and_new_ones_are_written_in_format_7(tmp_path):
    model = ActorCritic(4, 2, StockOptions(hidden_sizes=(8,)))
    old = {
        "format": "a3c-checkpoint",
        "version": 1,
        "config": {"env": "CartPole-v1", "hidden_size": 8},
        "model": model.state_dict(),
        "env_steps": 5,
    }
    torch.save(old, tmp_path / "v1.pt")
    loaded = load_checkpoint(tmp_path / "v1.pt")
    assert loaded["version"] == 7 and loaded["config"]["hidden_sizes"] == [8] and "hidden_size" not in loaded["config"]
    save_checkpoint(tmp_path / "v7.pt", {"config": Config().to_dict(), "model": model.state_dict()})
    assert torch.load(tmp_path / "v7.pt", weights_only=True)["version"] == 7


def test_a_format_2_checkpoint_keeps_its_value_head_on_whole_returns(tmp_path):
    """Format 2 had no value statistics: its config says so, and its weights load into a network without them."""
    model = ActorCritic(4, 2, StockOptions(hidden_sizes=(8,)))
    settings = Config(hidden_sizes=(8,), normalize_obs=False).to_dict()  # format 2 had no novelty_coef
    config = {k: v for k, v in settings.items() if k not in ("center_values", "critic", "novelty_coef")}
    torch.save(
        {"format": "a3c-checkpoint", "version": 2, "config": config, "model": model.state_dict(), "env_steps": 5},
        tmp_path / "v2.pt",
    )
    loaded = load_checkpoint(tmp_path / "v2.pt")
    assert loaded["version"] == 7 and loaded["config"]["center_values"] == "off"
    rebuilt, saved_config, _ = model_from_checkpoint(loaded)
    assert saved_config.center_values == "off" and rebuilt.value_stats is None
    assert build_model(Config(hidden_sizes=(8,)), env_spec("CartPole-v1")).value_stats is not None  # a new run's


def test_a_format_3_checkpoint_keeps_its_value_head_on_the_lstms_output(tmp_path):
    """Format 3's value head read the LSTM's output (and centred its values): its config says so, and its
    weights load into that network."""
    spec = env_spec("CartPole-v1")
    old = build_model(Config(hidden_sizes=(8,), critic="shared"), spec)
    config = {k: v for k, v in Config(hidden_sizes=(8,)).to_dict().items() if k != "critic"}
    torch.save(
        {"format": "a3c-checkpoint", "version": 3, "config": config, "model": old.state_dict(), "env_steps": 5},
        tmp_path / "v3.pt",
    )
    rebuilt, saved_config, _ = model_from_checkpoint(load_checkpoint(tmp_path / "v3.pt"))
    assert saved_config.critic == "shared" and rebuilt.critic_encoder is None and rebuilt.value_stats is not None
    own = build_model(Config(hidden_sizes=(8,), critic="own"), spec)
    assert own.critic_encoder is not None and own.value_stats is None


def test_a_format_4_checkpoint_without_a_novelty_coefficient_had_no_bonus(tmp_path):
    """Before --novelty-coef auto a config without the field meant no novelty bonus: its weights, which have no
    novelty networks, load into a network without them, where a new run on flat observations has them."""
    spec = env_spec("CartPole-v1")
    old = build_model(Config(hidden_sizes=(8,), novelty_coef=0.0), spec)
    config = {k: v for k, v in Config(hidden_sizes=(8,)).to_dict().items() if k != "novelty_coef"}
    torch.save(
        {"format": "a3c-checkpoint", "version": 4, "config": config, "model": old.state_dict(), "env_steps": 5},
        tmp_path / "v4.pt",
    )
    rebuilt, saved_config, _ = model_from_checkpoint(load_checkpoint(tmp_path / "v4.pt"))
    assert saved_config.novelty_coef == 0.0 and rebuilt.novelty is None
    assert build_model(Config(hidden_sizes=(8,)), spec).novelty is not None


def test_a_format_5_checkpoint_keeps_its_unlimited_std_and_a_new_run_limits_it(tmp_path):
    """Before --std-limit a Box action's std was as wide as it learned: an older run's sampling stays so, where
    a new run's std is at most half the action's range."""
    spec = env_spec("Pendulum-v1")
    old = build_model(Config(env="Pendulum-v1", hidden_sizes=(8,)), spec)
    config = {k: v for k, v in Config(env="Pendulum-v1", hidden_sizes=(8,)).to_dict().items() if k != "std_limit"}
    torch.save(
        {"format": "a3c-checkpoint", "version": 5, "config": config, "model": old.state_dict(), "env_steps": 5},
        tmp_path / "v5.pt",
    )
    assert load_agent(tmp_path / "v5.pt").distribution.log_std_max is None
    assert Config().std_limit == "range"


def test_a_format_6_picture_run_with_the_bonus_keeps_its_one_value_and_step_scale(tmp_path):
    """Before auto learned a picture's bonus by a value of its own, a run with the bonus had one value head and
    divided the bonus by its errors' spread: an older checkpoint loads as it was trained, where a new run's
    auto decides otherwise."""
    env = "a3c/KeyDoor6-v0"
    old = build_model(Config(env=env, novelty_coef=0.1, novelty_value="shared"), env_spec(env))
    newer = ("novelty_value", "novelty_scale")
    config = {k: v for k, v in Config(env=env, novelty_coef=0.1).to_dict().items() if k not in newer}
    torch.save(
        {"format": "a3c-checkpoint", "version": 6, "config": config, "model": old.state_dict(), "env_steps": 5},
        tmp_path / "v6.pt",
    )
    loaded = load_checkpoint(tmp_path / "v6.pt")
    assert (loaded["config"]["novelty_value"], loaded["config"]["novelty_scale"]) == ("shared", "step")
    assert load_agent(tmp_path / "v6.pt").model.value_heads == 1
    decided = for_spaces(Config(env=env, novelty_coef=0.1), env_spec(env))
    assert (decided.novelty_value, decided.novelty_scale) == ("non-episodic", "return")


def test_missing_file_and_directory_are_refused(tmp_path):
    with pytest.raises(CheckpointError):
        load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(CheckpointError):
        load_checkpoint(tmp_path)


def test_a_checkpoint_of_version_0_1_loads_and_acts(tmp_path):
    """Written by a3c 0.1.0 (Pendulum-v1, --hidden-size 16, normalised observations), whose config names
    one `hidden_size`."""
    agent = load_agent(DATA / "pendulum-0.1.0-last.pt")
    assert agent.config.hidden_sizes == (16,) and agent.config.core == "lstm"
    actions, state = agent.act(np.random.default_rng(0).uniform(-1, 1, (4, 3)))
    assert actions.shape == (4, 1) and np.all(np.abs(actions) <= 2.0) and state[0].shape == (4, 16)


def test_the_convolutional_network_keeps_the_parameter_names_of_version_0_1():
    names = list(ActorCritic((4, 84, 84), 6, StockOptions(hidden_sizes=(16,))).state_dict())
    assert names[:6] == [
        "encoder.1.0.weight",
        "encoder.1.0.bias",
        "encoder.1.2.weight",
        "encoder.1.2.bias",
        "encoder.2.weight",
        "encoder.2.bias",
    ]


def test_a_checkpoint_says_where_its_action_mask_came_from_and_refuses_an_env_that_differs(tmp_path):
    """MaskedCue-v0 gives its mask in the info, MaskedCueDict-v0 in its observation: the same spaces else.
    A checkpoint of before masks (no entry) loads for either."""
    config = Config(env="tests.masked_env:MaskedCue-v0")
    model = build_model(config, env_spec(config.env))
    save_checkpoint(tmp_path / "masked.pt", checkpoint_payload(config, model, env_steps=0))
    assert load_checkpoint(tmp_path / "masked.pt")["spaces"]["action_mask"] == "info"
    assert load_agent(tmp_path / "masked.pt").spec.action_mask == "info"
    with pytest.raises(
        CheckpointError,
        match="with its action mask in its info; tests.masked_env:MaskedCueDict-v0 "
        "gives its action mask in its observation",
    ):
        load_agent(tmp_path / "masked.pt", env_id="tests.masked_env:MaskedCueDict-v0")
    older = {key: value for key, value in load_checkpoint(tmp_path / "masked.pt").items() if key != "spaces"}
    torch.save(older, tmp_path / "older.pt")
    assert (
        load_agent(tmp_path / "older.pt", env_id="tests.masked_env:MaskedCueDict-v0").spec.action_mask == "observation"
    )
    cartpole = Config(env="CartPole-v1")
    save_checkpoint(
        tmp_path / "cartpole.pt", checkpoint_payload(cartpole, build_model(cartpole, env_spec("CartPole-v1")), 0)
    )
    assert load_checkpoint(tmp_path / "cartpole.pt")["spaces"] == {  # an env without masks or parts says so
        "observation_space": str(env_spec("CartPole-v1").observation_space),
        "action_space": "Discrete(2)",
        "observation_parts": None,
        "action_mask": None,
    }


def test_a_checkpoint_of_a_dict_or_tuple_observation_refuses_an_env_whose_parts_differ(tmp_path):
    config = Config(env="tests.structured_env:CueAndBit-v0")
    model = build_model(config, env_spec(config.env))
    save_checkpoint(tmp_path / "parts.pt", checkpoint_payload(config, model, env_steps=0))
    assert load_checkpoint(tmp_path / "parts.pt")["spaces"]["observation_parts"] == ["0: one_hot [3]", "1: bits [1]"]
    agent = load_agent(tmp_path / "parts.pt")
    assert agent.act((np.array([2, 0]), np.array([[1], [0]])))[0].shape == (2,)  # a Tuple batch, as parts
    with pytest.raises(
        CheckpointError,
        match=r"read the observation parts \['0: one_hot \[3\]', '1: bits \[1\]'\]; "
        r"CartPole-v1 gives None",
    ):
        load_agent(tmp_path / "parts.pt", env_id="CartPole-v1")  # 4 floats too
