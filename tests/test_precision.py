"""--precision: the CPU check, the convolutions under bfloat16 autocast, and what stays the same with it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from a3c.config.settings import Config
from a3c.errors import ConfigError
from a3c.nets import precision
from a3c.nets.actor_critic import ActorCritic, StockOptions
from a3c.nets.precision import Convolutions, cpu_flags, cpu_has_bfloat16, resolved_precision, use_float32

CPUINFO = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx2 avx512f {extra}\n\nprocessor\t: 1\n"


@pytest.mark.parametrize("extra, native", [("avx512_bf16 avx512_vnni", True), ("amx_bf16", True),
                                           ("avx512_vnni", False), ("", False)])  # fmt: skip
def test_the_cpu_check_reads_the_bfloat16_flags(tmp_path, extra, native):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO.format(extra=extra))
    assert cpu_has_bfloat16(str(cpuinfo)) is (native and torch.backends.mkldnn.is_available())
    assert ("avx512_bf16" in cpu_flags(cpuinfo.read_text())) is ("avx512_bf16" in extra)


def test_a_machine_without_cpuinfo_has_no_native_bfloat16(tmp_path):
    assert cpu_has_bfloat16(str(tmp_path / "absent")) is False


@pytest.mark.parametrize("native", [True, False])
def test_auto_is_bfloat16_only_where_the_cpu_has_it(monkeypatch, native):
    monkeypatch.setattr(precision, "cpu_has_bfloat16", lambda: native)
    assert resolved_precision("auto") == ("bfloat16" if native else "float32")
    assert resolved_precision("float32") == "float32" and resolved_precision("bfloat16") == "bfloat16"
    assert f"in {'bfloat16' if native else 'float32'}" in precision.describe_precision("auto")


def frames_network(bfloat16: bool) -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic((4, 84, 84), 6, StockOptions(hidden_sizes=(64,), noisy=False, bfloat16=bfloat16))


def test_bfloat16_keeps_the_checkpoint_keys_and_runs_the_convolutions_under_autocast():
    plain, autocast = frames_network(False), frames_network(True)
    assert list(plain.state_dict()) == list(autocast.state_dict())  # the same checkpoints load either way
    autocast.load_state_dict(plain.state_dict())
    seen = []
    conv = autocast.encoder[1][0]
    conv.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
    frames = torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)
    head, value, _ = autocast(frames, autocast.initial_state(2))
    assert seen == [torch.bfloat16] and head.dtype == value.dtype == torch.float32
    use_float32(autocast)  # as the ONNX export does
    autocast(frames, autocast.initial_state(2))
    assert seen[-1] == torch.float32 and not any(m.bfloat16 for m in autocast.modules() if isinstance(m, Convolutions))


def test_bfloat16_acts_as_float32_does_within_its_precision():
    """Greedy actions of the same weights on 64 random frames: the logits within 3% of their spread, the
    argmax the same wherever float32's top two logits are further apart than that."""
    plain, autocast = frames_network(False), frames_network(True)
    autocast.load_state_dict(plain.state_dict())
    frames = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (64, 4, 84, 84), dtype=np.uint8))
    with torch.no_grad():
        exact = plain(frames, plain.initial_state(64))[0]
        approximate = autocast(frames, autocast.initial_state(64))[0]
    spread = (exact.max(dim=1).values - exact.min(dim=1).values).mean()
    assert (approximate - exact).abs().max() < 0.03 * spread
    top_two = exact.topk(2, dim=1).values
    clear = (top_two[:, 0] - top_two[:, 1]) > 0.03 * spread
    assert clear.sum() > 32  # most frames have a clear greedy action
    assert torch.equal(approximate.argmax(1)[clear], exact.argmax(1)[clear])


def test_an_unknown_precision_is_refused():
    with pytest.raises(ConfigError, match="precision"):
        Config(precision="float16")
