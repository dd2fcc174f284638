"""MTP / NextN drafting: the rules about a target's own MTP layers as a release serves them.

Detected by each engine's MTP procedure (`by_method["mtp"]`: the shared steps of
`draftfit.engines.procedure.mtp_steps`, the engine's own in `engines/<engine>/mtp.py`),
which tags the view's refusals and events with these identities; the rules turn them into
findings.
"""

from __future__ import annotations

from draftfit.rule_ids import (
    MTP_DEPTH_ABSENT,
    MTP_DEPTH_TOKENS,
    MTP_DEPTH_ZERO,
    MTP_DRAFT_PATH_REQUIRED,
    MTP_FAMILY_UNSERVED,
    MTP_LAUNCH_KIND,
    MTP_LAYER_MISSING,
    MTP_METHOD_NAME,
    MTP_QUANT_BUILD_REFUSED,
    MTP_QUANT_EXCLUDED_STORED,
    MTP_QUANT_UNCOVERED,
    MTP_TENSOR_MISSING,
    MTP_TENSOR_UNMAPPED,
    MTP_TOKEN_COUNT_MISSING,
    NEXTN_EXPORT_MISMATCH,
)
from draftfit.rules.base import event_rule


@event_rule(MTP_FAMILY_UNSERVED, "the release has no MTP draft class for the target's family")
def mtp_family_unserved() -> None:
    """## What it checks
    An MTP launch (`{"method": "mtp"}`, `--speculative-algorithm NEXTN`) of a target
    whose family (DeepSeek-V3, GLM-4.5, GLM-5.x, Qwen3-Next, MiMo, ...) the release does
    not rewrite into an MTP draft.

    ## Why it matters
    Each release maps a fixed list of target architectures to MTP draft classes (vLLM's
    `hf_config_override`, SGLang's NextN architecture rewrite). A family missing from that
    list has no MTP class: the engine refuses to start (older vLLM releases have no
    DeepSeek-V3.2 or GLM-5.x MTP, for example).

    A stand-alone GLM NextN export (`Glm4MoeForCausalLMNextN`) named as a vLLM draft is
    refused the same way: vLLM rewrites GLM by the target's own architecture, which the
    export no longer names.

    ## Example
    A `glm_moe_dsa` (GLM-5.x) target served with `deepseek_mtp` by a vLLM release that
    predates GLM-5.x.

    ## Fix
    Serve it with a release that has an MTP class for the family (`draftfit matrix`), or
    without MTP drafting.
    """


@event_rule(MTP_METHOD_NAME, "the MTP method name is one the release does not take")
def mtp_method_name() -> None:
    """## What it checks
    The `method` of a vLLM `--speculative-config` that serves a target's MTP layers.

    ## Why it matters
    Recent vLLM releases take `mtp`, and the older per-family names (`deepseek_mtp`,
    `glm4_moe_mtp`, `qwen3_next_mtp`, ...) with a deprecation warning (then the finding is
    informational: no effect on serving). Older releases have no `mtp`: their method list is
    a closed set (`deepseek_mtp`, `ernie_mtp`, `qwen3_next_mtp`), so `mtp` is refused at
    start-up.

    ## Example
    `vllm serve T --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}'`
    on a vLLM release without the `mtp` method.

    ## Fix
    Use the name the release takes (`mtp` from the releases that have it; `deepseek_mtp`
    for DeepSeek, GLM and MiMo targets on the releases before it).
    """


@event_rule(MTP_TOKEN_COUNT_MISSING, "the MTP launch gives no token count")
def mtp_token_count_missing() -> None:
    """## What it checks
    An MTP launch without the number of tokens drafted per step (vLLM
    `num_speculative_tokens`, SGLang `--speculative-num-steps`).

    ## Why it matters
    vLLM defaults the draft to the target only when `num_speculative_tokens` is
    given, and then refuses the config without it (`num_speculative_tokens must be provided
    with speculative model unless the draft model config contains an n_predict
    parameter`): the engine refuses to start. SGLang picks the steps, top-k and draft
    tokens itself (informational: no effect on serving beyond the defaults).

    ## Example
    `vllm serve T --speculative-config '{"method": "mtp"}'`

    ## Fix
    Give `"num_speculative_tokens": 1` (or the number of MTP layers, or a multiple).
    """


