"""Rule cases — DF2xx: tensor names, shapes and dtypes; quantized drafts; producers that
are not EAGLE-3."""

from __future__ import annotations

from pathlib import Path

from tests import factory as f
from tests.cases.base import Builder, case, no_target, with_target
from tests.factory import Draft

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
# One projection oversized, the others as the config says: no config value explains it.
case("q-proj-oversized", {"DF204"}, {"DF203", "DF212"}, verdict="drafts-garbage", oracle="12")(
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
    "head-dim-not-declared",
    {"DF208"},
    {"DF203", "DF204", "DF212"},
    verdict="drafts-garbage",
    oracle="12c",
)(with_target(_head_dim_undeclared()))


# A declared dimension that contradicts the stored tensors: one finding at the config key
# (DF212), with the per-tensor shape findings folded into it.
def _speculators_head_dim(declared: int, stored: int = 2 * f.HEAD_DIM) -> Draft:
    """A speculators draft whose `transformer_layer_config.head_dim` is `declared` while its
    projections hold 4 heads of `stored` (the Kimi-K2 story in miniature: 16 = 64/4)."""
    draft = f.speculators(aux=[2, 4, 5], head_dim=declared)
    draft.tensors = f.eagle3_tensors(naming="layers", embed=True, head_dim=stored)
    return draft


_flat = f.specforge_with_dims


_FOLDED = {"DF203", "DF204", "DF208"}
case(
    "head-dim-contradicts-tensors-speculators",
    {"DF212"},
    _FOLDED,
    verdict="drafts-garbage",
    oracle="hd1",
)(with_target(_speculators_head_dim(f.HEAD_DIM)))
case(
    "head-dim-contradicts-tensors-specforge",
    {"DF212"},
    _FOLDED,
    verdict="drafts-garbage",
    oracle="hd2",
)(with_target(_flat({"head_dim": 32}, head_dim=16)))
case(
    "head-dim-contradicts-tensors-sglang",
    {"DF212"},
    _FOLDED,
    engines=("sglang==0.5.23",),
    verdict="drafts-garbage",
)(with_target(_flat({"head_dim": 32}, head_dim=16)))
# TensorRT-LLM copies weights whole: the same contradiction stops start-up.
case(
    "head-dim-contradicts-tensors-trtllm",
    {"DF212"},
    _FOLDED,
    engines=("trtllm",),
    verdict="incompatible",
)(with_target(_flat({"head_dim": 32}, head_dim=16)))
# Declared wider than trained: the stored projections are too small, and the loader refuses.
case(
    "head-dim-wider-than-tensors",
    {"DF212"},
    _FOLDED,
    verdict="incompatible",
    oracle="hd3",
)(with_target(_flat({"head_dim": 32}, head_dim=48)))
case(
    "kv-heads-contradict-tensors",
    {"DF212"},
    _FOLDED,
    verdict="drafts-garbage",
    oracle="hd4",
)(with_target(_flat({}, num_key_value_heads=1)))
case(
    "intermediate-size-contradicts-tensors",
    {"DF212"},
    _FOLDED,
    verdict="drafts-garbage",
    oracle="hd5",
)(with_target(_flat({}, intermediate_size=96)))
# 8 heads of 16 stored, 4 heads of 16 declared and no `num_key_value_heads`: 8 heads or a
# head_dim of 32 both give every stored shape; DF212 names both and chooses neither.
case(
    "heads-or-head-dim-ambiguous",
    {"DF212"},
    _FOLDED,
    verdict="drafts-garbage",
    oracle="hd6",
)(with_target(_flat({"heads": 8, "kv": 8}, num_key_value_heads=None)))
