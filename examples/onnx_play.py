"""Play an env with an exported policy and ONNX Runtime alone: no torch, no a3c.

    a3c export --checkpoint runs/<run>/checkpoints/best.pt --out policy.onnx
    python examples/onnx_play.py policy.onnx --episodes 10

The env is the one the file's metadata names (--env to override). A recurrent policy's state goes
in as h and c (a user's module: state_0, state_1, ...), comes back as h_out and c_out (state_out_0,
...), and starts at zeros in every episode. A policy trained with action masks takes the env's mask
as action_mask, from the info or from a Dict observation, as the metadata's action_mask says. A Dict
or Tuple observation goes in as one flat vector, as the trainer carried it.
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
import onnxruntime


def next_state_name(name: str) -> str:
    """The output that carries input `name`'s next value: h -> h_out, state_0 -> state_out_0."""
    return name.replace("state_", "state_out_") if name.startswith("state_") else f"{name}_out"


def flat_observation(space: gym.Space, obs):
    """A Dict or Tuple observation as the graph takes it: its parts side by side, a Discrete or
    MultiDiscrete part one-hot. gymnasium's flatten orders and encodes the parts as the trainer does."""
    if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)):
        return gym.spaces.flatten(space, obs)
    return obs


def graph_inputs(space: gym.Space, obs, info: dict, mask_source: str) -> tuple[object, dict]:
    """The graph's obs and action_mask inputs from the env's observation (of `space`) and info. The mask:
    none ("none"), the info's ("info"), or a Dict observation's "action_mask" key ("observation"), whose
    other part (or Dict of other parts) is then the observation."""
    mask = info["action_mask"] if mask_source == "info" else None
    if mask_source == "observation":
        mask = obs["action_mask"]
        rest = [key for key in space.spaces if key != "action_mask"]
        space, obs = gym.spaces.Dict({key: space[key] for key in rest}), {key: obs[key] for key in rest}
        if len(rest) == 1:
            space, obs = space[rest[0]], obs[rest[0]]
    masks = {} if mask is None else {"action_mask": np.asarray(mask, dtype=bool)[None]}
    return flat_observation(space, obs), masks


def play(session: onnxruntime.InferenceSession, env: gym.Env, episodes: int, seed: int) -> list[float]:
    """The greedy return of each episode."""
    inputs = {node.name: node for node in session.get_inputs()}
    obs_type = np.uint8 if inputs.pop("obs").type == "tensor(uint8)" else np.float32
    mask_source = session.get_modelmeta().custom_metadata_map.get("action_mask", "none")
    inputs.pop("action_mask", None)
    returns = []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        state = {name: np.zeros((1, *node.shape[1:]), dtype=np.float32) for name, node in inputs.items()}
        total, done = 0.0, False
        while not done:
            obs, mask = graph_inputs(env.observation_space, obs, info, mask_source)
            outputs = dict(
                zip(
                    [node.name for node in session.get_outputs()],
                    session.run(None, {"obs": np.asarray(obs, dtype=obs_type)[None], **mask, **state}),
                )
            )
            state = {name: outputs[next_state_name(name)] for name in state}
            obs, reward, terminated, truncated, info = env.step(outputs["action"][0])
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", help="an .onnx file written by a3c export")
    parser.add_argument("--env", default=None, help="gymnasium id (default: the one in the file's metadata)")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    session = onnxruntime.InferenceSession(args.policy, providers=["CPUExecutionProvider"])
    env_id = args.env or session.get_modelmeta().custom_metadata_map["env"]
    returns = play(session, gym.make(env_id), args.episodes, args.seed)
    print(f"{env_id}: mean return {np.mean(returns):.2f} +- {np.std(returns):.2f} over {len(returns)} episodes")


if __name__ == "__main__":
    main()
