"""Rule cases as data: each builds a tiny real checkpoint and names the codes that must fire
and the codes that must stay quiet. `test_rules.py` runs them all and checks that every
registered rule has at least one case that fires and one that stays quiet.

Cases marked `oracle=` reproduce an experiment run against vLLM 0.34.0's own loader (see
the README's "How the vLLM data was checked"); the expected verdict is what vLLM did.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from draftfit.checker import check_path
from draftfit.report import Report
from draftfit.rules import RULES
from draftfit.serve_input import settings_from
from tests import factory as f
from tests.factory import Draft

Builder = Callable[[Path], tuple[Path, Path | None]]


@dataclass(frozen=True)
class Case:
    id: str
    build: Builder
    fires: frozenset[str]
    quiet: frozenset[str] = frozenset()
    engines: tuple[str, ...] = ("vllm==0.34.0",)
    method: str | None = None
    verdict: str | None = None  # expected verdict for the first engine
    oracle: str | None = None
    serve_args: str | None = None  # the launch (`--serve-args`), for the serving rules

    def check(self, tmp: Path) -> Report:
        """Build the case under `tmp` and check it as its fields say."""
        draft, target = self.build(tmp)
        return check_path(
            draft,
            target=target,
            engines=self.engines,
            method=self.method,
            serve=settings_from(serve_args=self.serve_args),
        )


CASES: list[Case] = []


def case(id: str, fires: set[str] | None = None, quiet: set[str] | None = None, **kw) -> Callable:
    def register(build: Builder) -> Builder:
        CASES.append(Case(id, build, frozenset(fires or ()), frozenset(quiet or ()), **kw))
        return build

    return register


def with_target(draft: Draft, name: str = "draft", **target_kw) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        return draft.write(tmp / name), f.llama_target(tmp / "target", **target_kw)

    return build


def no_target(draft: Draft, name: str = "draft") -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        return draft.write(tmp / name), None

    return build


def _edit(draft_builder: Callable[[], Draft], edit: Callable[[Path], None]) -> Builder:
    """Write a clean draft, then damage its files."""

    def build(tmp: Path) -> tuple[Path, Path | None]:
        path = draft_builder().write(tmp / "draft")
        edit(path)
        return path, f.llama_target(tmp / "target")

    return build


def _sharded(edit: Callable[[Path], None]) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        path = f.specforge().write(tmp / "draft", shards=3)
        edit(path)
        return path, f.llama_target(tmp / "target")

    return build


def _index(path: Path) -> dict:
    return json.loads((path / "model.safetensors.index.json").read_text())


def _write_index(path: Path, index: dict) -> None:
    (path / "model.safetensors.index.json").write_text(json.dumps(index))


# ------------------------------------------------------------------ clean drafts

ALL_CODES = frozenset(RULES)

# Clean drafts from every producer: nothing may fire but what is listed.
for _name, _draft, _expected in [
    ("clean-specforge-default-aux", lambda: f.specforge(), set()),
    ("clean-speculators-trained", lambda: f.speculators(aux=[2, 4, 5]), set()),
    (
        "clean-speculators-converted",
        lambda: f.speculators(aux=[2, 4, 5], variant="converted"),
        set(),
    ),
    ("clean-modelopt-layers", lambda: f.modelopt(aux=[1, 3, 4]), {"DF302"}),
    ("clean-eagle-official", lambda: f.eagle_official(), {"DF903"}),
]:
    CASES.append(
        Case(
            _name,
            with_target(_draft(), name="my-eagle3-draft"),
            frozenset(_expected),
            ALL_CODES - _expected,
            verdict="compatible",
        )
    )

# ------------------------------------------------------------------ DF0xx structure


def _truncate(path: Path) -> None:
    shard = path / "model.safetensors"
    os.truncate(shard, shard.stat().st_size - 100)


case("truncated-shard", {"DF002"}, {"DF003"}, verdict="incompatible")(_edit(f.specforge, _truncate))


def _replace_weights(header, data: bytes = b"", length: int | None = None):
    def edit(path: Path) -> None:
        f.raw_safetensors(path / "model.safetensors", header, data, length)

    return edit


case("header-length-beyond-file", {"DF003"}, {"DF002"})(
    _edit(f.specforge, _replace_weights({"a": 1}, b"", 10**6))
)
case("header-not-object", {"DF004"}, {"DF003"})(_edit(f.specforge, _replace_weights([1, 2])))
case("invalid-entry", {"DF005"}, {"DF004"})(
    _edit(
        f.specforge,
        _replace_weights(
            {"fc.weight": {"dtype": "BF16", "shape": "x", "data_offsets": [0, 2]}}, b"\0\0"
        ),
    )
)
case("unknown-dtype", {"DF006"}, {"DF005"})(
    _edit(
        f.specforge,
        _replace_weights(
            {"fc.weight": {"dtype": "BFLOAT16", "shape": [1], "data_offsets": [0, 2]}}, b"\0\0"
        ),
    )
)
case("offsets-inverted", {"DF007"}, {"DF008"})(
    _edit(
        f.specforge,
        _replace_weights(
            {"fc.weight": {"dtype": "BF16", "shape": [1], "data_offsets": [2, 0]}}, b"\0\0"
        ),
    )
)
case("offsets-overlap", {"DF008"}, {"DF007"})(
    _edit(
        f.specforge,
        _replace_weights(
            {
                "a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
                "b": {"dtype": "BF16", "shape": [2], "data_offsets": [2, 6]},
            },
            b"\0" * 6,
        ),
    )
)
case("offsets-gap", {"DF009"}, {"DF008"})(
    _edit(
        f.specforge,
        _replace_weights({"a": {"dtype": "BF16", "shape": [1], "data_offsets": [2, 4]}}, b"\0" * 4),
    )
)
case("byte-size-mismatch", {"DF010"}, {"DF009"})(
    _edit(
        f.specforge,
        _replace_weights({"a": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 4]}}, b"\0" * 4),
    )
)


def _delete_last_shard(path: Path) -> None:
    (path / "model-00003-of-00003.safetensors").unlink()


case("index-missing-shard", {"DF011"}, {"DF012", "DF013"}, verdict="incompatible")(
    _sharded(_delete_last_shard)
)


def _misroute(path: Path) -> None:
    index = _index(path)
    index["weight_map"]["t2d"] = "model-00001-of-00003.safetensors"
    _write_index(path, index)


case("index-tensor-in-other-shard", {"DF012"}, {"DF011"}, verdict="compatible")(_sharded(_misroute))


def _unlist(path: Path) -> None:
    index = _index(path)
    del index["weight_map"]["norm.weight"]
    _write_index(path, index)


case("tensor-not-in-index", {"DF014"}, {"DF012", "DF205"}, verdict="compatible")(_sharded(_unlist))


def _bad_index(path: Path) -> None:
    (path / "model.safetensors.index.json").write_text("{not json")


case("index-not-json", {"DF015"}, {"DF011"})(_sharded(_bad_index))


def _duplicate(value: float) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        draft = f.specforge()
        path = draft.write(tmp / "draft")
        copy = {"norm.weight": f.Tensor("BF16", (f.H,), f.norm_bytes(f.H, value))}
        f.write_checkpoint(tmp / "extra", None, copy)
        (tmp / "extra" / "model.safetensors").rename(path / "extra.safetensors")
        return path, f.llama_target(tmp / "target")

    return build


case("duplicate-tensor-differs", {"DF013"}, {"DF011"}, verdict="degraded")(_duplicate(0.25))
case("duplicate-tensor-identical", set(), {"DF013"}, verdict="compatible")(_duplicate(0.5))


def _no_config(path: Path) -> None:
    (path / "config.json").unlink()


case("missing-config", {"DF016"}, {"DF017", "DF113"}, verdict="incompatible")(
    _edit(f.specforge, _no_config)
)


def _bad_config(path: Path) -> None:
    (path / "config.json").write_text('{"architectures": ["x"],}')


case("config-not-json", {"DF017"}, {"DF016"})(_edit(f.specforge, _bad_config))


def _config_list(path: Path) -> None:
    (path / "config.json").write_text("[]")


case("config-not-object", {"DF017"}, {"DF016"})(_edit(f.specforge, _config_list))


def _add_bin(path: Path) -> None:
    (path / "pytorch_model.bin").write_bytes(b"PK\x03\x04 stale")


case("mixed-formats", {"DF018"}, {"DF020"}, verdict="compatible")(_edit(f.specforge, _add_bin))


def _no_weights(path: Path) -> None:
    (path / "model.safetensors").unlink()


case("no-weights", {"DF021"}, {"DF018"}, verdict="incompatible")(_edit(f.specforge, _no_weights))


def _config_nesting_bomb(path: Path) -> None:
    (path / "config.json").write_text('{"architectures": ' + "[" * 5000 + "]" * 5000 + "}")


case("config-nesting-bomb", {"DF022"}, {"DF017", "DF023"}, verdict="incompatible")(
    _edit(f.specforge, _config_nesting_bomb)
)


def _duplicate_config_key(path: Path) -> None:
    text = (path / "config.json").read_text()
    (path / "config.json").write_text('{"model_type": "llama", ' + text.lstrip()[1:])


case("duplicate-config-key", {"DF023"}, {"DF022", "DF017"})(
    _edit(f.specforge, _duplicate_config_key)
)

# ------------------------------------------------------------------ DF1xx config


def _arch(arch: list[str] | None) -> Draft:
    draft = f.specforge()
    if arch is None:
        del draft.config["architectures"]
    else:
        draft.config["architectures"] = arch
    return draft


case("plain-config-eagle3draftmodel", {"DF101"}, {"DF102"}, verdict="incompatible", oracle="15c")(
    with_target(_arch(["Eagle3DraftModel"]))
)
case("llamaforcausallmeagle3-before-0.10.2", {"DF101"}, engines=("vllm==0.10.1",))(
    with_target(f.specforge(nested_aux=None))
)
case("llamaforcausallmeagle3-on-0.10.2", set(), {"DF101"}, engines=("vllm==0.10.2",))(
    with_target(f.specforge())
)
case("official-llamaforcausallm", set(), {"DF101", "DF107"}, verdict="compatible", oracle="15")(
    with_target(_arch(["LlamaForCausalLM"]))
)
case("qwen3-draft-before-0.24", {"DF101"}, engines=("vllm==0.22.0",))(
    with_target(_arch(["Qwen3ForCausalLM"]))
)
case("no-architectures", {"DF102"}, {"DF101"}, verdict="incompatible", oracle="15d")(
    with_target(_arch(None))
)


def _speculators_type(kind: str) -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["speculators_model_type"] = kind
    return draft


case("speculators-type-eagle", {"DF103"}, {"DF105"}, verdict="incompatible")(
    with_target(_speculators_type("eagle"))
)


def _no_proposals() -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["speculators_config"]["proposal_methods"] = []
    return draft


case("speculators-no-proposal-methods", {"DF104"}, {"DF103"}, verdict="compatible")(
    with_target(_no_proposals())
)
case("speculators-before-0.10.1", {"DF105"}, {"DF103"}, engines=("vllm==0.10.0",))(
    with_target(f.speculators(aux=[2, 4, 5]))
)


def _layer_type(kind: str) -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["transformer_layer_config"]["model_type"] = kind
    return draft


case("speculators-mistral-layer", {"DF106"}, {"DF101"}, verdict="incompatible")(
    with_target(_layer_type("mistral"))
)
case("speculators-mistral-layer-0.22", set(), {"DF106"}, engines=("vllm==0.22.0",))(
    with_target(_layer_type("mistral"))
)
case("eagle3-served-as-eagle", {"DF107"}, method="eagle", verdict="incompatible", oracle="19g")(
    with_target(f.specforge())
)
case("dir-name-without-method", {"DF108"}, verdict="compatible")(
    with_target(f.specforge(), name="mydraft")
)
case(
    "dir-name-auto-method",
    {"DF114"},
    {"DF107", "DF108"},
    method="auto",
    verdict="degraded",
    oracle="20",
)(with_target(f.specforge(), name="mydraft"))
case("dir-name-auto-method-0.14", {"DF107"}, {"DF114"}, method="auto", engines=("vllm==0.14.0",))(
    with_target(f.specforge(), name="mydraft")
)
case(
    "dir-name-auto-eagle3",
    set(),
    {"DF108", "DF107"},
    method="auto",
    verdict="compatible",
    oracle="20b",
)(with_target(f.specforge(), name="my-eagle3-draft"))
case("eagle3-dir-name-old-vllm", {"DF107"}, method="auto", engines=("vllm==0.10.1",))(
    with_target(f.specforge(), name="EAGLE3-tiny")
)
case("eagle3-before-0.8.5", {"DF109"}, engines=("vllm==0.8.4",))(with_target(f.specforge()))


def _no_draft_vocab() -> Draft:
    draft = f.specforge()
    del draft.config["draft_vocab_size"]
    draft.drop("d2t", "t2d").reshape("lm_head.weight", (f.VOCAB, f.H))
    return draft


case("missing-draft-vocab-size-0.10.2", {"DF110"}, engines=("vllm==0.10.2",))(
    with_target(_no_draft_vocab())
)
case("missing-draft-vocab-size-0.34", set(), {"DF110"}, verdict="compatible", oracle="08b")(
    with_target(_no_draft_vocab())
)


def _speculators_model_type() -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["model_type"] = "llama"
    return draft


case("speculators-with-model-type", {"DF111"}, {"DF103"}, verdict="incompatible")(
    with_target(_speculators_model_type())
)


def _no_layer_config() -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    del draft.config["transformer_layer_config"]
    return draft


case("speculators-no-layer-config", {"DF112"}, verdict="incompatible")(
    with_target(_no_layer_config())
)


def _null_target_hidden() -> Draft:
    draft = f.specforge()
    draft.config["target_hidden_size"] = None
    return draft


case("plain-null-target-hidden-size", {"DF112"}, verdict="incompatible")(
    with_target(_null_target_hidden())
)


def _unknown_method() -> Draft:
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **f.llama_layer_config(),
    }
    return Draft(config, f.eagle3_layer_tensors("layers.0.", first=False))


case("method-unknown", {"DF113"}, verdict="incompatible")(with_target(_unknown_method()))
case("method-unknown-explicit", set(), {"DF113"}, method="eagle3")(with_target(_unknown_method()))


def _retyped(draft: Draft, pointer: str, value: object) -> Draft:
    """`draft` with the config value at `pointer` (e.g. `/transformer_layer_config/x`) set."""
    *parents, key = pointer.strip("/").split("/")
    node = draft.config
    for part in parents:
        node = node[part]
    node[key] = value
    return draft


case("hidden-size-string", {"DF118"}, {"DF119"}, verdict="incompatible")(
    with_target(
        _retyped(f.speculators(aux=[2, 4, 5]), "/transformer_layer_config/hidden_size", "64")
    )
)
case("aux-ids-number", {"DF118"}, verdict="incompatible")(
    with_target(_retyped(f.speculators(), "/eagle_aux_hidden_state_layer_ids", 3))
)
case("hidden-size-float", {"DF118"}, verdict="incompatible")(
    with_target(_retyped(f.specforge(), "/hidden_size", 64.0))
)
case("flag-as-string", {"DF119"}, {"DF118"}, verdict="drafts-garbage")(
    with_target(_retyped(f.speculators(aux=[2, 4, 5]), "/norm_before_residual", "false"))
)
case("aux-ids-null", set(), {"DF118", "DF119"}, verdict="compatible")(
    with_target(_retyped(f.speculators(aux=[2, 4, 5]), "/eagle_aux_hidden_state_layer_ids", None))
)
case("target-layers-string", {"DF118"}, verdict="incompatible")(
    with_target(f.specforge(), num_hidden_layers="8")
)

# ------------------------------------------------------------------ DF2xx tensors

case("unknown-tensor", {"DF201"}, verdict="incompatible", oracle="11d")(
    with_target(f.specforge().add("foo.weight", "BF16", (4,)))
)
case("extra-layer-beyond-config", {"DF201"}, verdict="incompatible", oracle="17b")(
    with_target(
        Draft(
            f.specforge().config,
            {
                **f.eagle3_tensors(naming="layers"),
                **f.eagle3_layer_tensors("layers.1.", first=False),
            },
        )
    )
)


def _multi_layer() -> Draft:
    draft = Draft(
        f.specforge().config,
        {**f.eagle3_tensors(naming="layers"), **f.eagle3_layer_tensors("layers.1.", first=False)},
    )
    draft.config["num_hidden_layers"] = 2
    return draft


case("multi-layer-draft", set(), {"DF201", "DF205"}, verdict="compatible", oracle="17")(
    with_target(_multi_layer())
)
case("multi-layer-before-0.11.1", {"DF201"}, engines=("vllm==0.11.0",))(with_target(_multi_layer()))
case("model-prefix", {"DF202"}, {"DF203"}, verdict="incompatible", oracle="11e")(
    with_target(f.specforge().prefix_all("model."))
)
case("q-proj-undersized", {"DF203"}, {"DF204"}, verdict="incompatible", oracle="12b")(
    with_target(f.specforge().reshape("midlayer.self_attn.q_proj.weight", (48, 128)))
)
case("k-proj-input-h", {"DF203"}, verdict="incompatible", oracle="12f")(
    with_target(f.specforge().reshape("midlayer.self_attn.k_proj.weight", (32, 64)))
)
case("lm-head-rows", {"DF203"}, verdict="incompatible", oracle="12e")(
    with_target(f.specforge().reshape("lm_head.weight", (60, 64)))
)
case("q-proj-oversized", {"DF204"}, {"DF203"}, verdict="drafts-garbage", oracle="12")(
    with_target(f.specforge().reshape("midlayer.self_attn.q_proj.weight", (96, 128)))
)
case("k-proj-missing", {"DF205"}, {"DF206"}, verdict="drafts-garbage", oracle="10")(
    with_target(f.specforge().drop("midlayer.self_attn.k_proj.weight"))
)
case("second-layer-missing", {"DF205"}, {"DF201"}, verdict="drafts-garbage", oracle="17c")(
    with_target(
        Draft({**f.specforge().config, "num_hidden_layers": 2}, f.eagle3_tensors(naming="layers"))
    )
)
case("fc-norm-tensors-without-flag", {"DF201"}, verdict="incompatible", oracle="18d")(
    with_target(f.specforge().add("fc_norm.0.weight", "BF16", (64,)))
)


def _qwen3_layer(q_norm: int) -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["transformer_layer_config"]["model_type"] = "qwen3"
    for norm in ("q_norm", "k_norm"):
        draft.add(f"layers.0.self_attn.{norm}.weight", "BF16", (q_norm,), f.norm_bytes(q_norm))
    return draft


case("qwen3-layer-q-norm-mismatch", {"DF203"}, verdict="incompatible", oracle="16g2")(
    with_target(_qwen3_layer(32))
)
case("qwen3-layer", set(), {"DF203", "DF101", "DF106"}, verdict="compatible", oracle="16c")(
    with_target(_qwen3_layer(f.HEAD_DIM))
)
case("norm-missing", {"DF206"}, {"DF205"}, verdict="drafts-garbage", oracle="10b")(
    with_target(f.specforge().drop("norm.weight"))
)
case("fc-bias-ignored", {"DF207"}, {"DF201"}, verdict="drafts-garbage", oracle="11")(
    with_target(f.specforge().add("fc.bias", "BF16", (64,)))
)
case("fc-bias-rejected-0.24", {"DF201"}, {"DF207"}, engines=("vllm==0.24.0",))(
    with_target(f.specforge().add("fc.bias", "BF16", (64,)))
)


# Quantized drafts (compressed-tensors FP8, per-channel scales): from 0.11.1 vLLM builds the
# draft's layers with the draft's own quantization config, so the scales have parameters;
# a compressed-tensors lm_head is quantized from 0.20.0 (0.19.0 passes the config to the head,
# but compressed-tensors has no quantization method for ParallelLMHead before 0.20.0).
case(
    "fp8-draft-loads",
    set(),
    {"DF201", "DF209", "DF211", "DF903"},
    verdict="compatible",
    oracle="q1",
)(with_target(f.quantize_fp8(f.specforge())))
case("fp8-speculators-draft", set(), {"DF201"}, verdict="compatible", oracle="q7")(
    with_target(f.quantize_fp8(f.speculators()))
)


def _fp8_without_scales() -> Draft:
    """An FP8 draft whose `*.weight_scale` tensors were dropped (kept only `*.weight`)."""
    draft = f.quantize_fp8(f.specforge())
    return draft.drop(*[n for n in draft.tensors if n.endswith(".weight_scale")])


# vLLM 0.10.2 builds the layers unquantized and copies the FP8 values into bf16 weights.
case(
    "fp8-draft-without-scales-0.10.2",
    {"DF211"},
    {"DF201"},
    engines=("vllm==0.10.2",),
    verdict="drafts-garbage",
)(with_target(_fp8_without_scales()))
case("fp8-draft-without-scales", {"DF211"}, verdict="drafts-garbage")(
    with_target(_fp8_without_scales())
)
case("fp8-draft-static-input", set(), {"DF201"}, verdict="compatible")(
    with_target(f.quantize_fp8(f.specforge(), static_input=True))
)
case("fp8-draft-before-0.11.1", {"DF201"}, engines=("vllm==0.11.0",), verdict="incompatible")(
    with_target(f.quantize_fp8(f.specforge()))
)
case("fp8-draft-on-0.11.1", set(), {"DF201"}, engines=("vllm==0.11.1",), verdict="compatible")(
    with_target(f.quantize_fp8(f.specforge()))
)
_HEAD = {"ignore": [], "targets": ["Linear", "lm_head"]}
case("fp8-lm-head-before-0.19", {"DF201"}, engines=("vllm==0.18.0",), verdict="incompatible")(
    with_target(f.quantize_fp8(f.specforge(), **_HEAD))
)
case("fp8-lm-head-on-0.19", {"DF201"}, engines=("vllm==0.19.0",), verdict="incompatible")(
    with_target(f.quantize_fp8(f.specforge(), **_HEAD))
)
case("fp8-lm-head-on-0.20", set(), {"DF201"}, engines=("vllm==0.20.0",), verdict="compatible")(
    with_target(f.quantize_fp8(f.specforge(), **_HEAD))
)
# A pack-quantized (W4A16) lm_head has `weight_packed` and no `weight`: vLLM's V2 model
# runner reads the draft head's `weight` to decide whether it shares the target's lm_head
# (0.22.0-0.33.0) and start-up fails; 0.34.0 keeps such a head uncompared. The runner serves
# a dense Llama target from 0.23.0 and a dense Qwen3 one from 0.22.0; the V1 runner guards
# the read.
_QWEN3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}
case("int4-lm-head-mrv2-0.33", {"DF520"}, engines=("vllm==0.33.0",), verdict="incompatible")(
    with_target(f.quantize_packed(f.specforge(), **_HEAD))
)
case("int4-lm-head-mrv2-0.34", set(), {"DF520", "DF201"}, verdict="compatible")(
    with_target(f.quantize_packed(f.specforge(), **_HEAD))
)
case("int8-lm-head-mrv2-no-target", {"DF520"}, engines=("vllm==0.29.0",))(
    no_target(f.quantize_packed(f.specforge(), num_bits=8, **_HEAD))
)
case("int4-lm-head-llama-mrv2-0.23", {"DF520"}, engines=("vllm==0.23.0",))(
    with_target(f.quantize_packed(f.specforge(), **_HEAD))
)
case("int4-lm-head-llama-mrv2-0.24", {"DF520"}, engines=("vllm==0.24.0",))(
    with_target(f.quantize_packed(f.specforge(), **_HEAD))
)
case("int4-lm-head-llama-mrv1-0.22", set(), {"DF520"}, engines=("vllm==0.22.0",))(
    with_target(f.quantize_packed(f.specforge(), **_HEAD))
)
case("int4-lm-head-qwen3-mrv2-0.22", {"DF520"}, engines=("vllm==0.22.0",))(
    with_target(f.quantize_packed(f.specforge(), **_HEAD), **_QWEN3)
)
case("int4-lm-head-qwen3-mrv2-0.21", set(), {"DF520"}, engines=("vllm==0.21.0",))(
    with_target(f.quantize_packed(f.specforge(), **_HEAD), **_QWEN3)
)
case("int4-lm-head-ignored-0.33", set(), {"DF520", "DF201"}, engines=("vllm==0.33.0",))(
    with_target(f.quantize_packed(f.specforge()))
)
case("fp8-lm-head-mrv2-0.33", set(), {"DF520", "DF201"}, engines=("vllm==0.33.0",))(
    with_target(f.quantize_fp8(f.specforge(), **_HEAD))
)
case("int4-no-lm-head-0.33", set(), {"DF520"}, engines=("vllm==0.33.0",))(
    with_target(
        f.quantize_packed(f.specforge(), **_HEAD).drop(
            "lm_head.weight_packed", "lm_head.weight_scale", "lm_head.weight_shape"
        )
    )
)
# Confirmed with vLLM 0.34.0's loader: the `Linear` target does not reach ParallelLMHead, so
# a quantized lm_head that no target names is refused (`no parameter lm_head.weight_scale`).
case("fp8-lm-head-not-targeted", {"DF201"}, verdict="incompatible", oracle="q3")(
    with_target(f.quantize_fp8(f.specforge(), ignore=[]))
)

# SGLang builds the decoder layers with the draft's own quantization config (a launch without
# --quantization) but fc as a plain torch Linear; lm_head is quantized from 0.5.19.
case(
    "sglang-fp8-draft-fc-unquantized",
    {"DF207"},
    {"DF201"},
    engines=("sglang==0.5.23",),
    verdict="drafts-garbage",
    oracle="s1",
)(with_target(f.quantize_fp8(f.specforge())))
case(
    "sglang-fp8-draft-fc-ignored",
    set(),
    {"DF207", "DF201"},
    engines=("sglang==0.5.23",),
    verdict="compatible",
    oracle="s2",
)(with_target(f.quantize_fp8(f.specforge(), ignore=["lm_head", "fc"])))
_HEAD_NOT_FC = {"ignore": ["fc"], "targets": ["Linear", "lm_head"]}
case(
    "sglang-fp8-lm-head-before-0.5.19",
    {"DF207"},
    engines=("sglang==0.5.18",),
    verdict="drafts-garbage",
)(with_target(f.quantize_fp8(f.specforge(), **_HEAD_NOT_FC)))
case(
    "sglang-fp8-lm-head-on-0.5.19",
    set(),
    {"DF207"},
    engines=("sglang==0.5.19",),
    verdict="compatible",
)(with_target(f.quantize_fp8(f.specforge(), **_HEAD_NOT_FC)))
case(
    "sglang-fp8-lm-head-not-targeted",
    {"DF207"},
    engines=("sglang==0.5.23",),
    verdict="drafts-garbage",
    oracle="s4",
)(with_target(f.quantize_fp8(f.specforge(), ignore=["fc"])))


_AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
case(
    "sglang-draft-inherits-awq",
    {"DF515"},
    engines=("sglang==0.5.23",),
    verdict="compatible",
    oracle="s5",
)(with_target(f.specforge(), quantization_config=_AWQ))
case(
    "sglang-quantized-draft-next-to-awq-target",
    set(),
    {"DF515"},
    engines=("sglang==0.5.23",),
)(with_target(f.quantize_fp8(f.specforge(), ignore=["lm_head", "fc"]), quantization_config=_AWQ))
case("sglang-unquantized-target", set(), {"DF515"}, engines=("sglang==0.5.23",))(
    with_target(f.specforge())
)

case("fp8-eagle1-before-0.11.1", {"DF201"}, engines=("vllm==0.11.0",), verdict="incompatible")(
    with_target(f.quantize_fp8(f.eagle1()))
)
case("fp8-eagle1-on-0.11.1", set(), {"DF201"}, engines=("vllm==0.11.1",), verdict="compatible")(
    with_target(f.quantize_fp8(f.eagle1()))
)


# Rotation-quantized (ModelSlim QuaRot) targets: the draft reads hidden states in a rotated
# basis unless the serving stack anti-rotates its `fc` (vllm-ascend from v0.16.0rc1, when the
# description names the rotation file); vLLM data has no record past its last plugin release.
def with_modelslim_target(
    draft: Draft, rotation: str | None = "exported", name: str = "Qwen3-32B-w8a8-QuaRot"
) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        return draft.write(tmp / "draft"), f.modelslim_target(tmp / name, rotation)

    return build


case(
    "quarot-target-before-vllm-0.16",
    {"DF516"},
    {"DF519"},
    engines=("vllm==0.14.0",),
    verdict="drafts-garbage",
)(with_modelslim_target(f.specforge()))
case(
    "quarot-target-vllm-0.16-plugin-anti-rotates",
    set(),
    {"DF516", "DF519"},
    engines=("vllm==0.16.0",),
    verdict="compatible",
)(with_modelslim_target(f.specforge()))
case(
    "quarot-target-vllm-0.25-plugin-anti-rotates",
    set(),
    {"DF516", "DF519"},
    engines=("vllm==0.25.0",),
)(with_modelslim_target(f.specforge()))
case(
    "quarot-online-target-not-named",
    {"DF516"},
    engines=("vllm==0.16.0",),
)(with_modelslim_target(f.specforge(), rotation="online"))
case(
    "quarot-rotation-file-only",
    {"DF516"},
    engines=("vllm==0.16.0",),
)(with_modelslim_target(f.specforge(), rotation="file-only"))
case(
    "quarot-target-eagle1-not-anti-rotated",
    {"DF516"},
    engines=("vllm==0.16.0",),
)(with_modelslim_target(f.eagle1()))
case(
    "quarot-target-vllm-after-last-plugin-read",
    {"DF519"},
    {"DF516"},
    engines=("vllm==0.34.0",),
)(with_modelslim_target(f.specforge()))
case(
    "quarot-target-sglang",
    {"DF516"},
    {"DF519"},
    engines=("sglang==0.5.23",),
)(with_modelslim_target(f.specforge()))
case(
    "modelslim-target-without-quarot",
    set(),
    {"DF516", "DF519"},
    engines=("vllm==0.14.0",),
    verdict="compatible",
)(with_modelslim_target(f.specforge(), rotation=None))
_ROTATED_VERIFIER = f.speculators()
_ROTATED_VERIFIER.config["speculators_config"]["verifier"]["name_or_path"] = (
    "org/Qwen3-32B-w8a8-QuaRot"
)
_BASE_VERIFIER = f.speculators()
_BASE_VERIFIER.config["speculators_config"]["verifier"]["name_or_path"] = "/models/Qwen3-32B"
case(
    "quarot-target-in-a-folder-named-like-the-base-verifier",
    {"DF516"},
    engines=("vllm==0.14.0",),
)(with_modelslim_target(_BASE_VERIFIER, name="Qwen3-32B"))
case(
    "quarot-draft-trained-on-the-rotated-target",
    set(),
    {"DF516", "DF519"},
    engines=("vllm==0.14.0",),
)(with_modelslim_target(_ROTATED_VERIFIER))


def _unreadable_description(tmp: Path) -> tuple[Path, Path | None]:
    target = f.modelslim_target(tmp / "target", rotation=None)
    (target / "quant_model_description.json").write_text('{"optional": {"quarot": ')
    return f.specforge().write(tmp / "draft"), target


case(
    "quarot-description-unreadable",
    {"DF519"},
    {"DF516"},
    engines=("vllm==0.14.0",),
)(_unreadable_description)


# vLLM 0.11.0 builds an unquantized draft's decoder layers with the target's quantization
# config. The quantization_config blocks have the shapes real checkpoints carry: FP8 block
# (the Qwen3-*-FP8 / DeepSeek-V3 form: fmt, activation_scheme, weight_block_size [128, 128],
# as Fp8Config reads it, vllm/model_executor/layers/quantization/fp8.py@v0.11.0), AWQ (AutoAWQ
# GEMM exports: bits, group_size, version, zero_point), compressed-tensors W4A16 (llm-compressor
# exports: config_groups.group_0 pack-quantized targeting Linear, `ignore: [lm_head]`, as quoted
# from a Qwen3-VL-MoE export in an llm-compressor thread), bitsandbytes NF4 (transformers'
# BitsAndBytesConfig keys).
_FP8_BLOCK = {
    "activation_scheme": "dynamic",
    "fmt": "e4m3",
    "quant_method": "fp8",
    "weight_block_size": [128, 128],
}
_AWQ_GEMM = {
    "bits": 4,
    "group_size": 128,
    "modules_to_not_convert": None,
    "quant_method": "awq",
    "version": "gemm",
    "zero_point": True,
}
_CT_W4A16 = {
    "config_groups": {
        "group_0": {
            "format": "pack-quantized",
            "input_activations": None,
            "output_activations": None,
            "targets": ["Linear"],
            "weights": {
                "actorder": None,
                "block_structure": None,
                "dynamic": False,
                "group_size": 128,
                "num_bits": 4,
                "observer": "minmax",
                "observer_kwargs": {},
                "strategy": "group",
                "symmetric": True,
                "type": "int",
            },
        }
    },
    "format": "pack-quantized",
    "global_compression_ratio": None,
    "ignore": ["lm_head"],
    "kv_cache_scheme": None,
    "quant_method": "compressed-tensors",
    "quantization_status": "compressed",
}
_BNB_4BIT = {
    "bnb_4bit_compute_dtype": "bfloat16",
    "bnb_4bit_quant_type": "nf4",
    "bnb_4bit_use_double_quant": True,
    "load_in_4bit": True,
    "load_in_8bit": False,
    "quant_method": "bitsandbytes",
}
case(
    "fp8-target-unquantized-draft-on-0.11.0",
    {"DF517"},
    {"DF518"},
    engines=("vllm==0.11.0",),
    verdict="drafts-garbage",
)(with_target(f.specforge(), quantization_config=_FP8_BLOCK))
case(
    "fp8-target-unquantized-draft-on-0.10.2",
    set(),
    {"DF517", "DF518"},
    engines=("vllm==0.10.2",),
)(with_target(f.specforge(), quantization_config=_FP8_BLOCK))
case(
    "fp8-target-unquantized-draft-on-0.11.1",
    set(),
    {"DF517", "DF518"},
    engines=("vllm==0.11.1",),
    verdict="compatible",
)(with_target(f.specforge(), quantization_config=_FP8_BLOCK))
case("awq-target-unquantized-draft-on-0.11.0", {"DF517"}, engines=("vllm==0.11.0",))(
    with_target(f.specforge(), quantization_config=_AWQ_GEMM)
)
case("w4a16-target-unquantized-eagle1-on-0.11.0", {"DF517"}, engines=("vllm==0.11.0",))(
    with_target(f.eagle1(), quantization_config=_CT_W4A16)
)
case(
    "bnb-target-unquantized-draft-on-0.11.0",
    {"DF518"},
    {"DF517"},
    engines=("vllm==0.11.0",),
)(with_target(f.specforge(), quantization_config=_BNB_4BIT))
case(
    "fp8-target-quantized-draft-on-0.11.0",
    set(),
    {"DF517", "DF518"},
    engines=("vllm==0.11.0",),
)(with_target(f.quantize_fp8(f.specforge()), quantization_config=_FP8_BLOCK))


def _fp8_scale_on_ignored_module(ignored: str) -> Draft:
    """`fc` is left unquantized by `ignore` but still stores a scale."""
    draft = f.quantize_fp8(f.specforge(), ignore=["lm_head", ignored])
    return draft.add("fc.weight_scale", "F32", (64, 1), f.fp8_scale_bytes(64))


# vLLM matches `ignore` entries against its own module names: `model.fc` leaves fc
# unquantized (the scale has no parameter), a bare `fc` matches nothing (confirmed with vLLM
# 0.34.0's loader: fc is quantized and the scale loads).
case("fp8-scale-on-ignored-module", {"DF201"}, verdict="incompatible", oracle="q6")(
    with_target(_fp8_scale_on_ignored_module("model.fc"))
)
case("fp8-ignore-entry-matching-nothing", set(), {"DF201"}, verdict="compatible", oracle="q5")(
    with_target(_fp8_scale_on_ignored_module("fc"))
)


# Producers that are not (plain) EAGLE-3 drafts.
case("nemo-automodel-no-aux-ids", {"DF315", "DF101"}, {"DF905"}, verdict="incompatible")(
    with_target(f.nemo_automodel())
)


def _nemo_with_aux_ids() -> Draft:
    draft = f.nemo_automodel()
    draft.config["eagle_aux_hidden_state_layer_ids"] = [2, 4, 5]
    return draft


case("nemo-automodel-aux-ids-written", {"DF101"}, {"DF315"})(with_target(_nemo_with_aux_ids()))
case("specforge-no-aux-ids-not-nemo", set(), {"DF315"}, verdict="compatible")(
    with_target(f.specforge())
)
case("eagle4-needs-plugin", {"DF101"}, {"DF905", "DF125"}, verdict="incompatible")(
    with_target(f.eagle4())
)
case("speculators-xpress", {"DF113", "DF125"}, {"DF103"}, verdict="incompatible")(
    with_target(f.speculators_non_eagle())
)
case(
    "speculators-dflash-on-0.17",
    {"DF103", "DF125"},
    {"DF108"},
    engines=("vllm==0.17.0",),
    verdict="incompatible",
)(with_target(f.speculators_non_eagle("dflash", "DFlashSpeculator")))
# Confirmed with vLLM 0.34.0: `Pass a matching method or a matching draft checkpoint`.
case(
    "speculators-dflash-under-eagle3",
    {"DF107", "DF125"},
    {"DF108"},
    verdict="incompatible",
    oracle="p4",
)(with_target(f.speculators_non_eagle("dflash", "DFlashSpeculator")))
case("dflash-drafter", {"DF101", "DF125"}, {"DF905"}, verdict="incompatible")(
    with_target(f.dflash_draft())
)


def _head_dim_undeclared() -> Draft:
    draft = f.specforge()
    del draft.config["head_dim"]
    return Draft(draft.config, f.eagle3_tensors(head_dim=32))


case(
    "head-dim-not-declared", {"DF208"}, {"DF203", "DF204"}, verdict="drafts-garbage", oracle="12c"
)(with_target(_head_dim_undeclared()))

# ------------------------------------------------------------------ DF3xx aux layers

case("nested-aux-not-read", {"DF301"}, {"DF302"}, verdict="drafts-garbage", oracle="01")(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("nested-aux-not-read-no-target", {"DF301"}, {"DF302", "DF303"})(
    no_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("nested-aux-read-unshifted-by-mrv1-0.22", {"DF301"}, {"DF302"}, engines=("vllm==0.22.0",))(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("nested-aux-mrv2-0.24-llama", {"DF301"}, engines=("vllm==0.24.0",))(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("top-level-aux-read", set(), {"DF301", "DF302"}, verdict="compatible", oracle="02")(
    with_target(f.speculators(aux=[1, 3, 6]))
)
case("aux-ignored-before-0.11.1", {"DF301"}, engines=("vllm==0.11.0",))(
    with_target(f.speculators(aux=[1, 3, 6]))
)
case("nested-aux-default-matches", {"DF302"}, {"DF301"}, verdict="compatible")(
    with_target(f.modelopt(aux=[1, 3, 4]))
)
case("aux-id-out-of-range", {"DF303"}, verdict="incompatible", oracle="06")(
    with_target(f.speculators(aux=[1, 3, 9]))
)
case("aux-id-zero-and-last", set(), {"DF303"}, verdict="compatible", oracle="06b")(
    with_target(f.speculators(aux=[0, 3, 8]))
)
case("aux-id-zero-0.17", {"DF303"}, engines=("vllm==0.17.0",))(
    with_target(f.speculators(aux=[0, 3, 7]))
)
case("four-top-level-ids", {"DF304"}, {"DF203"}, verdict="incompatible", oracle="05b")(
    with_target(f.speculators(aux=[1, 3, 5, 6], n_aux=4))
)


def _four_with_count() -> Draft:
    draft = f.speculators(aux=[1, 3, 5, 6], n_aux=4)
    draft.config["transformer_layer_config"]["num_aux_hidden_states"] = 4
    return draft


case("four-ids-with-count", set(), {"DF304", "DF305"}, verdict="compatible", oracle="05c")(
    with_target(_four_with_count())
)
case("four-nested-ids", {"DF305"}, {"DF304"}, verdict="incompatible", oracle="05")(
    with_target(f.specforge(nested_aux=[0, 2, 4, 5], n_aux=4))
)
case("duplicate-aux-ids", {"DF305", "DF306"}, verdict="incompatible", oracle="07")(
    with_target(f.speculators(aux=[2, 2, 5]))
)


def _both_aux(top: list[int], nested: list[int]) -> Draft:
    draft = f.specforge(nested_aux=nested)
    draft.config["eagle_aux_hidden_state_layer_ids"] = top
    return draft


case("aux-places-disagree", {"DF307"}, {"DF308"})(with_target(_both_aux([2, 4, 5], [0, 2, 5])))
case("aux-places-agree", set(), {"DF307", "DF308", "DF301"}, verdict="compatible")(
    with_target(_both_aux([2, 4, 7], [1, 3, 6]))
)
case("aux-copied-without-shift", {"DF308"}, verdict="degraded")(
    with_target(_both_aux([1, 3, 6], [1, 3, 6]))
)

# ------------------------------------------------------------------ DF4xx vocabulary

case("d2t-missing", {"DF401"}, {"DF402"}, verdict="drafts-garbage", oracle="08")(
    with_target(f.specforge().drop("d2t"))
)
case("lm-head-missing-reduced", {"DF402"}, {"DF401"}, verdict="drafts-garbage", oracle="09")(
    with_target(f.specforge().drop("lm_head.weight"))
)
case("lm-head-missing-full-vocab", set(), {"DF402", "DF205"}, verdict="compatible", oracle="09b")(
    with_target(_no_draft_vocab().drop("lm_head.weight"))
)
case("lm-head-missing-0.11.0", {"DF205"}, {"DF402"}, engines=("vllm==0.11.0",))(
    with_target(f.specforge().drop("lm_head.weight"))
)


def _absolute_d2t() -> Draft:
    draft = f.specforge()
    d2t = np.frombuffer(draft.tensors["d2t"].data, dtype="<i8")
    absolute = d2t + np.arange(d2t.size)
    return draft.add("d2t", "I64", (d2t.size,), (absolute + 200).astype("<i8").tobytes())


case("d2t-out-of-range", {"DF403"}, verdict="incompatible")(with_target(_absolute_d2t()))


def _t2d_wrong_count() -> Draft:
    draft = f.specforge()
    t2d = np.zeros(f.VOCAB, dtype=np.bool_)
    t2d[:10] = True
    return draft.add("t2d", "BOOL", (f.VOCAB,), t2d.tobytes())


case("t2d-wrong-count", {"DF407"}, {"DF403", "DF404"}, verdict="compatible")(
    with_target(_t2d_wrong_count())
)


def _t2d_elsewhere() -> Draft:
    """A t2d with the right count that marks other ids than d2t maps to."""
    draft = f.specforge()
    d2t = np.frombuffer(draft.tensors["d2t"].data, dtype="<i8")
    mapped = set((d2t + np.arange(d2t.size)).tolist())
    t2d = np.zeros(f.VOCAB, dtype=np.bool_)
    others = [i for i in range(f.VOCAB) if i not in mapped][: d2t.size]
    t2d[others] = True
    return draft.add("t2d", "BOOL", (f.VOCAB,), t2d.tobytes())


def _d2t_duplicates() -> Draft:
    draft = f.specforge()
    d2t = np.frombuffer(draft.tensors["d2t"].data, dtype="<i8").copy()
    d2t[1] = d2t[0] - 1  # draft id 1 maps to the target id draft id 0 maps to
    return draft.add("d2t", "I64", (d2t.size,), d2t.astype("<i8").tobytes())


case("t2d-marks-other-ids", {"DF407"}, {"DF404"}, verdict="compatible")(
    with_target(_t2d_elsewhere())
)
case("d2t-duplicate-targets", {"DF404"}, {"DF407"}, verdict="degraded")(
    with_target(_d2t_duplicates())
)
case("vocab-map-consistent", set(), {"DF403", "DF404", "DF407"}, verdict="compatible")(
    with_target(f.specforge())
)
case("vocab-size-mismatch", {"DF405"}, verdict="incompatible", oracle="21d")(
    with_target(f.specforge(), vocab=512)
)
case("d2t-dropped-0.9.0", {"DF406"}, engines=("vllm==0.9.0",))(with_target(f.eagle_official()))
case("d2t-with-full-vocab-0.34", {"DF201"}, verdict="incompatible", oracle="08c")(
    with_target(_no_draft_vocab().add("d2t", "I64", (f.VOCAB,), np.zeros(f.VOCAB, "<i8").tobytes()))
)

# ------------------------------------------------------------------ DF5xx target


def _gpt2_target(tmp: Path) -> tuple[Path, Path | None]:
    target = tmp / "target"
    target.mkdir()
    (target / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["GPT2LMHeadModel"],
                "model_type": "gpt2",
                "n_embd": 64,
                "n_layer": 8,
                "vocab_size": 256,
            }
        )
    )
    return f.specforge().write(tmp / "draft"), target


case("target-gpt2", {"DF501"}, verdict="incompatible", oracle="21")(_gpt2_target)


def _kimi_like_target(tmp: Path) -> tuple[Path, Path | None]:
    target = f.llama_target(
        tmp / "target",
        architectures=["DeepseekV3ForCausalLM"],
        model_type="kimi_k2",
        n_routed_experts=8,
    )
    return f.specforge().write(tmp / "draft"), target


case("kimi-target-0.17", {"DF501"}, engines=("vllm==0.17.0",))(_kimi_like_target)
case("kimi-target-0.34", set(), {"DF501"}, verdict="compatible", oracle="21b")(_kimi_like_target)


def _final_layer_draft() -> Draft:
    """Capture-before ids ending at L = 8: the output of the target's last layer."""
    draft = f.specforge()
    draft.config["eagle_aux_hidden_state_layer_ids"] = [2, 4, 8]
    return draft


