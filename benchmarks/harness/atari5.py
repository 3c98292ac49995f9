"""Atari-5: five games whose scores predict an agent's median human-normalised score over all 57 Atari games
(Aitchison, Sweetser and Hutter, "Atari-5: Distilling the Arcade Learning Environment down to Five Games";
the weights are its authors' fitted log-linear model, within about 10% of the 57-game median).

    HNS = 100 (score - random) / (human - random)
    estimate = 10 ^ (sum over the five of weight * log10(1 + max(HNS, 0))) - 1

Pure functions, and the lines of the results page's Atari-5 table (report.py)."""

from __future__ import annotations

import math
import statistics
from typing import NamedTuple

from harness.records import Record
from harness.tables import digits_for, rows, spread


class Game(NamedTuple):
    weight: float  # in the estimate's log-linear model
    random: float  # the score of uniformly random play
    human: float  # the human reference score


GAMES = {
    "BattleZone": Game(0.3820, 2_360.0, 37_187.5),
    "DoubleDunk": Game(0.0679, -18.55, -16.4),
    "NameThisGame": Game(0.3108, 2_292.35, 8_049.0),
    "Phoenix": Game(0.1241, 761.4, 7_242.6),
    "Qbert": Game(0.0805, 163.88, 13_455.0),
}
# Published scores at other budgets and rules, beside the measured ones (their differences in the name)
PUBLISHED = {
    "CleanRL PPO, envpool: 10M agent steps (40M frames), no sticky actions, 3 seeds": {
        "BattleZone": 24_938.0,
        "DoubleDunk": -8.6,
        "NameThisGame": 5_443.0,
        "Phoenix": 14_009.0,
        "Qbert": 16_431.0,
    },
    "A3C paper, LSTM: 4 days on 16 cores, no sticky actions (DoubleDunk not given)": {
        "BattleZone": 20_760.0,
        "NameThisGame": 12_094.0,
        "Phoenix": 74_787.0,
        "Qbert": 21_308.0,
    },
    "RL Zoo PPO: 10M agent steps, no sticky actions (Qbert only)": {"Qbert": 15_627.0},
}


def env_id(game: str) -> str:
    return f"ALE/{game}-v5"


def game_of(env: str) -> str:
    return env.removeprefix("ALE/").removesuffix("-v5")


def human_normalized(game: str, score: float) -> float:
    """The score's percentage of the way from random play to the human reference."""
    reference = GAMES[game]
    return 100.0 * (score - reference.random) / (reference.human - reference.random)


def estimate(scores: dict[str, float]) -> float:
    """The predicted median HNS over the 57 games, from a score for each of the five (negative HNS count as 0)."""
    missing = sorted(set(GAMES) - set(scores))
    if missing:
        raise ValueError(f"the Atari-5 estimate needs every game's score; missing: {', '.join(missing)}")
    normalized = {game: max(human_normalized(game, scores[game]), 0.0) for game in GAMES}
    return 10 ** sum(GAMES[game].weight * math.log10(1 + normalized[game]) for game in GAMES) - 1


def opening() -> str:
    """What the results page says before the tables: how a score becomes an HNS and the estimate, with the weights."""
    weights = ", ".join(f"{game} {reference.weight:.4f}" for game, reference in GAMES.items())
    return (
        "Each game's score is its runs' median final greedy score; HNS = 100 (score - random) / (human - random), "
        "and the Atari-5 estimate of the median HNS over all 57 games = 10^(sum of w log10(1 + max(HNS, 0))) - 1 "
        f"with the weights {weights} (`benchmarks/harness/atari5.py`, where the reference scores are). "
        "DoubleDunk's human and random scores are 2.15 points apart, so a game lost by a few points is an HNS "
        "of hundreds of percent, as the published PPO's is; its weight is the smallest. A policy that never "
        "presses a button scores -2 there (ALE/DoubleDunk-v5, one whole game of 27,000 steps: the opponent "
        "scores once, then the game stands still), an HNS of 770%; random play's game here: -18."
    )


def score_rows(scores_by_name: dict[str, dict[str, tuple[float, int | None]]]) -> list[str]:
    """A table row a name: each game's score, its HNS and (where counted) its runs, then the estimate where every
    game has a score."""
    lines = []
    for name, by_game in scores_by_name.items():
        cells = []
        for game in GAMES:
            if game not in by_game:
                cells.append("-")
                continue
            score, runs = by_game[game]
            shown = f"{spread([score], digits_for([score]))}, {human_normalized(game, score):.1f}%"
            cells.append(shown if runs is None else f"{shown} ({runs})")
        complete = len(by_game) == len(GAMES)
        whole = f"{estimate({game: score for game, (score, _) in by_game.items()}):.1f}%" if complete else "-"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {whole} |")
    return lines


def published_table() -> list[str]:
    """The published scores, as the measured table shows its contenders."""
    return [
        "| published | " + " | ".join(f"{game}: score, HNS" for game in GAMES) + " | Atari-5 estimate |",
        "| --- | " + " | ".join("---" for _ in GAMES) + " | --- |",
        *score_rows(
            {name: {game: (score, None) for game, score in scores.items()} for name, scores in PUBLISHED.items()}
        ),
    ]


def medians(records: list[Record]) -> dict[str, dict[str, tuple[float, int | None]]]:
    """Per contender (its newest version), a3c first: each game's median final score over seeds and their count,
    in the order of GAMES."""
    found: dict[str, dict[str, tuple[float, int | None]]] = {}
    for row in rows(records):
        scores = [run.final["return"] for run in row.runs if run.final.get("return") is not None]
        if scores and game_of(row.env) in GAMES:
            found.setdefault(row.contender, {}).setdefault(game_of(row.env), (statistics.median(scores), len(scores)))
    ordered = sorted(found.items(), key=lambda item: (item[0] != "a3c", item[0]))
    return {name: {game: by_game[game] for game in GAMES if game in by_game} for name, by_game in ordered}


def summary_table(records: list[Record]) -> list[str]:
    """Per contender: each game's median final score over seeds, its HNS and the runs, then the estimate from
    those medians where every game has runs."""
    lines = [
        "| contender | " + " | ".join(f"{game}: score, HNS (runs)" for game in GAMES) + " | Atari-5 estimate |",
        "| --- | " + " | ".join("---" for _ in GAMES) + " | --- |",
    ]
    return lines + score_rows(medians(records))


def overview(by_game: dict[str, tuple[float, int | None]]) -> str:
    """A contender's suite in a line (the README's cell): the estimate where every game has runs, and each game's
    HNS with the fewest runs a game."""
    each = ", ".join(f"{game} {human_normalized(game, score):.0f}%" for game, (score, _) in by_game.items())
    fewest = min(runs or 0 for _, runs in by_game.values())
    if len(by_game) < len(GAMES):
        return f"{len(by_game)} of {len(GAMES)} games, no estimate yet (HNS: {each}; {fewest}+ runs a game)"
    whole = estimate({game: score for game, (score, _) in by_game.items()})
    return f"estimate {whole:.1f}% (HNS: {each}; {fewest}+ runs a game)"
