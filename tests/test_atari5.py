"""The Atari-5 estimate (benchmarks/harness/atari5.py) against its formula on hand-made scores, and its table
gathered from the records of several seeds and sittings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from harness.atari5 import GAMES, env_id, estimate, human_normalized, published_table, summary_table  # noqa: E402
from harness.records import Record  # noqa: E402
from harness.report import readme_table  # noqa: E402

# the A3C paper's LSTM agent (4 days on 16 cores), DoubleDunk at random play's score: its HNS worked by hand
A3C_PAPER = {"BattleZone": 20_760, "NameThisGame": 12_094, "Phoenix": 74_787, "Qbert": 21_308, "DoubleDunk": -18.55}
A3C_PAPER_HNS = {"BattleZone": 52.83, "NameThisGame": 170.27, "Phoenix": 1_142.16, "Qbert": 159.08, "DoubleDunk": 0.0}
# 10 ^ (0.3820 log10 53.83 + 0.3108 log10 171.27 + 0.1241 log10 1143.16 + 0.0805 log10 160.08 + 0.0679 log10 1) - 1
A3C_PAPER_ESTIMATE = 80.74


def test_each_games_score_is_normalised_between_random_play_and_the_human_reference():
    for game, score in A3C_PAPER.items():
        assert human_normalized(game, score) == pytest.approx(A3C_PAPER_HNS[game], abs=0.01)
    assert human_normalized("Qbert", 163.88) == 0.0 and human_normalized("Qbert", 13_455.0) == pytest.approx(100.0)


def test_the_estimate_follows_the_log_linear_formula_and_counts_worse_than_random_as_zero():
    assert estimate(A3C_PAPER) == pytest.approx(A3C_PAPER_ESTIMATE, abs=0.01)
    at_random = {game: reference.random for game, reference in GAMES.items()}
    assert estimate(at_random) == pytest.approx(0.0)
    assert estimate({**at_random, "DoubleDunk": -24.0}) == pytest.approx(0.0)  # a negative HNS adds nothing
    at_human = {game: reference.human for game, reference in GAMES.items()}
    assert estimate(at_human) == pytest.approx(101 ** sum(g.weight for g in GAMES.values()) - 1)
    with pytest.raises(ValueError, match="missing: Qbert"):
        estimate({game: score for game, score in A3C_PAPER.items() if game != "Qbert"})


def record(game: str, contender: str, seed: int, score: float) -> Record:
    return Record(
        suite="atari-5",
        env=env_id(game),
        contender=contender,
        seed=seed,
        version="a3c 0.28.0",
        date="2026-12-07",
        machine={"cores": 2},
        budget={"minutes": 60},
        final={"return": score},
        command="make bench-atari-suite",
    )


def test_the_table_takes_each_games_median_over_the_seeds_of_all_sittings_and_estimates_from_them():
    runs = [record(game, "a3c", seed, score + 1_000 * seed) for game, score in A3C_PAPER.items() for seed in (0, 2)]
    runs.append(record("Qbert", "a3c", 7, 21_308 + 500))  # a later sitting: the median of 21,308, 21,808, 23,308
    sb3 = "SB3 PPO (RL Zoo settings)"
    runs += [record(game, sb3, 0, score) for game, score in A3C_PAPER.items() if game != "Qbert"]
    header, rule, ours, theirs = summary_table(runs)
    assert "21,808, 162.8% (3)" in ours
    medians = {**{game: score + 1_000 for game, score in A3C_PAPER.items()}, "Qbert": 21_808}
    assert ours.endswith(f"| {estimate(medians):.1f}% |")
    assert theirs.startswith("| SB3 PPO") and theirs.endswith("| - | - |")  # Qbert missing: no estimate


def test_the_results_page_gives_the_atari5_suite_its_estimate_table():
    from harness.report import page

    made = page([record(game, "a3c", 0, score) for game, score in A3C_PAPER.items()], plots=False)
    assert "## Atari-5" in made and f"| {A3C_PAPER_ESTIMATE:.1f}% |" in made


def test_the_published_scores_are_shown_beside_with_an_estimate_only_where_all_five_are_given():
    published = published_table()[2:]
    assert len(published) == 3 and published[0].startswith("| CleanRL PPO")
    assert published[0].endswith("| 73.8% |") and published[1].endswith("| - |")  # the A3C paper lacks DoubleDunk


def test_the_readme_gives_the_suite_one_row_with_the_estimate_once_every_game_has_runs():
    sb3 = "SB3 PPO (RL Zoo settings)"
    four = [record(game, "a3c", 0, score) for game, score in A3C_PAPER.items() if game != "Phoenix"]
    beside = [record("Qbert", sb3, 0, 13_455.0), record("Qbert", "a3c, no noise", 0, 0.0)]
    row = [line for line in readme_table(four + beside).splitlines() if "Atari-5" in line]
    assert row == [
        "| [Atari-5](docs/results/index.md#atari-5) | the five games (BattleZone, DoubleDunk, NameThisGame, Phoenix, "
        "Qbert) | 4 of 5 games, no estimate yet (HNS: BattleZone 53%, DoubleDunk 0%, NameThisGame 170%, Qbert 159%; "
        "1+ runs a game) | SB3 PPO (RL Zoo settings): 1 of 5 games, no estimate yet (HNS: Qbert 100%; 1+ runs a game) |"
    ]
    five = [record(game, "a3c", seed, score) for game, score in A3C_PAPER.items() for seed in (0, 1)]
    row = next(line for line in readme_table(five[:-1]).splitlines() if "Atari-5" in line)  # DoubleDunk's seed 1 not
    assert f"| estimate {A3C_PAPER_ESTIMATE:.1f}% (HNS: BattleZone 53%," in row
    assert "Phoenix 1142%, Qbert 159%; 1+ runs a game) | - |" in row
    assert "; 2+ runs a game) | - |" in next(line for line in readme_table(five).splitlines() if "Atari-5" in line)
    assert not [line for line in readme_table(beside).splitlines() if "Atari-5" in line]  # no a3c runs, no row
