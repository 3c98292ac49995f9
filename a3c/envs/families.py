"""The env families the trainer makes in its own way, told by their ids: Atari's ALE/ games and MinAtar's.

A leaf without imports: the presets and the env makers both ask it, and neither needs the other.
"""

ATARI_FRAME_STACK = 4  # Atari's preprocessing hands the network this many frames, the newest last


def is_atari(env_id: str) -> bool:
    return env_id.startswith("ALE/")


def is_minatar(env_id: str) -> bool:
    return env_id.startswith("MinAtar/")


def atari_game(env_id: str) -> str:
    """The game of an ALE/ id: "ALE/Pong-v5" -> "Pong"."""
    return env_id.split("/", 1)[1].rsplit("-v", 1)[0]