def _deepseek_target(draft: Draft) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        target = f.llama_target(
            tmp / "target",
            architectures=["DeepseekV3ForCausalLM"],
            model_type="kimi_k2",
            n_routed_experts=8,
        )
        return draft.write(tmp / "draft"), target

    return build


# The deepseek_v2 backbone captures the last layer's output from vLLM 0.25.0 (vllm#46973).
case("deepseek-final-layer-0.24", {"DF303"}, engines=("vllm==0.24.0",), verdict="incompatible")(
    _deepseek_target(_final_layer_draft())
)
case("deepseek-final-layer-0.25", set(), {"DF303"}, engines=("vllm==0.25.0",))(
    _deepseek_target(_final_layer_draft())
)
case("llama-final-layer-0.24", set(), {"DF303"}, engines=("vllm==0.24.0",))(
    with_target(_final_layer_draft())
)


def _layer_zero_draft() -> Draft:
    draft = f.specforge()
    draft.config["eagle_aux_hidden_state_layer_ids"] = [0, 4, 5]
    return draft


case("deepseek-layer-zero", {"DF303"}, verdict="incompatible", oracle="d3")(
    _deepseek_target(_layer_zero_draft())
)
case("llama-layer-zero", set(), {"DF303"})(with_target(_layer_zero_draft()))
case("gemma3-target", {"DF501"}, verdict="incompatible")(
    with_target(f.specforge(), architectures=["Gemma3ForCausalLM"], model_type="gemma3_text")
)
case("target-capability-unknown-0.30", {"DF505"}, {"DF501"}, engines=("vllm==0.30.0",))(
    with_target(f.specforge(), architectures=["TeleChat3ForCausalLM"], model_type="telechat3")
)