@event_rule(MTP_DEPTH_ZERO, "the target declares 0 MTP layers")
def mtp_depth_zero() -> None:
    """## What it checks
    An MTP launch of a target whose config sets `num_nextn_predict_layers` to 0.

    ## Why it matters
    The depth is what the engine builds the MTP draft from. vLLM divides the token count
    by it while building the speculative config (`ZeroDivisionError: integer modulo by
    zero`); SGLang's NextN loader asserts exactly one layer (`Only 1 nextn layer is
    supported`). Either way the engine refuses to start.

    ## Example
    A DeepSeek-V3 export with `"num_nextn_predict_layers": 0` served with
    `{"method": "mtp", "num_speculative_tokens": 1}`.

    ## Fix
    Set `num_nextn_predict_layers` to the number of MTP layers the checkpoint ships, or
    serve without MTP drafting.
    """


@event_rule(MTP_DEPTH_ABSENT, "the target config has no MTP depth key")
def mtp_depth_absent() -> None:
    """## What it checks
    A target config without its MTP depth key (`num_nextn_predict_layers`) under an MTP
    launch.

    ## Why it matters
    What an absent key means depends on the configuration class of the transformers
    release the engine runs with: transformers 5.x declares a default of 1 for DeepSeek-V3
    and GLM-4.x, so engines that run with it build one MTP layer (informational: no effect
    on serving when that layer ships). With transformers 4.56.1 vLLM reads the missing
    attribute and its start-up fails (`AttributeError`): the engine refuses to start, and
    the finding states the consequence for each release. A target whose config class ships
    with the checkpoint (MiMo-7B's `configuration_mimo.py`) takes that class's default: the
    released one says 0, and vLLM refuses the launch (`integer modulo by zero`).

    ## Example
    A GLM-4.5 config with the key deleted, served by a vLLM release on transformers 4.x.

    ## Fix
    Write `num_nextn_predict_layers` (the number of MTP layers shipped) in config.json.
    """


@event_rule(MTP_DEPTH_TOKENS, "the MTP depth does not fit the launch or the release")
def mtp_depth_vs_tokens() -> None:
    """## What it checks
    The number of MTP layers the target declares against what the release supports and
    the launch's token count.

    ## Why it matters
    vLLM reuses the MTP layers in turn when the token count k is larger than the depth n,
    and refuses k that is not a multiple of n (`num_speculative_tokens:3 must be divisible
    by n_predict=2`). SGLang's DeepSeek and GLM NextN loader supports exactly one MTP
    layer: a target declaring two is refused at start-up (`Only 1 nextn layer is
    supported`). TensorRT-LLM (where its MTP loading was read) runs a one-layer
    checkpoint's layer once per draft token (MTP-Eagle) unless `use_mtp_vanilla` is on;
    vanilla MTP builds one layer per `num_nextn_predict_layers` of the launch, and asking
    for more than the checkpoint ships fails at load (its weights are looked up and missing).

    ## Example
    `"num_nextn_predict_layers": 2` with `"num_speculative_tokens": 3` on vLLM; TensorRT-LLM
    `num_nextn_predict_layers: 3` with `use_mtp_vanilla: true` on a one-layer target.

    ## Fix
    Use a token count equal to the depth or a multiple of it; for SGLang, a copy of the
    config with `num_nextn_predict_layers: 1`; for TensorRT-LLM, at most the checkpoint's
    layers (or `use_mtp_vanilla` off on a one-layer target).
    """


@event_rule(MTP_LAUNCH_KIND, "an MTP launch of an EAGLE draft, or an EAGLE launch of an MTP target")
def mtp_launch_kind() -> None:
    """## What it checks
    A launch whose speculative method does not match the checkpoint: an EAGLE method
    (`eagle3`) on a target that carries MTP layers and no draft named, or an MTP method
    on an EAGLE draft.

    ## Why it matters
    An EAGLE method needs a separate draft checkpoint: vLLM refuses an EAGLE config
    that names none (`num_speculative_tokens was provided but without speculative model`),
    so the engine refuses to start. SGLang's `EAGLE3` on a DeepSeek-V3 or GLM-4.5 target
    takes the target as the draft, builds its NextN class and fails at start-up when
    EAGLE-3 shares the target's embedding with it (the class has no `set_embed`). An MTP
    method on an EAGLE draft finds no MTP class for the draft's config. Where the release's
    outcome was not read (SGLang's EAGLE3 on a Qwen3-Next target, an EAGLE launch that
    names another draft) the finding says so and the verdict is unverified.

    ## Example
    `vllm serve deepseek-ai/DeepSeek-V3 --speculative-config '{"method": "eagle3",
    "num_speculative_tokens": 2}'`

    ## Fix
    Serve the target's MTP layers with the MTP method (`mtp`, `NEXTN`), or an EAGLE draft
    with an EAGLE method (and check that draft with `draftfit check DRAFT --target T`).
    """


