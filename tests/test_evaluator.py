"""The greedy evaluation the `evaluate` command runs."""

from __future__ import annotations

import numpy as np

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


class RecordingAgent:
    """Acts 0 everywhere and records the `episode_start` of every call."""

    def __init__(self):
        self.starts = []

    def initial_state(self, batch_size):
        return ()

    def act(self, obs, state, episode_start=None, action_mask=None):
        self.starts.append(None if episode_start is None else np.array(episode_start))
        return np.zeros(len(obs), dtype=np.int64), state


class ScriptedGames:
    """A vector env of two games: `lives[t]` and `rewards[t]` ([2] each) after step t (index 0: at the
    reset); game k ends at step `ends[k]` (None: never). Raises past step 1,000, where a test would hang."""

    num_envs = 2

    def __init__(self, ends, lives=None, rewards=None):
        self.ends, self.lives, self.rewards = ends, lives, rewards

    def info(self):
        return {} if self.lives is None else {"lives": np.array(self.lives[self.t])}

    def reset(self, seed):
        self.t = 0
        return np.zeros((2, 1)), self.info()

    def step(self, actions):
        self.t += 1
        assert self.t <= 1_000, "a game that never ends was played on"
        rewards = np.zeros(2) if self.rewards is None else np.array(self.rewards[self.t], dtype=float)
        ended = np.array([end == self.t for end in self.ends])
        return np.zeros((2, 1)), rewards, ended, np.zeros(2, dtype=bool), self.info()


def test_a_lost_life_restarts_that_games_recurrent_state_as_training_does():
    # game 0 loses a life at steps 3 and 5; game 1 keeps its three
    lives = [[3, 3], [3, 3], [3, 3], [2, 3], [2, 3], [1, 3], [1, 3], [1, 3]]
    agent = RecordingAgent()

    evaluator.play_greedy_episodes(agent, ScriptedGames([7, 7], lives=lives), seed=0)

    restarted = {call: start.tolist() for call, start in enumerate(agent.starts) if start is not None and start.any()}
    assert restarted == {3: [True, False], 5: [True, False]}  # the acts right after steps 3 and 5


def test_an_episode_idle_for_idle_steps_ends_with_what_it_earned_and_a_scoring_one_plays_on(monkeypatch):
    import a3c.envs.progress as progress

    monkeypatch.setattr(progress, "IDLE_STEPS", 50)
    # game 0 scores at step 10, then never again and never ends; game 1 scores every 40 steps until 200
    rewards = [[t == 10, t % 40 == 0] for t in range(201)]
    games = ScriptedGames([None, 200], rewards=rewards)

    returns = evaluator.play_greedy_episodes(RecordingAgent(), games, seed=0)

    assert returns == [1.0, 5.0] and games.t == 200  # game 0 ended at step 60, game 1 played on


def test_a_lost_life_is_progress_and_a_new_game_is_not_a_lost_life():
    from a3c.envs.progress import IDLE_STEPS, EpisodeProgress

    progress = EpisodeProgress({"lives": np.array([2, 2])}, 2)
    for _ in range(IDLE_STEPS - 1):
        stalled = progress.step(np.zeros(2), {"lives": np.array([2, 2])})
    assert not stalled.any()
    stalled = progress.step(np.zeros(2), {"lives": np.array([1, 2])})  # game 0 loses a life: it moved
    assert stalled.tolist() == [False, True] and progress.new_life.tolist() == [True, False]
    progress.step(np.zeros(2), {"lives": np.array([5, 5])})  # both reset to new games: no life lost
    assert progress.new_life.tolist() == [False, False]
