"""The env families told by their ids: Atari's ALE/ games and MinAtar's, which the trainer makes in its own way, and
gymnasium's MuJoCo tasks, which share a preset.

A leaf without imports: the presets and the env makers both ask it, and neither needs the other.
"""

ATARI_FRAME_STACK = 4  # Atari's preprocessing hands the network this many frames, the newest last


def is_atari(env_id: str) -> bool:
    return env_id.startswith("ALE/")


def is_minatar(env_id: str) -> bool:
    return env_id.startswith("MinAtar/")


# gymnasium's MuJoCo tasks (the entry points under gymnasium.envs.mujoco), every version of each
MUJOCO_TASKS = (
    "Ant",
    "HalfCheetah",
    "Hopper",
    "Humanoid",
    "HumanoidStandup",
    "InvertedDoublePendulum",
    "InvertedPendulum",
    "Pusher",
    "Reacher",
    "Swimmer",
    "Walker2d",
)


def is_mujoco(env_id: str) -> bool:
    task, _, version = env_id.split(":")[-1].rpartition("-v")
    return task in MUJOCO_TASKS and version.isdigit()


def atari_game(env_id: str) -> str:
    """The game of an ALE/ id: "ALE/Pong-v5" -> "Pong"."""
    return env_id.split("/", 1)[1].rsplit("-v", 1)[0]
