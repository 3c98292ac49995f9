"""Config validation: bad values raise ConfigError naming the CLI option."""

from __future__ import annotations

import pytest

from a3c.config.settings import AUTO_FOR_OBSERVATIONS, Config, ConfigError, config_for_resume, for_spaces
from a3c.envs.spec import EnvSpec


@pytest.mark.parametrize(
    "field, value, option",
    [
        ("t_max", 0, "--t-max"),
        ("gamma", 1.5, "--gamma"),
        ("gamma", 0.0, "--gamma"),
        ("num_processes", 0, "--num-processes"),
        ("lr", 0.0, "--lr"),
        ("gae_lambda", 1.1, "--gae-lambda"),
        ("optimizer", "sgd", "--optimizer"),
        ("eval_episodes", -1, "--eval-episodes"),
        ("target_return", "soon", "--target-return"),
        ("max_grad_norm", 0.0, "--max-grad-norm"),
        ("backend", "mpi", "--backend"),
        ("ray_address", "auto", "--ray-address"),
        ("nodes", -1, "--nodes"),
        ("sync_interval", 0, "--sync-interval"),
        ("global_shards", -1, "--global-shards"),
        ("placement_timeout", 0.0, "--placement-timeout"),
    ],
)
def test_bad_values_name_the_option(field, value, option):
    with pytest.raises(ConfigError, match=option):
        Config(**{field: value})


@pytest.mark.parametrize("env, frames", [("CartPole-v1", 1), ("MinAtar/Breakout-v1", 1), ("ALE/Pong-v5", 5)])
def test_frames_are_for_atari_and_at_most_its_stack(env, frames):
    with pytest.raises(ConfigError, match="--frames"):
        Config(env=env, frames=frames)


def test_good_edge_values_are_accepted():
    Config(gamma=1.0, gae_lambda=0.0, eval_episodes=0, target_return=None, entropy_coef=0.0)
    Config(target_return=200.0, optimizer="rmsprop", start_method="fork")
    Config(backend="ray", ray_address="auto", normalize_obs=True, nodes=64, sync_interval=1)


def test_dict_round_trip_ignores_unknown_keys():
    config = Config(env="Acrobot-v1", seed=5, t_max=7)
    values = config.to_dict() | {"from_a_newer_version": 1}
    assert Config.from_dict(values) == config


def test_presets_print_as_command_line_options():
    from a3c.config.presets import format_presets, preset_for

    text = format_presets()
    assert "--clip-rewards " in text + " " and "True" not in text
    assert preset_for("ALE/Pong-v5")["clip_rewards"] is True
    assert preset_for("Pendulum-v1")["gamma"] == 0.9 and preset_for("NoPreset-v0") == {}


def test_atari_games_with_a_target_add_it_to_the_atari_preset():
    from a3c.config.presets import ATARI, format_presets, preset_for
    from a3c.envs.families import atari_game

    assert atari_game("ALE/Pong-v5") == "Pong" and atari_game("ALE/Pong-ram-v5") == "Pong-ram"
    assert preset_for("ALE/Pong-v5") == {**ATARI, "target_return": 18.0}
    assert preset_for("ALE/Breakout-v5") == ATARI and "target_return" not in ATARI
    assert Config.for_env("ALE/Pong-v5").target_return == 18.0
    assert Config.for_env("ALE/Pong-v5", target_return=None).target_return is None  # the user's wins
    assert "ALE/Pong-v5" in format_presets() and "--target-return 18.0" in format_presets()


def test_every_gymnasium_mujoco_task_and_no_other_env_takes_the_mujoco_preset():
    import gymnasium

    from a3c.config.presets import MUJOCO, preset_for

    registered = [
        env_id
        for env_id, spec in gymnasium.registry.items()
        if isinstance(spec.entry_point, str) and spec.entry_point.startswith("gymnasium.envs.mujoco")
    ]
    assert "HalfCheetah-v5" in registered and "Humanoid-v4" in registered
    assert all(preset_for(env_id) is MUJOCO for env_id in registered)
    others = ("Pendulum-v1", "LunarLanderContinuous-v3", "Hopper", "MyHopper-v5", "Hopper-vX", "MinAtar/Breakout-v1")
    assert not any(preset_for(env_id) is MUJOCO for env_id in others)
    assert Config.for_env("Hopper-v5").max_steps == 1_000_000
    assert Config.for_env("Hopper-v5", gae_lambda=1.0).gae_lambda == 1.0  # the user's wins


def test_a_config_saved_before_centred_frames_loads_without_them():
    saved = Config.for_env("ALE/Pong-v5").to_dict()
    assert saved.pop("center_frames") is True  # the Atari preset's
    assert Config.from_dict(saved).center_frames is False  # as that checkpoint's network was trained


def spec_of(obs_shape: tuple, obs_parts=None) -> EnvSpec:
    return EnvSpec(obs_shape=obs_shape, num_actions=2, action_start=0, reward_threshold=None, obs_parts=obs_parts)


FLAT, FRAMES, PARTS = spec_of((4,)), spec_of((4, 10, 10)), spec_of((6,), obs_parts=("parts",))


def test_a_resumed_run_may_change_the_novelty_coefficient_but_not_turn_it_on_or_off():
    saved = Config(env="CartPole-v1", novelty_coef=0.01)
    assert config_for_resume(saved, {"novelty_coef": 0.1}, FLAT).novelty_coef == 0.1
    with pytest.raises(ConfigError, match="--novelty-coef 0.0 contradicts the checkpoint"):
        config_for_resume(saved, {"novelty_coef": 0.0}, FLAT)
    with pytest.raises(ConfigError, match="--novelty-coef"):
        config_for_resume(Config(env="CartPole-v1", novelty_coef=0.0), {"novelty_coef": 0.01}, FLAT)


