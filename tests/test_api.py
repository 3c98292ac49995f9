"""The Python API at the package top: Config.for_env, train, load_agent, and the README's example."""

from __future__ import annotations

import gc
import re
import signal
import threading

import numpy as np
import pytest
import torch

import a3c
from a3c.config.presets import ATARI, MINATAR, PRESETS
from a3c.envs.make import env_spec
from a3c.learn.distributions import Gaussian

from .conftest import REPO_ROOT


def readme_python_example() -> str:
    return re.search(r"```python\n(.*?)```", (REPO_ROOT / "README.md").read_text(), re.S).group(1)


def test_for_env_applies_the_preset_then_the_overrides():
    config = a3c.Config.for_env("Pendulum-v1", lr=0.01, num_processes=3)
    assert config.env == "Pendulum-v1" and config.lr == 0.01 and config.num_processes == 3
    for name, value in PRESETS["Pendulum-v1"].items():
        if name != "lr":
            assert getattr(config, name) == value, name
    assert a3c.Config(env="Pendulum-v1").gamma != config.gamma  # the plain constructor applies no preset
    assert a3c.Config.for_env("ALE/Pong-v5").clip_rewards  # every Atari game shares one preset


def test_every_preset_names_its_lr_so_the_default_moves_only_envs_without_one():
    for preset in [*PRESETS.values(), ATARI, MINATAR]:
        assert "lr" in preset
    assert a3c.Config.for_env("CartPole-v1").lr == 5e-3 != a3c.Config.for_env("MountainCar-v0").lr


def test_the_example_file_is_the_readmes_python_example():
    assert readme_python_example().strip() in (REPO_ROOT / "examples" / "pendulum.py").read_text()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_readmes_python_example_runs(tmp_path, monkeypatch, capsys):
    """A short version: the same code with a 40k-step budget, into a temporary run dir."""
    for_env = a3c.Config.for_env
    monkeypatch.setattr(
        a3c.Config,
        "for_env",
        lambda env, **options: for_env(
            env,
            **{
                **options,
                "num_processes": 2,
                "max_steps": 40_000,
                "eval_interval": 0.5,
                "run_dir": str(tmp_path / "run"),
                "tensorboard": False,
            },
        ),
    )
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_python_example(), "README.md", "exec"), {"__name__": "__main__"})
    output = capsys.readouterr().out
    assert str(tmp_path / "run") in output
    mean = float(re.search(r"greedy return over 10 episodes: (-?[\d.]+)", output).group(1))
    assert -2000 < mean <= 0  # Pendulum's returns: a real score, not a crash or a NaN


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_train_leaves_the_callers_process_as_it_found_it(tmp_path):
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    handler = signal.getsignal(signal.SIGINT)
    try:
        config = a3c.Config(
            env="tests.cue_env:Cue-v0",
            num_processes=2,
            envs_per_process=4,
            t_max=5,
            max_steps=3_000,
            eval_episodes=0,
            run_dir=str(tmp_path / "run"),
        )
        result = a3c.train(config, verbose=False)
        assert torch.get_num_threads() == 2
        assert signal.getsignal(signal.SIGINT) is handler
        assert gc.isenabled() and gc.get_freeze_count() == 0  # train() froze the heap for its workers only
        assert result.summary["env_steps"] >= 3_000 and (result.run_dir / "summary.json").exists()
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_train_runs_from_a_thread_other_than_the_main_one(tmp_path):
    results = []
    config = a3c.Config(
        env="tests.cue_env:Cue-v0",
        num_processes=1,
        envs_per_process=4,
        t_max=5,
        max_steps=2_000,
        eval_episodes=0,
        run_dir=str(tmp_path / "run"),
    )
    thread = threading.Thread(target=lambda: results.append(a3c.train(config, verbose=False)))
    thread.start()
    thread.join(100)
    assert results and results[0].summary["stop_reason"] == "max_steps"


def save_untrained(tmp_path, config: a3c.Config):
    """A best.pt of a fresh network, as the evaluator writes one."""
    from a3c.learn.checkpoint import checkpoint_payload, save_checkpoint
    from a3c.nets.factory import build_model

    torch.manual_seed(0)
    model = build_model(config, env_spec(config.env))
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0, 1.0)  # large weights: means far outside the bounds before the squash
    path = tmp_path / "best.pt"
    save_checkpoint(path, checkpoint_payload(config, model, env_steps=0))
    return path, model