def _narrow_draft(target_hidden: int | None = None, embed: bool = False) -> Draft:
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        **f.llama_layer_config(hidden=32, heads=4, kv=2, head_dim=8, inter=64),
        "draft_vocab_size": f.DRAFT_VOCAB,
    }
    if target_hidden:
        config["target_hidden_size"] = target_hidden
    return Draft(
        config,
        f.eagle3_tensors(hidden=32, head_dim=8, inter=64, target_hidden=target_hidden, embed=embed),
    )


case(
    "draft-narrower-than-target", {"DF502", "DF503"}, {"DF203"}, verdict="incompatible", oracle="13"
)(with_target(_narrow_draft()))
case("shared-embedding-too-wide", {"DF503"}, {"DF502"}, verdict="incompatible", oracle="13b")(
    with_target(_narrow_draft(target_hidden=64))
)
case("own-embedding-narrow-draft", set(), {"DF502", "DF503"}, verdict="compatible", oracle="13c")(
    with_target(_narrow_draft(target_hidden=64, embed=True))
)
case("draft-context-short-0.29", {"DF504"}, engines=("vllm==0.29.0",))(
    with_target(f.specforge(), max_position_embeddings=131072)
)
case("draft-context-short-0.34", set(), {"DF504"}, verdict="compatible")(
    with_target(f.specforge(), max_position_embeddings=131072)
)