def test_an_auto_given_again_on_resume_is_decided_for_the_envs_spaces_before_it_is_compared():
    parts_run = Config(env="tests.cue_env:DictCue-v0", novelty_coef=0.0, normalize_obs=False)
    resumed = config_for_resume(parts_run, {"novelty_coef": "auto", "normalize_obs": "auto"}, PARTS)
    assert resumed.novelty_coef == 0.0 and resumed.normalize_obs is False
    with pytest.raises(ConfigError, match="--novelty-coef"):
        config_for_resume(parts_run.replace(novelty_coef=0.1), {"novelty_coef": "auto"}, PARTS)  # auto: none
    frames_run = Config(env="MinAtar/Breakout-v1", novelty_coef=0.0, normalize_obs=False)  # the preset's
    with pytest.raises(ConfigError, match="--novelty-coef 0.03 contradicts"):
        config_for_resume(frames_run, {"novelty_coef": "auto"}, FRAMES)  # auto is the bonus on pictures
    flat_run = Config(env="CartPole-v1", novelty_coef=0.0, normalize_obs=False)  # a preset's settings
    with pytest.raises(ConfigError, match="--novelty-coef"):
        config_for_resume(flat_run, {"novelty_coef": "auto"}, FLAT)  # auto is the bonus on flat observations
    assert config_for_resume(Config(novelty_coef=0.3), {"novelty_coef": "auto"}, FLAT).novelty_coef == 0.1
    picture_run = for_spaces(Config(env="a3c/KeyDoor7-v0"), FRAMES)  # the bonus learned by a value of its own
    with pytest.raises(ConfigError, match="--novelty-value 'shared' contradicts"):
        config_for_resume(picture_run, {"novelty_coef": "auto", "novelty_value": "shared"}, FRAMES)
    resumed = config_for_resume(picture_run, {"novelty_coef": 0.1, "novelty_value": "auto"}, FRAMES)
    assert (resumed.novelty_coef, resumed.novelty_value) == (0.1, "non-episodic")


def test_a_resumed_run_refuses_any_change_of_the_network_shape():
    saved = Config(env="CartPole-v1")
    assert config_for_resume(saved, {"hidden_sizes": saved.hidden_sizes, "lr": 1e-3}, FLAT).lr == 1e-3
    with pytest.raises(ConfigError, match="--hidden-sizes"):
        config_for_resume(saved, {"hidden_sizes": (32,)}, FLAT)


def test_an_env_without_a_preset_explores_on_flat_observations_and_pictures():
    """auto, for each kind of observation: on a flat vector the bonus divided by its errors' spread and
    normalised observations; on a picture (frames, an image, a grey map) a smaller bonus divided by its return's
    spread, learned by a non-episodic value of its own, the picture as it is (the bonus normalises its own view);
    on a Dict or Tuple's parts, neither."""
    explores = for_spaces(Config.for_env("MountainCar-v0"), spec_of((2,)))
    assert (explores.novelty_coef, explores.novelty_scale, explores.novelty_value) == (0.1, "step", "shared")
    assert explores.normalize_obs is True
    for spec in (spec_of((4, 84, 84)), spec_of((3, 9, 9)), spec_of((10, 10))):
        picture = for_spaces(Config.for_env("a3c/KeyDoor7-v0"), spec)
        assert (picture.novelty_coef, picture.novelty_scale, picture.novelty_value) == (0.03, "return", "non-episodic")
        assert picture.normalize_obs is False
    parts = for_spaces(Config.for_env("a3c/KeyDoor7-v0"), spec_of((6,), obs_parts=("parts",)))
    assert (parts.novelty_coef, parts.novelty_value, parts.normalize_obs) == (0.0, "shared", False)
    assert AUTO_FOR_OBSERVATIONS["picture"]["novelty_coef"] == 0.03


def test_auto_learns_the_bonus_by_a_value_of_its_own_only_where_the_run_has_a_bonus_and_two_values():
    picture = spec_of((3, 9, 9))
    for given in ({"novelty_coef": 0.0}, {"replay_ratio": 1.0}, {"model": "tests.user_models:mlp"}):
        decided = for_spaces(Config(env="a3c/KeyDoor7-v0", **given), picture)
        assert decided.novelty_value == "shared", given
    assert for_spaces(Config(novelty_value="episodic"), picture).novelty_value == "episodic"  # given wins
    assert for_spaces(Config(novelty_coef=0.2), spec_of((4,))).novelty_value == "shared"  # flat: one value


def test_given_settings_win_over_auto_and_presets_keep_what_was_measured_for_them():
    given = for_spaces(Config(novelty_coef=0.01, normalize_obs=False), spec_of((2,)))
    assert given.novelty_coef == 0.01 and given.normalize_obs is False
    presets = [("CartPole-v1", False), ("Acrobot-v1", False), ("Pendulum-v1", True), ("LunarLander-v3", False)]
    for env, normalized in presets:
        preset = for_spaces(Config.for_env(env), spec_of((4,)))
        assert preset.novelty_coef == 0.0 and preset.normalize_obs is normalized
    for env in ("ALE/Pong-v5", "MinAtar/Breakout-v1"):  # pictures, measured without the bonus: the presets name none
        preset = for_spaces(Config.for_env(env), spec_of((4, 10, 10)))
        assert preset.novelty_coef == 0.0 and preset.novelty_value == "shared"


@pytest.mark.parametrize("values", [{"novelty_coef": "more"}, {"novelty_coef": -0.1}, {"normalize_obs": "yes"}])
def test_an_auto_setting_takes_auto_or_its_type_only(values):
    with pytest.raises(ConfigError, match="--novelty-coef|--normalize-obs"):
        Config(**values)
