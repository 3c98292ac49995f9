"""bfloat16 for the frames encoder's convolutions, where the CPU computes it natively.

Convolutions are most of a pixel network's cost on a CPU. Under autocast they run in bfloat16 (oneDNN's
kernels, with AVX-512 BF16 or AMX instructions) while the weights, their gradients, the optimizer and
everything after the convolutions stay float32; the convolutions' output is float32 again. Where the
CPU lacks the instructions, bfloat16 is emulated and slower: --precision auto picks float32 there
(docs/design/choices.md, "bfloat16 convolutions").
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch
from torch import nn

PRECISIONS = ("auto", "float32", "bfloat16")
BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo's names of the native bfloat16 instructions


def cpu_flags(cpuinfo: str) -> set[str]:
    """The feature flags of a /proc/cpuinfo text (its first processor's)."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


@functools.cache  # the CPU does not change: each network built with auto, and the start-up line, read it once
def cpu_has_bfloat16(cpuinfo_path: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU has native bfloat16 instructions (read on Linux; elsewhere assumed not)."""
    try:
        flags = cpu_flags(Path(cpuinfo_path).read_text())
    except OSError:
        return False
    return any(flag in flags for flag in BFLOAT16_FLAGS) and torch.backends.mkldnn.is_available()


def resolved_precision(setting: str) -> str:
    """float32 or bfloat16: --precision, where auto is bfloat16 if the CPU has it natively."""
    if setting == "auto":
        return "bfloat16" if cpu_has_bfloat16() else "float32"
    return setting


def describe_precision(setting: str) -> str:
    """The run's line about it, as the trainer prints it at start-up."""
    chosen = resolved_precision(setting)
    native = "this CPU has native bfloat16" if cpu_has_bfloat16() else "this CPU has no native bfloat16"
    how = "autocast" if chosen == "bfloat16" else "no autocast"
    return f"precision: the frames encoder's convolutions in {chosen} ({how}; --precision {setting}; {native})"


class Convolutions(nn.Sequential):
    """A frames encoder's convolutions, run under bfloat16 autocast when `bfloat16` is set; the output is
    float32 either way. A Sequential, so a checkpoint's keys are those of the plain convolutions."""

    def __init__(self, *layers: nn.Module, bfloat16: bool = False):
        super().__init__(*layers)
        self.bfloat16 = bfloat16

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        if not self.bfloat16:
            return super().forward(frames)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return super().forward(frames).float()


def use_float32(model: nn.Module) -> None:
    """Every frames encoder of `model` in float32 from now on (an ONNX export, say)."""
    for module in model.modules():
        if isinstance(module, Convolutions):
            module.bfloat16 = False