@event_rule(MTP_DRAFT_PATH_REQUIRED, "the release needs the MTP draft path in the launch")
def mtp_draft_path_required() -> None:
    """## What it checks
    An MTP launch that names no draft for a family whose MTP draft the release does not
    default to the target.

    ## Why it matters
    Older vLLM releases default the draft to the target only for DeepSeek-V3, MiMo, ERNIE
    and Qwen3-Next: a GLM-4.5 launch without `"model"` is refused (`num_speculative_tokens
    was provided without speculative model.`). SGLang defaults
    `--speculative-draft-model-path` only for DeepSeek, GLM and a few others; Qwen3-Next
    and MiMo need it, or the engine refuses to start.

    For a stand-alone NextN export checked beside its target
    (`draftfit check NEXTN --target TARGET`), a launch that does not name the export as its
    draft serves something else (the target's own MTP layers): the finding says so and the
    verdict is unverified, since the export's check says nothing about that launch.

    ## Example
    A GLM-4.6 target, `{"method": "deepseek_mtp", "num_speculative_tokens": 1}`, on a vLLM
    release that does not default GLM's MTP draft.

    ## Fix
    Name the target itself as the draft (`"model": TARGET`,
    `--speculative-draft-model-path TARGET`).
    """


@event_rule(NEXTN_EXPORT_MISMATCH, "a stand-alone NextN export does not fit its target")
def nextn_export_mismatch() -> None:
    """## What it checks
    A stand-alone NextN export (`DeepseekV3ForCausalLMNextN`: a target's NextN layer stored
    as layer 0 of a one-layer model, `draftfit check NEXTN --target TARGET`) against the
    target it is served beside: the model type, the hidden size, the vocabulary and the
    layer dimensions written in the two configs (`hidden_size`, `vocab_size`,
    `num_attention_heads`, `kv_lora_rank`, `n_routed_experts`, ...).

    ## Why it matters
    The engine builds the NextN layer from the export's own config and loads it without
    comparing it with the target, then feeds it the target's hidden states and embedding
    (SGLang shares the target's `embed_tokens` and `lm_head` with it). An export whose
    hidden size differs fails at the first draft step, at start-up (a shape error when the
    target's hidden states meet `eh_proj`); an export made from another model whose shapes
    happen to fit loads and runs, but its layer was trained on that model's hidden states,
    so every draft is wrong. The finding states the consequence per release.

    ## Example
    `lmsys/DeepSeek-R1-NextN` served beside a GLM-4.5 target, or an export of a 7168-wide
    target served beside a 4096-wide one.

    ## Fix
    Export the NextN layer from the target you serve (SGLang's
    `scripts/export_deepseek_nextn.py --input-dir TARGET`), or serve the target's own MTP
    layers without a separate draft.
    """


@event_rule(MTP_LAYER_MISSING, "a declared MTP layer is not in the checkpoint")
def mtp_layer_missing() -> None:
    """## What it checks
    That every MTP layer the release builds (`model.layers.{L}`, ... for a declared depth,
    `mtp.*` for Qwen3-Next) ships tensors in the checkpoint.

    ## Why it matters
    Exports often drop the MTP layers but keep `num_nextn_predict_layers` (ModelOpt and
    other quantizers). The engine still builds the MTP draft: vLLM's strict load check
    refuses an unquantized target, but the check does not run for quantized ones, and SGLang
    has none: the parameters keep their initial values, so it loads, but drafts garbage
    (acceptance ≈ 0). The finding states the consequence per release and target. Where the
    layer was exported under another prefix, SGLang's MiMo loader (a name holding one of its
    own modules) and Qwen3-Next loader (a name holding `mtp`, such as `model.mtp.layers.0.*`)
    look the tensor up among their parameters and stop the load (KeyError), and vLLM's own
    loader for the target cannot place such a name and stops too, quantized or not (run with
    the target's real weights).

    A stand-alone NextN export (SGLang's `export_deepseek_nextn.py`: the layer stored as
    `model.layers.0`) named as the draft of a vLLM launch is read as a target's MTP layer:
    vLLM builds it at `model.layers.{L}` (the target's layer count) and finds nothing there.

    ## Example
    An FP8 export of a DeepSeek-V3 target without any `model.layers.61.*` tensor.

    ## Fix
    Export the MTP layers with the checkpoint; if there are none, serve without MTP.
    """


