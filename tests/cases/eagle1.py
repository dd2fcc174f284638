"""Rule cases — EAGLE-1 drafts."""

from __future__ import annotations

from pathlib import Path

from tests import factory as f
from tests.cases.base import _edit, case, with_target

case("eagle1-clean", set(), {"DF201", "DF207"}, method="eagle", verdict="compatible", oracle="19")(
    with_target(f.eagle1(bias=False).drop("embed_tokens.weight"))
)
case("eagle1-fc-bias", {"DF207"}, verdict="drafts-garbage", oracle="19b")(
    with_target(f.eagle1(bias=True))
)
case("eagle1-lm-head", {"DF201"}, verdict="incompatible", oracle="19c")(
    with_target(f.eagle1().add("lm_head.weight", "BF16", (f.VOCAB, f.H)))
)
case("eagle1-layer0-input-norm", {"DF201"}, verdict="incompatible", oracle="19d")(
    with_target(f.eagle1().add("layers.0.input_layernorm.weight", "BF16", (f.H,)))
)
case("eagle1-final-norm", {"DF201"}, verdict="incompatible", oracle="19e")(
    with_target(f.eagle1().add("norm.weight", "BF16", (f.H,)))
)
case("eagle1-wider-than-target", {"DF502"}, verdict="incompatible")(
    with_target(f.eagle1(hidden=128))
)


def _unreadable(path: Path) -> None:
    # A file the OS refuses to read even for root: /proc/self/mem fails with EIO at offset 0.
    (path / "model.safetensors").unlink()
    (path / "model.safetensors").symlink_to("/proc/self/mem")


if Path("/proc/self/mem").exists():
    case("unreadable-weights", {"DF001"}, {"DF002"}, verdict="incompatible")(
        _edit(f.specforge, _unreadable)
    )
