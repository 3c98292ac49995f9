"""The greedy evaluation the `evaluate` command runs."""

from __future__ import annotations

import a3c.parallel.evaluation as evaluator
from a3c.agent import Agent
from a3c.config.settings import Config
from a3c.envs.make import env_spec
from a3c.nets.factory import build_model


def test_many_episodes_are_played_a_batch_of_envs_at_a_time(monkeypatch):
    config = Config(env="CartPole-v1")
    spec = env_spec(config.env)
    agent = Agent(build_model(config, spec), spec, config=config)
    made = []

    def recording_make_vector_env(env_id, num_envs):
        made.append(num_envs)
        return make_vector_env(env_id, num_envs)

    make_vector_env = evaluator.make_vector_env
    monkeypatch.setattr(evaluator, "make_vector_env", recording_make_vector_env)
    episodes = 2 * evaluator.EVALUATION_BATCH + 3

    returns = evaluator.evaluate_agent(agent, episodes, seed=7)

    assert made == [evaluator.EVALUATION_BATCH, evaluator.EVALUATION_BATCH, 3]
    assert len(returns) == episodes and all(r >= 1 for r in returns)
    # the first batch is the same episodes as an evaluation of that many alone
    assert returns[: evaluator.EVALUATION_BATCH] == evaluator.evaluate_agent(agent, evaluator.EVALUATION_BATCH, seed=7)