@event_rule(MTP_TENSOR_UNMAPPED, "an MTP tensor the engine's loaders map nowhere")
def mtp_tensor_unmapped() -> None:
    """## What it checks
    That each shipped MTP layer holds no module the release's MTP class does not build: none
    other than its own modules (`enorm`, `eh_proj`, `input_proj`, `mtp.fc`, ...) and the
    modules of the target's decoder layers (a tensor renamed by an exporter: `e_proj` for
    `eh_proj`, `lm_head` for `shared_head.head`, `out_proj` for `o_proj`); and that no MTP
    layer is shipped beyond those the release builds for the declared depth
    (`num_nextn_predict_layers` 1 with `model.layers.{L+1}.*` shipped); that no tensor
    outside the shipped MTP layers is one the release's loaders look up (SGLang's
    Qwen3-Next loader: any name holding `mtp`, `model.mtp.layers.0.input_layernorm.weight`;
    its MiMo loader: any name holding one of MiMo's own modules; vLLM's loader for the
    target: any MTP-like name outside the MTP layers); and that a GPTQ MTP
    layer holds no `g_idx` tensor where the release's MTP loader does not drop it.

    ## Why it matters
    vLLM's MTP loaders look every name of the MTP layer up among their parameters and stop at
    load on one they do not have (`KeyError: 'model.layers.61.mtp_block.e_proj.weight'`, or
    `There is no module or parameter named ...`), after the target has loaded. SGLang's MiMo
    and Qwen3-Next loaders do the same; its DeepSeek, GLM and Qwen3.5 NextN loaders skip the
    name, and the module it was meant for is missing (DF221). A layer beyond the declared
    depth stops vLLM too: its target loader skips only the declared MTP layers and loads the
    next one as a decoder layer it does not have (DeepSeek, GLM), or the MTP loader has no
    layer for it (Qwen3.5, MiMo); SGLang passes it over (but for Qwen3-Next). A tensor
    moved out of a shipped layer leaves its module missing (DF221); where the loader also
    looks the moved name up, the load stops there (SGLang's Qwen3-Next loader renames `mtp`
    to `model` in it: `KeyError: 'model.model.layers.0.input_layernorm.weight'`; vLLM's Qwen
    MTP loaders take every name under `mtp.`, its MiMo one every name holding `mtp_layers`,
    and its loader for the target stops on any other such name it cannot place:
    `KeyError: 'mtp.layers.0.input_layernorm.weight'` for DeepSeek-V3). vLLM's
    GPTQ methods register no parameter for GPTQ's `g_idx`: the target's loader drops it, but
    the DeepSeek, GLM and MiMo MTP loaders look it up and stop (Qwen3.5's and Qwen3-Next's drop
    it too). Run on a CPU
    with the engines' own loaders (the target's with its real weights) at the releases the
    engine data names; other releases are reported as not read.

    ## Example
    A DeepSeek-V3 MTP layer whose `eh_proj.weight` was exported as `e_proj.weight`.

    ## Fix
    Store the tensor under the name the engine loads (the name the target's decoder layers,
    or the family's MTP modules, use), or leave a copy outside the MTP layers out of the
    checkpoint; declare every MTP layer shipped in the depth key, or
    ship only the layers declared; export a GPTQ MTP layer without its `g_idx` tensors.
    """


