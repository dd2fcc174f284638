"""Rule cases — MTP layers of the target (DF14x, DF22x, DF540-DF542): a target that carries its own
MTP (NextN) layers, served as its own draft. Each expected verdict is what the release's own
code did with the same target shape on a CPU (dev/mtp-oracle-results.md), or, where marked
`read`, what its code was read to do."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import factory as f
from tests.cases.base import Builder, case
from tests.mtp_factory import mtp_target, nextn_export

V34, V0102, SGL = "vllm==0.34.0", "vllm==0.10.2", "sglang==0.5.23"


def _vllm(method: str = "mtp", k: int | None = 1, model: bool = False) -> str:
    keys = [f'"method": "{method}"']
    if model:
        keys.append('"model": "T"')
    if k is not None:
        keys.append(f'"num_speculative_tokens": {k}')
    return "vllm serve T --speculative-config '{" + ", ".join(keys) + "}'"


def _sglang(steps: int | None = 1, algorithm: str = "NEXTN", extra: str = "") -> str:
    flags = f" --speculative-num-steps {steps} --speculative-eagle-topk 1" if steps else ""
    flags += f" --speculative-num-draft-tokens {steps + 1}" if steps else ""
    return (
        f"python -m sglang.launch_server --model-path T --speculative-algorithm {algorithm}"
        + flags
        + extra
    )


def target(
    family: str = "deepseek_v3", edit: Callable[[dict[str, Any]], None] | None = None, **kw: Any
) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        path = mtp_target(tmp / "target", family, **kw)
        if edit is not None:
            config = json.loads((path / "config.json").read_text())
            edit(config)
            (path / "config.json").write_text(json.dumps(config))
        return path, None

    return build


def _v32(config: dict[str, Any]) -> None:
    config["architectures"] = ["DeepseekV32ForCausalLM"]
    config["model_type"] = "deepseek_v32"


QUIET = {
    "DF140",
    "DF141",
    "DF142",
    "DF143",
    "DF145",
    "DF146",
    "DF147",
    "DF220",
    "DF221",
    "DF222",
    "DF540",
    "DF541",
    "DF542",
}

case(
    "mtp-deepseek-clean", set(), QUIET, serve_args=_vllm(), verdict="compatible", oracle="ds_v3_k1"
)(target())
case(
    "mtp-deepseek-clean-sglang",
    set(),
    QUIET,
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="compatible",
    oracle="ds_v3_k1",
)(target())
case(
    "mtp-deepseek-method-flag",
    set(),
    QUIET - {"DF141", "DF142", "DF146", "DF147"},
    method="mtp",
    verdict="compatible",
)(target(sharded=False))
case("mtp-glm-clean", set(), QUIET, serve_args=_vllm(k=2), verdict="compatible", oracle="glm45_k1")(
    target("glm4_moe")
)
case(
    "mtp-qwen3-next-clean",
    {"DF144"},
    QUIET,
    serve_args=_vllm(),
    verdict="compatible",
    oracle="qwen3_next_k1",
)(target("qwen3_next", depth=None))

# R1: a family the release has no MTP class for
case(
    "mtp-family-unserved",
    {"DF140"},
    engines=(V0102,),
    serve_args=_vllm("deepseek_mtp"),
    verdict="incompatible",
)(target(edit=_v32))
case("mtp-family-served", set(), {"DF140"}, serve_args=_vllm(), verdict="compatible")(
    target(edit=_v32)
)
# R2: method names
case(
    "mtp-method-deprecated-alias",
    {"DF141"},
    serve_args=_vllm("deepseek_mtp"),
    verdict="compatible",
    oracle="ds_v3_alias_deepseek_mtp",
)(target())
case(
    "mtp-method-not-in-release",
    {"DF141"},
    engines=(V0102,),
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="glm45_k1 (0.10.2)",
)(target("glm4_moe"))
# R3: the token count
case(
    "mtp-no-token-count",
    {"DF142"},
    serve_args=_vllm(k=None),
    verdict="incompatible",
    oracle="ds_v3_nokey",
)(target())
# ... also with the target named as the draft: vLLM 0.34.0's MTP config compares the missing
# count with 1 before the depth defaults it (TypeError)
case(
    "mtp-no-token-count-model-named",
    {"DF142"},
    serve_args=_vllm(k=None, model=True),
    verdict="incompatible",
    oracle="ds self-draft without a count (mtp_oracle.py --draft, no --num-speculative-tokens)",
)(target())
case(
    "mtp-sglang-default-steps",
    {"DF142"},
    engines=(SGL,),
    serve_args=_sglang(None),
    verdict="compatible",
    oracle="ds_v3_nokey (sglang)",
)(target())
case(
    "mtp-sglang-unknown-algorithm",
    {"DF146"},
    engines=(SGL,),
    serve_args=_sglang(algorithm="MTP"),
    verdict="incompatible",
    oracle="launch_oracle.py (sglang 0.5.23): `Unknown speculative algorithm name: MTP`",
)(target())
# R4: the draft path a release needs
case(
    "mtp-glm-draft-path-required",
    {"DF147"},
    engines=(V0102,),
    serve_args=_vllm("deepseek_mtp"),
    verdict="incompatible",
    oracle="glm45_deepseek_mtp_k1 (0.10.2)",
)(target("glm4_moe"))
case(
    "mtp-glm-draft-path-given",
    set(),
    {"DF147"},
    engines=(V0102,),
    serve_args=_vllm("deepseek_mtp", model=True),
    verdict="compatible",
    oracle="glm45_draft_self_k1 (0.10.2)",
)(target("glm4_moe"))
# R5 / R6: depth 0 and absent
case(
    "mtp-depth-zero",
    {"DF143"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="ds_v3_depth0_k1",
)(target(depth=0))
case(
    "mtp-depth-zero-sglang",
    {"DF143"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="incompatible",
    oracle="ds_v3_depth0_k1 (sglang)",
)(target(depth=0))
case(
    "mtp-depth-absent-reads-one",
    {"DF144"},
    {"DF143", "DF220"},
    serve_args=_vllm(),
    verdict="compatible",
    oracle="ds_v3_depth_absent_k1",
)(target(depth=None))
case(
    "mtp-depth-absent-refused",
    {"DF144"},
    engines=(V0102,),
    serve_args=_vllm("deepseek_mtp", model=True),
    verdict="incompatible",
    oracle="glm45_depth_absent_draft_self_k1 (0.10.2)",
)(target("glm4_moe", depth=None))
case(
    "mtp-depth-absent-refused-glm47-flash",
    {"DF144"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="g_glml_depth_absent_k1 (dev/mtp_corpus.py)",
)(target("glm4_moe_lite", depth=None))
case(
    "mtp-depth-absent-refused-glm47-flash-sglang",
    {"DF144"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="incompatible",
    oracle="g_glml_depth_absent_k1 (sglang, dev/mtp_corpus.py)",
)(target("glm4_moe_lite", depth=None))
# SGLang's config rewrite sets a Qwen3-Next draft's depth to 1, whatever the config says
case(
    "mtp-depth-zero-forced-one-sglang",
    set(),
    {"DF143", "DF144", "DF145"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="compatible",
    oracle="g_qn_depth0_k1 (sglang, dev/mtp_corpus.py)",
)(target("qwen3_next", depth=0))
# R7: depth against the token count
case(
    "mtp-depth-two-k3",
    {"DF145"},
    serve_args=_vllm(k=3),
    verdict="incompatible",
    oracle="ds_v3_nextn2_k3",
)(target(depth=2, ship=2))
case(
    "mtp-depth-two-k4",
    set(),
    {"DF145", "DF220"},
    serve_args=_vllm(k=4),
    verdict="compatible",
    oracle="ds_v3_nextn2_k4",
)(target(depth=2, ship=2))
case(
    "mtp-depth-two-sglang",
    {"DF145"},
    engines=(SGL,),
    serve_args=_sglang(2),
    verdict="incompatible",
    oracle="ds_v3_nextn2_k2 (sglang)",
)(target(depth=2, ship=2))
# R8: the MTP layer dropped by the export
case(
    "mtp-layer-dropped",
    {"DF220"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="ds_v3_no_mtp_k1",
)(target(ship=0))
case(
    "mtp-layer-dropped-sglang",
    {"DF220"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="drafts-garbage",
    oracle="ds_v3_no_mtp_k1 (sglang)",
)(target(ship=0))
case("mtp-layer-dropped-fp8", {"DF220"}, serve_args=_vllm(), verdict="drafts-garbage")(
    target(ship=0, quant="fp8")
)
case("mtp-layer-renamed", {"DF220"}, serve_args=_vllm(), verdict="incompatible")(
    target(rename="mtp.layers.0.")
)
# R9: one tensor missing
case(
    "mtp-tensor-missing",
    {"DF221"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="ds_v3_missing_eh_k1",
)(target(drop=("eh_proj.weight",)))
case(
    "mtp-tensor-missing-sglang",
    {"DF221"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="drafts-garbage",
    oracle="ds_v3_missing_eh_k1 (sglang)",
)(target(drop=("eh_proj.weight",)))
# a tensor under a name the MTP class has no parameter for: vLLM 0.34.0 looks it up and
# stops; SGLang 0.5.23's DeepSeek loader skips it (the module meant stays missing)
case(
    "mtp-tensor-unmapped",
    {"DF221", "DF222"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="ds_retag_eh_k1 (dev/mtp_corpus.py)",
)(target(retag=(("eh_proj.weight", "e_proj.weight"),)))
case(
    "mtp-tensor-unmapped-skipped",
    {"DF221"},
    {"DF222"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="drafts-garbage",
    oracle="ds_retag_eh_k1 (sglang, dev/mtp_corpus.py)",
)(target(retag=(("eh_proj.weight", "e_proj.weight"),)))
# an MTP layer shipped beyond the declared depth: vLLM 0.34.0 stops (the target's own loader
# for DeepSeek-style naming, run with the target's real weights; the MTP loader for Qwen3.5);
# SGLang 0.5.23 passes it over
case(
    "mtp-layer-beyond-depth",
    {"DF222"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="ds_depth1_ship2_k1 (dev/mtp_corpus.py: ORACLE_BLIND)",
)(target(ship=2))
case(
    "mtp-layer-beyond-depth-qwen3-5",
    {"DF222"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="q35_depth1_ship2_k1 (dev/mtp_corpus.py)",
)(target("qwen3_5", ship=2))
case(
    "mtp-layer-beyond-depth-sglang",
    set(),
    {"DF222"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="compatible",
    oracle="ds_depth1_ship2_k1 (sglang, dev/mtp_corpus.py)",
)(target(ship=2))
# vLLM 0.34's load check leaves out modules with a quantization method (its Linear layers):
# labelled by oracle runs on the engine-ready targets of dev/mtp_corpus.py
case(
    "mtp-linear-missing-unchecked",
    {"DF221"},
    serve_args=_vllm(),
    verdict="drafts-garbage",
    oracle="ds_no_o_proj_k1 (dev/mtp_corpus.py)",
)(target(drop=("o_proj.weight",)))
case(
    "mtp-qwen3-next-fc-missing-unchecked",
    {"DF221"},
    {"DF220"},
    serve_args=_vllm(),
    verdict="drafts-garbage",
    oracle="qn_no_fc_k1 (dev/mtp_corpus.py)",
)(target("qwen3_next", depth=None, drop=("fc.weight",)))
case(
    "mtp-deepseek-head-from-target",
    set(),
    {"DF221"},
    serve_args=_vllm(),
    verdict="compatible",
    oracle="ds_no_head_k1 (dev/mtp_corpus.py)",
)(target(drop=("shared_head.head.weight",)))
case(
    "mtp-norm-missing-checked",
    {"DF221"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="glm_no_post_norm_k1 (dev/mtp_corpus.py)",
)(target("glm4_moe", drop=("post_attention_layernorm.weight",)))
case(
    "mtp-glm-head-from-target",
    set(),
    {"DF221"},
    serve_args=_vllm(),
    verdict="compatible",
    oracle="glm46_no_head_k1",
)(target("glm4_moe", drop=("shared_head.head.weight", "embed_tokens.weight")))
case(
    "mtp-glm-head-required",
    {"DF221"},
    engines=(V0102,),
    serve_args=_vllm("deepseek_mtp", model=True),
    verdict="incompatible",
    oracle="glm46_no_head_draft_self_k1 (0.10.2)",
)(target("glm4_moe", drop=("shared_head.head.weight", "embed_tokens.weight")))
# R10: an unquantized MTP layer in a quantized target
case(
    "mtp-fp8-bf16-not-excluded",
    {"DF540"},
    serve_args=_vllm(),
    verdict="drafts-garbage",
    oracle="ds_v3_fp8_k1",
)(target(quant="fp8"))
case(
    "mtp-fp8-bf16-not-excluded-sglang",
    {"DF540"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="incompatible",
    oracle="ds_v3_fp8_k1 (sglang)",
)(target(quant="fp8"))
case(
    "mtp-glm-fp8-bf16-not-excluded-sglang",
    {"DF540"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="drafts-garbage",
    oracle="glm_fp8_bf16_k1 (sglang, dev/mtp_corpus.py)",
)(target("glm4_moe", quant="fp8"))
case(
    "mtp-glm-fp8-excluded-runtime-names-sglang",
    set(),
    {"DF540"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="compatible",
    oracle="glm_fp8_excluded_runtime_k1 (sglang, dev/mtp_corpus.py)",
)(target("glm4_moe", quant="fp8", exclude="runtime"))
case(
    "mtp-fp8-quantized-like-backbone",
    set(),
    {"DF540"},
    serve_args=_vllm(),
    verdict="compatible",
    oracle="ds_v3_fp8_mtp_fp8_k1",
)(target(quant="fp8", mtp_quantized=True))
case(
    "mtp-fp8-excluded-checkpoint-names",
    set(),
    {"DF540"},
    serve_args=_vllm(),
    verdict="compatible",
    oracle="ds_v3_fp8_excluded_k1",
)(target(quant="fp8", exclude="checkpoint"))
case(
    "mtp-fp8-excluded-checkpoint-names-sglang",
    {"DF540"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="incompatible",
    oracle="ds_v3_fp8_excluded_k1 (sglang)",
)(target(quant="fp8", exclude="checkpoint"))


def _wildcard(config: dict[str, Any]) -> None:
    config["quantization_config"]["modules_to_not_convert"] = ["model.layers.2.*"]


case(
    "mtp-fp8-excluded-by-wildcard",
    {"DF540"},
    serve_args=_vllm(),
    verdict="drafts-garbage",
    oracle="ds_fp8 BF16 MTP layer, `model.layers.2.*` listed (vLLM 0.34.0 matches names exactly)",
)(target(quant="fp8", edit=_wildcard))
# R11: an MTP layer stored quantized, excluded from the quantization (built unquantized)
case(
    "mtp-fp8-quantized-and-excluded",
    {"DF541"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="r11 ds fp8 mtp quantized, checkpoint names listed (vLLM 0.34.0: KeyError)",
)(target(quant="fp8", mtp_quantized=True, exclude="checkpoint"))
case(
    "mtp-compressed-quantized-and-excluded",
    {"DF541"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="r11 ds compressed-tensors mtp quantized, in `ignore` (vLLM 0.34.0: KeyError)",
)(target(quant="fp8", compressed=True, mtp_quantized=True, exclude="checkpoint"))
case(
    "mtp-glm-fp8-quantized-and-excluded-sglang",
    {"DF541"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="drafts-garbage",
    oracle="r11 glm fp8 mtp quantized, runtime names listed (SGLang 0.5.23: scales unused)",
)(target("glm4_moe", quant="fp8", mtp_quantized=True, exclude="runtime"))
# DF542: a quantized MTP layer the release cannot build or load for its family
case(
    "mtp-glm-gptq-shared-experts-sglang",
    {"DF542"},
    {"DF540", "DF541"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="incompatible",
    oracle="glm_gptq_q_nog (SGLang 0.5.23: AttributeError while the layers are built)",
)(target("glm4_moe", quant="gptq_int4", mtp_quantized=True, g_idx=False))
case(
    "mtp-deepseek-awq-stored-sglang",
    set(),
    QUIET,
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="compatible",
    oracle="ds_awq_q (SGLang 0.5.23: loads, `q_a_proj` and `kv_a` joined along the packed dim)",
)(target(quant="awq_int4", mtp_quantized=True))
case(
    "mtp-fp8-quantized-listed-under-other-names-sglang",
    set(),
    {"DF541"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="compatible",
    oracle="r11 ds fp8 mtp quantized, checkpoint names listed (SGLang 0.5.23: not its names)",
)(target(quant="fp8", mtp_quantized=True, exclude="checkpoint"))
case(
    "mtp-fp8-excluded-runtime-names",
    {"DF540"},
    serve_args=_vllm(),
    verdict="drafts-garbage",
    oracle="ds_v3_fp8_excluded_runtime_names_k1",
)(target(quant="fp8", exclude="runtime"))
case(
    "mtp-fp8-excluded-runtime-names-sglang",
    set(),
    {"DF540"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="compatible",
    oracle="ds_v3_fp8_excluded_runtime_names_k1 (sglang)",
)(target(quant="fp8", exclude="runtime"))
case(
    "mtp-fp8-excluded-one-shard",
    {"DF540"},
    serve_args=_vllm(),
    verdict="incompatible",
    oracle="ds_v3_fp8_excluded_partial_k1",
)(target(quant="fp8", exclude="partial"))
case("mtp-compressed-bf16-not-excluded", {"DF540"}, serve_args=_vllm(), verdict="drafts-garbage")(
    target(quant="fp8", compressed=True)
)
case(
    "mtp-compressed-sglang",
    {"DF540"},
    engines=(SGL,),
    serve_args=_sglang(),
    verdict="incompatible",
    oracle="ds_ct_bf16 (SGLang 0.5.23, dev/mtp_oracle_sglang_ct.py: Downcasting not allowed)",
)(target(quant="fp8", compressed=True))
# launches of the wrong kind
case(
    "mtp-eagle-launch-on-target", {"DF146"}, serve_args=_vllm("eagle3", k=2), verdict="incompatible"
)(target())
case("mtp-launch-on-eagle-draft", {"DF146"}, serve_args=_vllm(), verdict="incompatible")(
    lambda tmp: (f.specforge().write(tmp / "draft"), None)
)
case(
    "mtp-sglang-eagle3-on-target",
    {"DF146"},
    engines=(SGL,),
    serve_args=_sglang(algorithm="EAGLE3"),
    verdict="incompatible",
    oracle="ds_eagle3_k1 (sglang, dev/mtp_corpus.py)",
)(target())
case(
    "mtp-sglang-eagle3-on-qwen3-next",
    {"DF146"},
    engines=(SGL,),
    serve_args=_sglang(algorithm="EAGLE3", extra=" --speculative-draft-model-path T"),
    verdict="incompatible",
    oracle="qn_eagle3_k1 (SGLang 0.5.23: no `hot_token_id` on the Qwen3-Next MTP class)",
)(target("qwen3_next", depth=None))
# releases whose MTP handling was not read: unverified, never compatible
case(
    "mtp-release-not-read",
    set(),
    QUIET,
    engines=("vllm==0.9.2",),
    serve_args=_vllm(),
    verdict="unverified",
)(target())
case(
    "mtp-engine-not-read",
    set(),
    QUIET,
    engines=("trtllm==1.2.0",),
    method="mtp",
    verdict="unverified",
)(target())


# TensorRT-LLM 1.2.0rc2 (read, not run: no TensorRT-LLM oracle): `trtllm-serve` with an
# options YAML from tests/data/trtllm-launch.
TRT = "trtllm==1.2.0rc2"
_TRTLLM_LAUNCH_DATA = Path(__file__).parents[1] / "data" / "trtllm-launch"


def _trtllm(options: str) -> str:
    return f"trtllm-serve T --extra_llm_api_options {_TRTLLM_LAUNCH_DATA / options}"


case(
    "mtp-trtllm-vanilla-above-checkpoint",
    {"DF145"},
    QUIET - {"DF145"},
    engines=(TRT,),
    serve_args=_trtllm("mtp-vanilla-3.yaml"),
    verdict="incompatible",
)(target())
case(
    "mtp-trtllm-eagle-reuses-one-layer",
    set(),
    QUIET,
    engines=(TRT,),
    serve_args=_trtllm("mtp-3.yaml"),
    verdict="compatible",
)(target())
case(
    "mtp-trtllm-decoding-type-spelling",
    {"DF141"},
    QUIET - {"DF141"},
    engines=(TRT,),
    serve_args=_trtllm("mtp-lowercase.yaml"),
    verdict="incompatible",
)(target())


def export_beside(config: dict[str, Any] | None = None) -> Builder:
    """A stand-alone NextN export (SGLang's export script's layout) beside its target."""

    def build(tmp: Path) -> tuple[Path, Path | None]:
        target_path = mtp_target(tmp / "target")
        return nextn_export(target_path, tmp / "nextn", config=config), target_path

    return build


# NextN exports (read: the export loads with no comparison to its target, sg_ds_nx_on_glm)
case("nextn-export-clean-sglang", set(), QUIET, engines=(SGL,), verdict="compatible")(
    export_beside()
)
case("nextn-export-mismatch", {"DF148"}, engines=(SGL,), verdict="incompatible")(
    export_beside({"hidden_size": 64})
)
case("nextn-export-vllm", {"DF220"}, engines=(V34,), verdict="incompatible")(export_beside())