@pytest.mark.parametrize("options", [{}, {"model": "tests.user_models:mlp"}, {"core": "none"}])
def test_a_box_agent_acts_inside_the_bounds_with_the_squashed_mean(tmp_path, options):
    config = a3c.Config.for_env("Pendulum-v1", **options)
    path, model = save_untrained(tmp_path, config)
    agent = a3c.load_agent(path)
    obs = np.random.default_rng(0).uniform(-1, 1, (5, 3)).astype(np.float32)
    actions, state = agent.act(obs)
    assert actions.shape == (5, 1) and np.all(np.abs(actions) <= 2.0)
    state = agent.policy.begin_rollout(agent.initial_state(5))
    head = agent.policy.act(model.normalize(torch.from_numpy(obs)).numpy(), state, record=False)[0]
    expected = Gaussian(np.array([-2.0], np.float32), np.array([2.0], np.float32)).greedy(head)
    assert np.allclose(actions, expected) and np.abs(head).max() > 1.0  # the squash had work to do
    sampled, _ = agent.act(obs, deterministic=False)
    assert sampled.shape == (5, 1) and np.all(np.abs(sampled) <= 2.0) and not np.allclose(sampled, actions)


def test_a_discrete_agent_gives_env_actions_and_carries_its_recurrent_state(tmp_path):
    config = a3c.Config(env="tests.cue_env:CueOffset-v0")  # a Discrete space starting at 3
    path, _ = save_untrained(tmp_path, config)
    agent = a3c.load_agent(path)
    obs = np.eye(3, dtype=np.float32)
    actions, state = agent.act(obs)
    assert actions.shape == (3,) and set(actions.tolist()) <= {3, 4, 5}
    again, _ = agent.act(obs, state)
    fresh, _ = agent.act(obs, state, episode_start=np.ones(3, dtype=bool))
    assert np.array_equal(fresh, actions)  # episode_start resets each row's LSTM state
    with pytest.raises(ValueError, match=r"batch \[B, 3\]"):
        agent.act(obs[0])  # one observation without its batch axis
    assert state[0].shape == (3, 64) and again.shape == (3,)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_train_resumes_a_run_with_changes_on_top(tmp_path):
    config = a3c.Config(
        env="tests.cue_env:Cue-v0",
        num_processes=1,
        envs_per_process=4,
        t_max=5,
        max_steps=1_000,
        eval_episodes=0,
        run_dir=str(tmp_path / "run"),
    )
    first = a3c.train(config, verbose=False)
    resumed = a3c.train(resume=first.run_dir, max_steps=2_000, verbose=False)
    assert resumed.run_dir == first.run_dir and 2_000 <= resumed.summary["env_steps"] < 2_100
    with pytest.raises(TypeError, match="not both"):
        a3c.train(config, resume=first.run_dir)
    with pytest.raises(TypeError, match="resumed run"):
        a3c.train(config, max_steps=5)


def test_an_agent_takes_only_the_actions_its_mask_allows(tmp_path):
    config = a3c.Config(env="tests.masked_env:MaskedCue-v0", core="none")
    path, _ = save_untrained(tmp_path, config)
    agent = a3c.load_agent(path)
    obs = np.repeat(np.eye(4, dtype=np.float32), 25, axis=0)
    masks = np.zeros((100, 4), dtype=bool)
    masks[np.arange(100), np.random.default_rng(0).integers(4, size=100)] = True  # one legal action a row
    unmasked, _ = agent.act(obs)
    greedy, _ = agent.act(obs, action_mask=masks)
    sampled, _ = agent.act(obs, deterministic=False, action_mask=masks.astype(np.int8))  # 0/1 as the env gives
    assert (greedy == masks.argmax(axis=1)).all() and (sampled == masks.argmax(axis=1)).all()
    assert (unmasked != greedy).any()  # the mask changed what the policy would take
    with pytest.raises(ValueError, match=r"action_mask must be a batch \[100, 4\]"):
        agent.act(obs, action_mask=masks[:, :3])