@event_rule(MTP_TENSOR_MISSING, "a tensor the MTP draft loads is missing")
def mtp_tensor_missing() -> None:
    """## What it checks
    That each shipped MTP layer holds every module the release loads from the checkpoint:
    its own modules (`enorm`, `hnorm`, `eh_proj`, `shared_head.norm`, and where the release
    reads it `shared_head.head`) and every module of its decoder layer (those of the
    target's decoder layers); and that a module stored quantized, which the release builds
    quantized, carries the quantization tensors the target's own layers carry for it
    (`weight_scale_inv` beside an FP8 block weight, `weight_scale` beside a
    compressed-tensors one, `input_scale` where the scheme is static, GPTQ's and AWQ's
    `scales`).

    ## Why it matters
    A missing or renamed tensor leaves its parameter at its initial value. vLLM refuses an
    unquantized target at load (`Following weights were not initialized from checkpoint`);
    a quantized target, or SGLang, loads, but drafts garbage. Newer vLLM releases' check
    counts only the modules without a quantization method of their own (the norms, and
    DeepSeek's and GLM's `eh_proj`): a missing projection, expert or Qwen3-Next `mtp.fc`
    loads nothing with no error, and drafts garbage even unquantized. Which tensors are required
    differs: older vLLM releases need the MTP layer's own `shared_head.head` and
    `embed_tokens` (the GLM-4.6 BF16 release lacks them); newer ones and SGLang take them
    from the target. A quantized module without its scale loads with no error on either
    engine (the check does not run for a quantized target) and the scale keeps its initial
    value: every draft is wrong; where only some routed experts lack theirs, the tokens
    routed to those experts are drafted wrong (a warning). Run on a CPU with the engines' own
    loaders for FP8 block and compressed-tensors MTP layers.

    ## Example
    A DeepSeek-V3 MTP layer without `eh_proj.weight`; an FP8 DeepSeek-V3 MTP layer whose
    `self_attn.o_proj.weight_scale_inv` was not exported.

    ## Fix
    Export the MTP layer whole, with the scales of every module it stores quantized (or
    export it unquantized and list it in the quantization config's exclusions).
    """


@event_rule(MTP_QUANT_UNCOVERED, "unquantized MTP layers in a quantized target are not excluded")
def mtp_quant_uncovered() -> None:
    """## What it checks
    A quantized target (FP8, compressed-tensors, ModelOpt FP8 / NVFP4 in
    `hf_quant_config.json`, Quark FP8 / MXFP4 / NVFP4, GPTQ `dynamic` keys, AWQ
    `modules_to_not_convert`) whose MTP layer is stored unquantized (BF16, no scales) while
    the quantization config's exclusion list does not name its modules under the names, and
    the matching rules, of the release and scheme.

    ## Why it matters
    Engines build the MTP block with the target's quantization. vLLM then casts the
    BF16 values into float8 parameters whose scales are never loaded, and its load check
    does not run for quantized targets: it loads, but drafts garbage (acceptance ≈ 0).
    SGLang refuses the BF16 tensor at start-up (`Downcasting not allowed`) where it loads
    a DeepSeek-style (MLA) MTP layer, and casts it silently like vLLM for GLM-4.5; the
    finding states the consequence. The two engines match different names: vLLM the
    checkpoint's (`model.layers.61.self_attn.q_a_proj`), SGLang its runtime ones
    (`model.decoder.self_attn.q_a_proj`, `model.eh_proj`, `model.decoder.mlp.experts`);
    vLLM also needs both shards of a fused module listed.

    Each scheme matches its entries its own way (as the releases read do). vLLM's ModelOpt
    (`exclude_modules`) takes an entry contained in the name or a shell wildcard
    (`model.layers.61*`), and
    quantizes the MTP layer's own head (`shared_head.head`) unless it is excluded too
    (a release that then installs the target's head in its place needs no entry for it);
    SGLang's ModelOpt takes an entry naming the module path of what it builds, or a
    wildcard against the whole runtime name or one of its parts (`model.decoder*`), the
    fused experts by the wildcard only; vLLM's Quark (`exclude`) takes exact names and `re:`
    patterns only, so the `*layers.61.*` wildcards some exports write leave the MTP layer
    quantized. The consequence follows the weight format: an FP8 weight takes the BF16
    values silently (drafts garbage), a packed 4-bit weight (NVFP4, MXFP4) has half the
    BF16 tensor's columns and the load fails on its shape.

    ## Example
    `quant_method: fp8` with `weight_block_size` and no `modules_to_not_convert`, and a
    BF16 `model.layers.61.*`; or a Quark MXFP4 target whose `exclude` lists `*layers.61.*`.

    ## Fix
    Ship the MTP layer quantized like the backbone (the fix for every engine), or add the
    entry the finding names to the file it names (`model.layers.61*` in
    `hf_quant_config.json`'s `exclude_modules` for vLLM's ModelOpt, `model.decoder*` for
    SGLang's; `re:model\\.layers\\.61\\..*` in Quark's `exclude`), or list the modules in
    the exclusion list under the names each engine matches (FP8, compressed-tensors).
    """


