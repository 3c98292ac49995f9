"""Train Pendulum-v1 with its preset from Python, then play 10 greedy episodes with the best checkpoint.

The README's Python example; tests/test_api.py runs a short version of it.
"""

import gymnasium as gym
import numpy as np

import a3c

if __name__ == "__main__":  # worker processes may import this file (spawn, on macOS and Windows)
    config = a3c.Config.for_env("Pendulum-v1", num_processes=8)  # the preset; any option as a keyword
    result = a3c.train(config)  # returns when solved, at max_steps, or on Ctrl-C
    print(result.summary["stop_reason"], result.run_dir)

    agent = a3c.load_agent(result.run_dir / "checkpoints" / "best.pt")
    env = gym.make("Pendulum-v1")
    returns = []
    for episode in range(10):
        obs, _ = env.reset(seed=episode)
        state, done, total = None, False, 0.0
        while not done:
            action, state = agent.act(obs[None], state)  # a batch of one observation; state: the LSTM's
            obs, reward, terminated, truncated, _ = env.step(action[0])
            total += reward
            done = terminated or truncated
        returns.append(total)
    print(f"greedy return over 10 episodes: {np.mean(returns):.1f} +- {np.std(returns):.1f}")