# ------------------------------------------------------------------ DF530-DF532 KV geometry

# A Qwen3-32B-like target in miniature: explicit head_dim 128 (hidden/heads would give 32),
# one KV head; and AngelSlim-like drafts trained with head_dim 80.
_QWEN3_32B_LIKE = {"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 128}


def _geometry_draft(
    head_dim: int | None, kv: int = 1, arch: str = "LlamaForCausalLM", hidden: int = f.H
) -> Draft:
    """An EAGLE-3 draft whose attention has 2 heads and `kv` KV heads of `head_dim` (None:
    not declared, so hidden_size // 2)."""
    heads = 2
    config = {
        "architectures": [arch],
        "model_type": "llama",
        **f.llama_layer_config(hidden=hidden, heads=heads, kv=kv, head_dim=head_dim),
        "draft_vocab_size": f.DRAFT_VOCAB,
        "torch_dtype": "bfloat16",
    }
    size = head_dim or hidden // heads
    return Draft(config, f.eagle3_tensors(hidden=hidden, heads=heads, kv=kv, head_dim=size))


def _gemma2_eagle1() -> Builder:
    """An EAGLE-1 head trained on a Gemma-2-like target (head_dim 256) whose config has no
    head_dim: 576 / 2 heads derives 288."""

    def build(tmp: Path) -> tuple[Path, Path | None]:
        hidden = 576
        config = {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            **f.llama_layer_config(hidden=hidden, heads=2, kv=1, head_dim=None),
            "torch_dtype": "bfloat16",
            "bias": False,
        }
        tensors = f.eagle3_layer_tensors(
            "layers.0.", hidden=hidden, heads=2, kv=1, head_dim=288, first=False
        )
        del tensors["layers.0.input_layernorm.weight"]
        tensors["fc.weight"] = f.Tensor("BF16", (hidden, 2 * hidden))
        tensors["embed_tokens.weight"] = f.Tensor("BF16", (f.VOCAB, hidden))
        target = f.llama_target(
            tmp / "target",
            hidden=hidden,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=256,
            architectures=["Gemma2ForCausalLM"],
            model_type="gemma2",
        )
        return Draft(config, tensors).write(tmp / "draft"), target

    return build


_KV = {"DF530", "DF531", "DF532"}
case("kv-head-dim-80-vllm-0.9.1", {"DF530", "DF531"}, engines=("vllm==0.9.1",))(
    with_target(_geometry_draft(80), **_QWEN3_32B_LIKE)
)
case(
    "kv-head-dim-80-vllm-0.10.2",
    {"DF530", "DF532"},
    {"DF531"},
    engines=("vllm==0.10.2",),
    verdict="incompatible",
)(with_target(_geometry_draft(80), **_QWEN3_32B_LIKE))
case(
    "kv-head-dim-80-vllm-0.11.0", {"DF532", "DF533"}, {"DF530", "DF531"}, engines=("vllm==0.11.0",)
)(with_target(_geometry_draft(80), **_QWEN3_32B_LIKE))
case(
    "kv-head-dim-80-vllm-0.11.1",
    {"DF533"},
    _KV,
    engines=("vllm==0.11.1",),
    verdict="degraded",
)(with_target(_geometry_draft(80), **_QWEN3_32B_LIKE))
case("kv-head-dim-80-vllm-0.34", set(), _KV | {"DF533"}, verdict="compatible")(
    with_target(_geometry_draft(80), **_QWEN3_32B_LIKE)
)
case("kv-head-dim-80-sglang", set(), _KV, engines=("sglang==0.5.23", "sglang==0.4.4"))(
    with_target(_geometry_draft(80, arch="LlamaForCausalLMEagle3"), **_QWEN3_32B_LIKE)
)
case(
    "kv-same-geometry-vllm-0.9.1",
    set(),
    _KV | {"DF533"},
    engines=("vllm==0.9.1", "vllm==0.10.2", "vllm==0.11.1"),
)(with_target(_geometry_draft(128), **_QWEN3_32B_LIKE))
case(
    "kv-heads-differ-vllm-0.10.2", {"DF530"}, {"DF531", "DF532", "DF533"}, engines=("vllm==0.10.2",)
)(with_target(_geometry_draft(128, kv=2), **_QWEN3_32B_LIKE))
case("kv-heads-differ-vllm-0.28", {"DF533"}, _KV, engines=("vllm==0.28.0",))(
    with_target(_geometry_draft(128, kv=2), **_QWEN3_32B_LIKE)
)
case("kv-heads-differ-vllm-0.29", set(), _KV | {"DF533"}, engines=("vllm==0.29.0",))(
    with_target(_geometry_draft(128, kv=2), **_QWEN3_32B_LIKE)
)
case("kv-derived-head-size-vllm-0.10.2", {"DF530"}, engines=("vllm==0.10.2",))(
    with_target(_geometry_draft(None), **_QWEN3_32B_LIKE)
)
case("kv-gemma2-eagle1-288-vllm-0.9.1", {"DF530", "DF531"}, engines=("vllm==0.9.1",))(
    _gemma2_eagle1()
)
case("kv-gemma2-eagle1-288-vllm-0.11.1", set(), _KV, engines=("vllm==0.11.1",))(_gemma2_eagle1())
case("kv-mla-target-vllm-0.10.2", set(), _KV | {"DF533"}, engines=("vllm==0.10.2", "vllm==0.11.1"))(
    with_target(_geometry_draft(80), kv_lora_rank=512, qk_rope_head_dim=64)
)
# A target whose own head size FlashAttention refuses (the miniature default, 16) is served
# by another backend; the draft's is then not compared.
case("kv-target-head-size-unsupported-vllm-0.9.1", set(), {"DF531"}, engines=("vllm==0.9.1",))(
    with_target(f.specforge())
)


# ------------------------------------------------------------------ DF130 draft sliding window


def _qwen3_sliding() -> Draft:
    draft = f.speculators_sliding()
    draft.config["transformer_layer_config"]["model_type"] = "qwen3"
    for norm in ("q_norm", "k_norm"):
        name = f"layers.0.self_attn.{norm}.weight"
        draft.add(name, "BF16", (f.HEAD_DIM,), f.norm_bytes(f.HEAD_DIM))
    return draft


case("sliding-window-qwen3-0.25", {"DF130"}, engines=("vllm==0.25.0",))(
    with_target(_qwen3_sliding())
)
case("sliding-window-qwen3-0.26", set(), {"DF130"}, engines=("vllm==0.26.0",))(
    with_target(_qwen3_sliding())
)
case("sliding-window-llama-0.10.1", {"DF130"}, engines=("vllm==0.10.1",))(
    with_target(f.speculators_sliding())
)
case("sliding-window-llama-0.10.2", set(), {"DF130"}, engines=("vllm==0.10.2",))(
    with_target(f.speculators_sliding())
)
case("sliding-window-0.34", set(), {"DF130"}, verdict="compatible")(
    with_target(f.speculators_sliding())
)
case("sliding-window-sglang", {"DF130"}, engines=("sglang==0.5.23",))(
    with_target(f.with_sliding_window(f.specforge()))
)
case("sliding-window-trtllm", {"DF130"}, engines=("trtllm==1.2.0",))(
    with_target(f.with_sliding_window(f.specforge()))
)
case("no-sliding-window-sglang", set(), {"DF130"}, engines=("sglang==0.5.23",))(
    with_target(f.specforge())
)
case("no-sliding-window-trtllm", set(), {"DF130"}, engines=("trtllm==1.2.0",))(
    with_target(f.specforge())
)
case("sliding-layer-types-without-window", set(), {"DF130"}, engines=("trtllm==1.2.0",))(
    with_target(f.with_sliding_window(f.specforge(), window=0))
)


# ------------------------------------------------------------------ DF6xx norm flags


def _norm_before_fc() -> Draft:
    draft = f.specforge()
    draft.config["norm_before_fc"] = True
    return draft.add("input_norm.weight", "BF16", (192,), f.norm_bytes(192))


case("norm-before-fc-0.17", {"DF601"}, engines=("vllm==0.17.0",))(with_target(_norm_before_fc()))
case("norm-before-fc-0.34", set(), {"DF601", "DF206", "DF207"}, verdict="compatible")(
    with_target(_norm_before_fc())
)


def _input_norm_without_flag() -> Draft:
    return f.specforge().add("input_norm.weight", "BF16", (192,), f.norm_bytes(192))


case("input-norm-without-flag", {"DF207"}, {"DF201"}, verdict="drafts-garbage", oracle="18b")(
    with_target(_input_norm_without_flag())
)


def _norm_flag_without_tensor() -> Draft:
    draft = f.specforge()
    draft.config["norm_before_fc"] = True
    return draft


case("norm-before-fc-without-tensor", {"DF206"}, verdict="drafts-garbage", oracle="18")(
    with_target(_norm_flag_without_tensor())
)
case("norm-before-residual-unwritten", {"DF602"})(
    with_target(f.speculators(aux=[2, 4, 5], norm_before_residual=None))
)
case("norm-before-residual-written", set(), {"DF602"})(
    with_target(f.speculators(aux=[2, 4, 5], norm_before_residual=False))
)


def _specforge_norm_output() -> Draft:
    draft = f.specforge()
    draft.config["norm_output"] = True
    return draft


case("specforge-norm-output", {"DF603"})(with_target(_specforge_norm_output()))
case("speculators-norm-output", set(), {"DF603"})(with_target(f.speculators(aux=[2, 4, 5])))

# ------------------------------------------------------------------ DF9xx hygiene


def _ones_norms() -> Draft:
    draft = f.speculators(aux=[2, 4, 5], variant="converted")
    for name in ("input_layernorm", "post_attention_layernorm", "hidden_norm"):
        draft.add(f"layers.0.{name}.weight", "BF16", (f.H,), f.norm_bytes(f.H, 1.0))
    return draft


case("untrained-layer", {"DF901"}, verdict="degraded")(with_target(_ones_norms()))


def _f32() -> Draft:
    draft = f.specforge()
    draft.config["torch_dtype"] = "float32"
    for name, tensor in list(draft.tensors.items()):
        if tensor.dtype == "BF16":
            draft.tensors[name] = f.Tensor("F32", tensor.shape)
    return draft


case("float32-weights", {"DF902"}, {"DF903"})(with_target(_f32()))
case("config-dtype-mismatch", {"DF903"}, {"DF902"})(with_target(f.eagle_official()))


def _local_verifier() -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["speculators_config"]["verifier"]["name_or_path"] = "/home/me/models/llama"
    return draft


case("local-verifier-path", {"DF904"}, verdict="compatible")(with_target(_local_verifier()))
case("hub-verifier-path", set(), {"DF904"})(with_target(f.speculators(aux=[2, 4, 5])))
case("unknown-convention", {"DF905"}, {"DF113"}, method="eagle3")(
    with_target(_arch(["MyEagle3Head"]))
)

# ------------------------------------------------------------------ EAGLE-1


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

__all__ = ["CASES", "Case"]


def _unreadable(path: Path) -> None:
    # A file the OS refuses to read even for root: /proc/self/mem fails with EIO at offset 0.
    (path / "model.safetensors").unlink()
    (path / "model.safetensors").symlink_to("/proc/self/mem")


if Path("/proc/self/mem").exists():
    case("unreadable-weights", {"DF001"}, {"DF002"}, verdict="incompatible")(
        _edit(f.specforge, _unreadable)
    )


# ------------------------------------------------------------------ PyTorch .bin drafts


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


# ------------------------------------------------------------------ MLA drafts (Kimi-K2 style)


def _kimi_target(tmp: Path) -> Path:
    return f.llama_target(
        tmp / "target",
        architectures=["DeepseekV3ForCausalLM"],
        model_type="kimi_k2",
        n_routed_experts=8,
    )


def _mla(draft: Draft) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        return draft.write(tmp / "draft"), _kimi_target(tmp)

    return build


case(
    "mla-draft-clean",
    {"DF302"},
    {"DF201", "DF203", "DF205", "DF206", "DF101"},
    verdict="compatible",
    oracle="mla base",
)(_mla(f.mla_draft()))
case("mla-q-lora-null", {"DF112"}, verdict="incompatible", oracle="mla a")(
    _mla(f.mla_draft(q_lora=None))
)


def _mla_model_type(model_type: str) -> Draft:
    draft = f.mla_draft()
    draft.config["model_type"] = model_type
    return draft


case("mla-model-type-deepseek-v3", {"DF101"}, verdict="incompatible", oracle="mla g")(
    _mla(_mla_model_type("deepseek_v3"))
)
case("mla-missing-kv-b", {"DF205"}, {"DF201"}, verdict="drafts-garbage", oracle="mla b")(
    _mla(f.mla_draft().drop("midlayer.self_attn.kv_b_proj.weight"))
)
case("mla-q-b-oversized", {"DF204"}, {"DF203"}, verdict="drafts-garbage", oracle="mla c")(
    _mla(f.mla_draft().reshape("midlayer.self_attn.q_b_proj.weight", (f.HEADS * 24 + 8, 48)))
)


def _gelu() -> Draft:
    draft = f.specforge()
    draft.config["hidden_act"] = "gelu"
    return draft


case("gelu-activation", {"DF115"}, verdict="incompatible", oracle="mla g7")(with_target(_gelu()))


# ------------------------------------------------------------------ SGLang and TensorRT-LLM
# Expected behaviour follows the engines' sources as recorded in data/sglang.toml and
# data/trtllm.toml (see dev/sglang-trtllm-procedure.md).

SG_NEW = {"DF116", "DF209", "DF210", "DF309", "DF506", "DF301"}

case(
    "sglang-specforge-clean",
    set(),
    SG_NEW | {"DF101", "DF105", "DF205", "DF206"},
    engines=("sglang==0.5.23",),
    verdict="compatible",
)(with_target(f.specforge(nested_aux=[1, 3, 6])))
case("sglang-speculators-format", {"DF105"}, engines=("sglang==0.5.23",), verdict="incompatible")(
    with_target(f.speculators())
)
case(
    "sglang-official-llamaforcausallm",
    {"DF101"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
)(with_target(f.eagle_official()))


def _two_layers(naming: str) -> Draft:
    draft = f.specforge()
    draft.config["num_hidden_layers"] = 2
    draft.tensors = f.eagle3_tensors(naming=naming, layers=2)
    return draft


case("sglang-multi-layer-before-0.5.12", {"DF116"}, engines=("sglang==0.5.10",))(
    with_target(_two_layers("layers"))
)
case(
    "sglang-multi-layer-0.5.12",
    set(),
    {"DF116", "DF210", "DF205", "DF201"},
    engines=("sglang==0.5.12",),
)(with_target(_two_layers("layers")))
case(
    "sglang-multi-layer-midlayer-names-0.5.12",
    {"DF210"},
    {"DF116"},
    engines=("sglang==0.5.12",),
    verdict="drafts-garbage",
)(with_target(_two_layers("midlayer")))


def _full_vocab_without_d2t() -> Draft:
    draft = f.specforge()
    draft.config["draft_vocab_size"] = f.VOCAB
    draft.tensors = f.eagle3_tensors(draft_vocab=f.VOCAB)
    return draft


case(
    "sglang-d2t-required-before-0.4.9",
    {"DF209"},
    {"DF401"},
    engines=("sglang==0.4.8",),
    verdict="incompatible",
)(with_target(_full_vocab_without_d2t()))
case("sglang-d2t-optional-0.4.9", set(), {"DF209"}, engines=("sglang==0.4.9",))(
    with_target(_full_vocab_without_d2t())
)
case(
    "sglang-layers-names-before-0.5.12",
    {"DF210"},
    {"DF201"},
    engines=("sglang==0.5.6",),
    verdict="drafts-garbage",
)(with_target(f.modelopt()))
case(
    "sglang-layers-names-before-0.4.9-stacked",
    {"DF201", "DF210"},
    engines=("sglang==0.4.8",),
    verdict="incompatible",
)(with_target(f.modelopt()))
case("sglang-cuda-graph-ids", {"DF309"}, engines=("sglang==0.5.6",), verdict="degraded")(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("sglang-cuda-graph-fixed-0.5.11", set(), {"DF309", "DF301"}, engines=("sglang==0.5.11",))(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("sglang-aux-ids-before-0.4.9", {"DF301"}, engines=("sglang==0.4.8",))(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case(
    "sglang-draft-context-refused",
    {"DF506"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
)(with_target(f.specforge(), max_position_embeddings=8192))
case(
    "sglang-deepseek-ids-before-0.5.13",
    {"DF301"},
    engines=("sglang==0.5.12",),
)(with_target(f.specforge(nested_aux=[2, 4, 5]), architectures=["DeepseekV3ForCausalLM"]))
case(
    "sglang-deepseek-ids-0.5.13",
    set(),
    {"DF301"},
    engines=("sglang==0.5.13",),
)(with_target(f.specforge(nested_aux=[2, 4, 5]), architectures=["DeepseekV3ForCausalLM"]))
case(
    "sglang-mla-clean",
    set(),
    {"DF101", "DF201", "DF203", "DF205", "DF206", "DF210"},
    engines=("sglang==0.5.23",),
    verdict="compatible",
)(with_target(f.mla_draft()))
case("sglang-mla-before-0.5.12", {"DF101"}, engines=("sglang==0.5.11",), verdict="incompatible")(
    with_target(f.mla_draft())
)

TRT_NEW = {"DF209", "DF210", "DF101", "DF203", "DF205"}

case(
    "trtllm-default-ids-clean",
    set(),
    TRT_NEW | {"DF301"},
    engines=("trtllm==1.4.0rc0",),
    verdict="compatible",
)(with_target(f.specforge()))
case(
    "trtllm-nested-ids-never-read",
    {"DF301"},
    {"DF302"},
    engines=("trtllm==1.4.0rc0",),
    verdict="drafts-garbage",
)(with_target(f.specforge(nested_aux=[1, 3, 6])))
case(
    "trtllm-official-llamaforcausallm",
    set(),
    {"DF101"},
    engines=("trtllm==1.2.0rc2",),
    verdict="compatible",
)(with_target(f.eagle_official()))
case(
    "trtllm-d2t-missing",
    {"DF209"},
    {"DF401"},
    engines=("trtllm==1.4.0rc0",),
    verdict="incompatible",
)(with_target(f.specforge(d2t=False)))
case(
    "trtllm-model-prefix",
    {"DF202"},
    {"DF201", "DF210"},
    engines=("trtllm==1.4.0rc0",),
    verdict="incompatible",
)(with_target(f.specforge().prefix_all("model.")))
case("trtllm-eagle1", {"DF109"}, engines=("trtllm==1.4.0rc0",), verdict="incompatible")(
    with_target(f.eagle1())
)
case(
    "trtllm-layers-names-before-remap",
    {"DF210"},
    engines=("trtllm==1.2.0rc2",),
    verdict="drafts-garbage",
)(with_target(f.modelopt()))


def _tied() -> Draft:
    draft = f.specforge()
    draft.config["tie_word_embeddings"] = True
    return draft


case(
    "sglang-tied-head-reduced-vocab",
    {"DF402"},
    engines=("sglang==0.5.23",),
    verdict="drafts-garbage",
)(with_target(_tied()))
case(
    "sglang-draft-context-silent-before-0.5.1",
    {"DF504"},
    {"DF506"},
    engines=("sglang==0.4.10.post2",),
    verdict="degraded",
)(with_target(f.specforge(), max_position_embeddings=8192))


def _nextn(value: int) -> Draft:
    draft = f.specforge()
    draft.config["num_nextn_predict_layers"] = value
    return draft


case(
    "sglang-nextn-zero-before-0.5.13",
    {"DF117"},
    engines=("sglang==0.5.12",),
    verdict="incompatible",
)(with_target(_nextn(0)))
case("sglang-nextn-zero-0.5.13", set(), {"DF117"}, engines=("sglang==0.5.13",))(
    with_target(_nextn(0))
)


# ------------------------------------------------------------------ DF310 aux id order

case("aux-ids-not-ascending", {"DF310"}, {"DF301", "DF306"}, verdict="drafts-garbage")(
    with_target(f.speculators(aux=[6, 1, 3]))
)
case("aux-ids-not-ascending-vllm-0.16", {"DF310"}, {"DF301"}, engines=("vllm==0.16.0",))(
    with_target(f.speculators(aux=[6, 1, 3]))
)
case("aux-ids-ascending", set(), {"DF310", "DF301"}, verdict="compatible")(
    with_target(f.speculators(aux=[1, 3, 6]))
)
case("aux-ids-not-ascending-other-layers", {"DF301"}, {"DF310"}, engines=("vllm==0.11.0",))(
    with_target(f.speculators(aux=[6, 1, 3]))
)
case(
    "aux-ids-not-ascending-sglang",
    {"DF310"},
    {"DF301"},
    engines=("sglang==0.5.23",),
    verdict="drafts-garbage",
)(with_target(f.specforge(nested_aux=[5, 0, 2])))
case(
    "aux-ids-not-ascending-trtllm",
    {"DF310", "DF302"},
    {"DF301"},
    engines=("trtllm==1.4.0rc0",),
    verdict="drafts-garbage",
)(with_target(f.specforge(nested_aux=[4, 1, 3])))


# No `architectures`: SGLang and TensorRT-LLM's two-model path fail on it too, and the
# checks against the target still run (SGLang's context-length refusal is not hidden).
case(
    "sglang-no-architectures",
    {"DF102", "DF506"},
    {"DF101"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
)(with_target(_arch(None), max_position_embeddings=8192))
case("sglang-empty-architectures", {"DF102"}, {"DF101"}, engines=("sglang==0.5.23",))(
    with_target(_arch([]))
)
case(
    "trtllm-no-architectures-two-model",
    {"DF102"},
    {"DF101"},
    engines=("trtllm==0.20.0",),
    verdict="incompatible",
)(with_target(_arch(None)))
case("trtllm-no-architectures-one-model", set(), {"DF102"}, engines=("trtllm==1.4.0rc0",))(
    with_target(_arch(None))
)
# Before 1.1 the two-model lookup only prefixes "EAGLE3" (no "Eagle3" strip): the SpecForge
# name becomes EAGLE3LlamaForCausalLMEagle3 and is unknown; LlamaForCausalLM resolves.
case(
    "trtllm-0.20-eagle3-suffix-unknown",
    {"DF101"},
    engines=("trtllm==0.20.0",),
    verdict="incompatible",
)(with_target(_arch(["LlamaForCausalLMEagle3"])))
case("trtllm-0.20-llamaforcausallm", set(), {"DF101"}, engines=("trtllm==0.20.0",))(
    with_target(_arch(["LlamaForCausalLM"]))
)


# ------------------------------------------------------------------ serving settings (DF55x)

_SGLANG_LAUNCH = (
    "python -m sglang.launch_server --model-path T --tp 8 --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path D"
)
_VLLM_SPEC = '{"method": "eagle3", "model": "D", "num_speculative_tokens": 3%s}'


def _vllm_launch(flags: str, draft_tp: int | None = None) -> str:
    extra = f', "draft_tensor_parallel_size": {draft_tp}' if draft_tp is not None else ""
    return f"vllm serve T {flags} --speculative-config '{_VLLM_SPEC % extra}'"


def _mla_target(draft: Draft) -> Builder:
    """A tiny DeepSeek-V3 / Kimi-K2-shaped target config (MLA: `kv_lora_rank`)."""

    def build(tmp: Path) -> tuple[Path, Path | None]:
        return draft.write(tmp / "draft"), f.kimi_mla_target(tmp / "target")

    return build


case(
    "serve-sglang-pp-eagle3",
    {"DF550"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
    serve_args=_SGLANG_LAUNCH + " --pp-size 2",
)(with_target(f.specforge()))
case(
    "serve-sglang-one-stage",
    set(),
    {"DF550", "DF553", "DF554"},
    engines=("sglang==0.5.23",),
    verdict="compatible",
    serve_args=_SGLANG_LAUNCH + " --pp-size 1",
)(with_target(f.specforge()))
case(
    "serve-vllm-pp-drops-aux",
    {"DF550"},
    engines=("vllm==0.20.0",),
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 4 -pp 2"),
)(with_target(f.speculators()))
case(
    "serve-vllm-pp-carried-for-llama",
    set(),
    {"DF550", "DF551", "DF552"},
    verdict="compatible",
    serve_args=_vllm_launch("-tp 4 -pp 2"),
)(with_target(f.speculators()))
case(
    "serve-vllm-draft-tp-one",
    {"DF551"},
    verdict="compatible",
    serve_args=_vllm_launch("-tp 8", draft_tp=1),
)(with_target(f.speculators()))
case(
    "serve-vllm-draft-tp-two",
    {"DF552"},
    {"DF551"},
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 8", draft_tp=2),
)(with_target(f.speculators()))
case(
    "serve-vllm-unknown-method",
    {"DF559"},
    verdict="incompatible",
    serve_args="vllm serve T -tp 8 --speculative-config "
    '\'{"method": "eagle-3", "model": "D", "num_speculative_tokens": 3}\'',
)(with_target(f.speculators()))
case(
    "serve-vllm-known-method",
    set(),
    {"DF559"},
    verdict="compatible",
    serve_args=_vllm_launch("-tp 8"),
)(with_target(f.speculators()))
case(
    "serve-sglang-mla-backend",
    {"DF553"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
    serve_args=_SGLANG_LAUNCH + " --attention-backend trtllm_mla",
)(_mla_target(f.specforge()))
case(
    "serve-sglang-mla-backend-draft-own",
    set(),
    {"DF553"},
    engines=("sglang==0.5.23",),
    serve_args=_SGLANG_LAUNCH
    + " --attention-backend trtllm_mla --speculative-draft-attention-backend trtllm_mha",
)(_mla_target(f.specforge()))
case(
    "serve-sglang-quantization-flag",
    {"DF554"},
    {"DF515"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
    serve_args=_SGLANG_LAUNCH + " --quantization awq",
)(with_target(f.specforge(), quantization_config=_AWQ))
case(
    "serve-sglang-quantization-opt-out",
    set(),
    {"DF515", "DF554"},
    engines=("sglang==0.5.23",),
    serve_args=_SGLANG_LAUNCH
    + " --quantization awq --speculative-draft-model-quantization unquant",
)(with_target(f.specforge(), quantization_config=_AWQ))

# vLLM before 0.34.0: pipeline stages and a forced MLA-only backend, per release boundary.
case(
    "serve-vllm-pp-v1-runner-until-0.30",
    {"DF550"},
    engines=("vllm==0.29.0",),
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 4 -pp 2"),
)(with_target(f.speculators()))
case(
    "serve-vllm-pp-carried-from-0.30",
    set(),
    {"DF550"},
    engines=("vllm==0.30.0",),
    serve_args=_vllm_launch("-tp 4 -pp 2"),
)(with_target(f.speculators()))
case(
    "serve-vllm-pp-refused-from-0.30",
    {"DF550"},
    engines=("vllm==0.30.0",),
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 4 -pp 2"),
)(_mla_target(f.speculators()))
case(
    "serve-vllm-mla-backend-env",
    {"DF553"},
    engines=("vllm==0.12.0",),
    verdict="incompatible",
    serve_args="VLLM_ATTENTION_BACKEND=FLASHMLA " + _vllm_launch("-tp 8"),
)(_mla_target(f.speculators()))
case(
    "serve-vllm-mla-backend-env-not-read",
    set(),
    {"DF553"},
    engines=("vllm==0.16.0",),
    serve_args="VLLM_ATTENTION_BACKEND=FLASHMLA " + _vllm_launch("-tp 8"),
)(_mla_target(f.speculators()))
case(
    "serve-vllm-mla-backend-v1-runner-own-choice",
    set(),
    {"DF553"},
    engines=("vllm==0.21.0",),
    serve_args=_vllm_launch("-tp 8 --attention-backend FLASHMLA"),
)(_mla_target(f.speculators()))
case(
    "serve-vllm-mla-backend-v2-runner",
    {"DF553"},
    engines=("vllm==0.29.0",),
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 8 --attention-backend FLASHMLA"),
)(_mla_target(f.speculators()))


# TensorRT-LLM launches: `trtllm-serve` with an options YAML from tests/data/trtllm-launch.
_TRTLLM_LAUNCH_DATA = Path(__file__).parent / "data" / "trtllm-launch"
_SPEC_CONFIG_CODES = {"DF555", "DF556", "DF557", "DF558"}


def _trtllm_launch(options: str) -> str:
    return f"trtllm-serve T --tp_size 1 --extra_llm_api_options {_TRTLLM_LAUNCH_DATA / options}"


case(
    "serve-trtllm-no-max-draft-len",
    {"DF555"},
    _SPEC_CONFIG_CODES - {"DF555"},
    engines=("trtllm==1.2.0",),
    verdict="incompatible",
    serve_args=_trtllm_launch("no-max-draft-len.yaml"),
)(with_target(f.specforge()))
case(
    "serve-trtllm-draft-key-of-a-later-release",
    {"DF556"},
    _SPEC_CONFIG_CODES - {"DF556"},
    engines=("trtllm==1.2.0",),
    verdict="incompatible",
    serve_args=_trtllm_launch("speculative-model-key.yaml"),
)(with_target(f.specforge()))
case(
    "serve-trtllm-no-draft",
    {"DF557"},
    _SPEC_CONFIG_CODES - {"DF557"},
    engines=("trtllm==1.2.0",),
    verdict="incompatible",
    serve_args=_trtllm_launch("no-draft.yaml"),
)(with_target(f.specforge()))
case(
    "serve-trtllm-eagle3-decoding-type-too-early",
    {"DF558", "DF556"},
    {"DF555", "DF557"},
    engines=("trtllm==1.2.0",),
    verdict="incompatible",
    serve_args=_trtllm_launch("eagle3-speculative-model.yaml"),
)(with_target(f.specforge()))
case(
    "serve-trtllm-eagle3-speculative-model-on-1.4",
    set(),
    _SPEC_CONFIG_CODES,
    engines=("trtllm==1.4.0rc0",),
    serve_args=_trtllm_launch("eagle3-speculative-model.yaml"),
)(with_target(f.specforge()))
case(
    "serve-trtllm-release-keys",
    set(),
    _SPEC_CONFIG_CODES,
    engines=("trtllm==1.2.0",),
    serve_args=_trtllm_launch("eagle-speculative-model-dir.yaml"),
)(with_target(f.specforge()))