@event_rule(
    MTP_QUANT_BUILD_REFUSED,
    "the release cannot build or load the quantized MTP layer of this family",
)
def mtp_quant_build_refused() -> None:
    """## What it checks
    A quantized target whose MTP layer the release builds with a scheme it cannot build
    or load for that family, whatever the exclusion list says about other modules: SGLang
    builds GLM-4.5's MoE block with GPTQ Marlin shared experts and then reads their plain
    `weight`, which a GPTQ layer does not have; it loads a DeepSeek-style layer's GPTQ
    `q_a_proj` and `kv_a_proj_with_mqa` by concatenating their packed tensors along the
    dimension of an unpacked weight, which their shapes refuse; GLM-4.7-Flash's loader
    concatenates those two modules' ModelOpt or Quark FP8 per-tensor scales too, which are scalars
    and cannot be concatenated; and DeepSeek's and GLM-4.5's MoE blocks compare the
    quantization block sizes of their shared experts' `gate_up_proj` and `down_proj`,
    which fails where an exclusion list leaves only `down_proj` unquantized
    (compressed-tensors matches the fused `gate_up_proj` by that name, not by its shards').

    ## Why it matters
    The engine stops at start-up, after the target is on the GPUs. The same code builds
    and loads the backbone's layers, so a backbone quantized the same way stops too: the
    finding names the MTP layer, the fix covers both. Run on a CPU with the engine's own
    build and loader (the Marlin kernel choice answered as on a GPU, ModelOpt's
    and Quark's steps after loading skipped) at the releases the engine data names.

    ## Example
    A GLM-4.5 GPTQ target (`quant_method: gptq`) with no `-:` key for the shared experts,
    served with `--speculative-algorithm NEXTN` by SGLang.

    ## Fix
    Leave the modules the finding names unquantized (a `-:` key of `dynamic` matching
    them, in the backbone's layers and the MTP layer, stored BF16; for compressed-tensors,
    the fused `gate_up_proj` by that name, or one `re:` pattern of the whole MTP layer; for
    GLM-4.7-Flash's per-tensor scalars, `q_a_proj` and `kv_a_proj_with_mqa` stored BF16 in
    every layer), or serve the target with a release that loads them (`draftfit matrix`).
    """


@event_rule(
    MTP_QUANT_EXCLUDED_STORED,
    "an MTP layer stored quantized is excluded from the quantization",
)
def mtp_quantized_layer_excluded() -> None:
    """## What it checks
    The inverse of DF540: a quantized target whose MTP layer is stored quantized like the
    backbone (FP8 weights with their scales) while the quantization config's exclusion
    list names its modules under the names the release matches, so the release builds
    them unquantized.

    ## Why it matters
    The engine then has no parameter for the scales and a plain weight for the quantized
    values. vLLM refuses at load (`KeyError: ...weight_scale_inv`, for DeepSeek-V3 and
    GLM-4.5 MTP layers listed under the checkpoint's names); SGLang refuses a
    DeepSeek-style MTP layer listed under its runtime names the same way, and loads a
    GLM-4.5 one with the FP8 values read as weights and the scales dropped: no error, and
    every draft is wrong. Both were run on a CPU with the engines' own loaders at the
    releases the engine data names; other releases and schemes are reported as not read.

    ## Example
    `quant_method: fp8` whose `modules_to_not_convert` lists `model.layers.61.self_attn.*`
    while `model.layers.61.self_attn.q_a_proj.weight` is float8 with a `weight_scale_inv`.

    ## Fix
    Take the MTP layer's modules out of the exclusion list: they are stored quantized like
    the backbone, and the engine builds them so. `draftfit convert TARGET --method mtp
    --engine ENGINE==VERSION -o OUT` does it for FP8 and compressed-tensors configs (no
    tensor byte changes) where each entry it takes out names no backbone module; an entry
    that names both (a pattern such as `re:.*self_attn.*`) must be replaced by hand. If the
    layer must stay excluded, store it unquantized (BF16).
    """
