"""Rule cases — PyTorch `.bin` drafts (read without executing pickle code)."""

from __future__ import annotations

from pathlib import Path

from tests import factory as f
from tests.cases.base import case, with_target
from tests.factory import Draft


def _bin_draft(tmp: Path) -> tuple[Path, Path | None]:
    return f.eagle1(bias=False).write(tmp / "draft", fmt="bin"), f.llama_target(tmp / "target")


case(
    "eagle1-bin-clean",
    set(),
    {"DF019", "DF020", "DF201"},
    method="eagle",
    verdict="compatible",
    oracle="23",
)(_bin_draft)


def _hostile_bin(tmp: Path) -> tuple[Path, Path | None]:
    from tests.torchbin_factory import hostile_pickle, write_torch_zip

    path = f.eagle1().write(tmp / "draft")
    (path / "model.safetensors").unlink()
    write_torch_zip(
        path / "pytorch_model.bin",
        [],
        data_pkl=hostile_pickle("os", "system", f"touch {tmp / 'pwned'}"),
    )
    return path, f.llama_target(tmp / "target")


case("bin-with-code", {"DF019"}, {"DF020"}, verdict="incompatible")(_hostile_bin)


def _broken_bin(tmp: Path) -> tuple[Path, Path | None]:
    path = f.eagle1().write(tmp / "draft")
    (path / "model.safetensors").unlink()
    (path / "pytorch_model.bin").write_bytes(b"this is not a torch checkpoint")
    return path, f.llama_target(tmp / "target")


case("bin-not-a-checkpoint", {"DF020"}, {"DF019"}, verdict="incompatible")(_broken_bin)


def _no_aux_states() -> Draft:
    draft = f.specforge().drop("fc.weight")
    draft.config["eagle_config"] = {"use_aux_hidden_state": False}
    return draft


case(
    "no-aux-states-without-fc",
    set(),
    {"DF205", "DF301", "DF305"},
    verdict="compatible",
    oracle="22",
)(with_target(_no_aux_states()))
case("no-aux-states-before-0.12", {"DF205"}, engines=("vllm==0.11.2",))(
    with_target(_no_aux_states())
)
case("mask-hidden-skipped", set(), {"DF201", "DF207"}, verdict="compatible", oracle="24")(
    with_target(f.specforge().add("mask_hidden", "BF16", (1, 192)))
)
case("mask-hidden-rejected-0.14", {"DF201"}, engines=("vllm==0.14.0",))(
    with_target(f.specforge().add("mask_hidden", "BF16", (1, 192)))
)
case("dir-name-eagle-dash", {"DF107"}, method="auto", verdict="incompatible", oracle="20d")(
    with_target(f.specforge(), name="eagle-foo")
)
case("qwen3-target", set(), {"DF501", "DF505"}, verdict="compatible", oracle="21c")(
    with_target(f.specforge(), architectures=["Qwen3ForCausalLM"], model_type="qwen3")
)
