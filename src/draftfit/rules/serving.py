"""Rules about the launch's serving settings (`--serve-config`, `--serve-args`).

They judge how the draft is run next to the target: parallel layout, attention backend and
quantization flags, and TensorRT-LLM's `speculative_config` itself. Each runs only when
settings were given for the engine (`needs_serve`); otherwise it is listed as skipped and the
verdict is that of a default launch. Detection lives in
each engine folder's `launch_checks` (:mod:`draftfit.engines.launch_checks`).
"""

from __future__ import annotations

from draftfit.rule_ids import (
    DECODING_TYPE_UNKNOWN,
    DRAFT_MLA_ATTENTION_BACKEND,
    DRAFT_PATH_KEY_UNREAD,
    DRAFT_PATH_MISSING,
    DRAFT_QUANTIZATION_FLAG_INHERITED,
    DRAFT_TENSOR_PARALLEL_IGNORED,
    DRAFT_TENSOR_PARALLEL_REFUSED,
    MAX_DRAFT_LEN_MISSING,
    PIPELINE_PARALLEL_AUX_STATES,
    REMOTE_CODE_NOT_TRUSTED,
    SERVE_SETTING_INVALID,
)
from draftfit.rules.base import event_rule


@event_rule(
    PIPELINE_PARALLEL_AUX_STATES,
    "pipeline parallelism loses or refuses the EAGLE-3 aux hidden states",
    needs_serve=True,
)
def pipeline_parallel_aux_states() -> None:
    """## What it checks
    A launch that splits the target into pipeline stages (`--pipeline-parallel-size`,
    `--pp-size` > 1) to serve an EAGLE-3 draft.

    ## Why it matters
    The draft reads hidden states captured at several target layers, and they live on
    different stages. SGLang refuses pipeline parallelism with EAGLE3 when it checks
    its arguments (sgl-project/sglang#39644). vLLM's V1 model runner passes only the
    hidden state between stages, so the states captured before the last stage never
    reach the draft and its fc fails with a shape mismatch (vllm-project/vllm#45985).
    vLLM's newer model runner first declined EAGLE-3 with pipeline stages, so the V1
    runner served such a launch whatever the target; later it carries the states, for
    targets whose decoder declares it, and refuses the others at start-up
    (vllm-project/vllm#50514).
    TensorRT-LLM (`--pp_size`) refuses a separate draft model with its pipeline-parallel
    executor loop, so two-model EAGLE-3 (`eagle3_one_model: false`, or the releases before
    one-model EAGLE-3) does not start (NVIDIA/TensorRT-LLM#9009); one-model EAGLE-3 is not
    judged: draftfit has not read whether it carries the aux states across stages.

    ## Example
    `vllm serve meta-llama/Llama-3.1-70B -pp 2 -tp 4 --speculative-config
    '{"method": "eagle3", "model": "D", "num_speculative_tokens": 3}'`

    ## Fix
    Serve with one pipeline stage (tensor parallelism across the GPUs instead), or a
    release that carries aux states across stages for this target.
    """


@event_rule(
    DRAFT_TENSOR_PARALLEL_IGNORED,
    "draft_tensor_parallel_size 1 is ignored for an EAGLE draft",
    needs_serve=True,
)
def draft_tensor_parallel_ignored() -> None:
    """## What it checks
    A vLLM launch whose `speculative_config.draft_tensor_parallel_size` is 1 while the
    target runs with a larger `--tensor-parallel-size`.

    ## Why it matters
    vLLM accepts the setting, but builds EAGLE and EAGLE-3 drafts with the target's
    parallel config: the draft runs sharded at the target's size anyway, so memory and
    latency are not what the launch asked for (vllm-project/vllm#31345, #31398).

    ## Example
    `vllm serve T -tp 8 --speculative-config '{"method": "eagle3", "model": "D",
    "draft_tensor_parallel_size": 1}'`

    ## Fix
    Leave `draft_tensor_parallel_size` out; the draft runs at the target's size.
    """


@event_rule(
    DRAFT_TENSOR_PARALLEL_REFUSED,
    "draft_tensor_parallel_size is neither 1 nor the target's",
    needs_serve=True,
)
def draft_tensor_parallel_refused() -> None:
    """## What it checks
    A vLLM launch whose `speculative_config.draft_tensor_parallel_size` is neither 1
    nor the target's `--tensor-parallel-size`.

    ## Why it matters
    vLLM raises `ValueError: speculative_draft_tensor_parallel_size=... cannot be other
    value than 1 or target model tensor_parallel_size` while it builds its config: the
    server does not start.

    ## Example
    `vllm serve T -tp 8 --speculative-config '{"method": "eagle3", "model": "D",
    "draft_tensor_parallel_size": 2}'`

    ## Fix
    Leave `draft_tensor_parallel_size` out (the target's size).
    """


@event_rule(
    DRAFT_MLA_ATTENTION_BACKEND,
    "a standard-attention draft inherits an MLA-only attention backend",
    needs_target=True,
    needs_serve=True,
)
def draft_mla_attention_backend() -> None:
    """## What it checks
    A launch for an MLA target (DeepSeek-V2/V3, Kimi-K2, GLM-MoE: `kv_lora_rank` in its
    config) with an MLA-only attention backend (SGLang `--attention-backend trtllm_mla` and,
    per release, `tokenspeed_mla`, `cutedsl_mla`; vLLM `--attention-backend FLASHINFER_MLA`,
    `FLASHMLA`, `CUTLASS_MLA`, ..., or in older releases `VLLM_ATTENTION_BACKEND=FLASHMLA`
    before the command), a draft with standard attention (a Llama-style EAGLE-3 draft) and
    no attention backend of the draft's own.

    ## Why it matters
    Without its own backend the draft runs on the target's, and an MLA-only backend
    refuses a model without MLA: start-up fails (SGLang: `ValueError: trtllm_mla backend
    can only be used with MLA models.`, sgl-project/sglang#20298, #23490; vLLM: `Selected
    backend FLASHINFER_MLA is not valid for this configuration`, vllm-project/vllm#39126).
    In vLLM it depends on the release and the model runner: the oldest releases pass a
    forced backend over for layers it does not fit, and some releases' V1 runner chooses
    the draft's backend itself.

    ## Example
    `python -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 --tp 8
    --attention-backend trtllm_mla --speculative-algorithm EAGLE3
    --speculative-draft-model-path D`

    ## Fix
    Give the draft a backend for standard attention: SGLang
    `--speculative-draft-attention-backend` (e.g. `fa3`, `flashinfer`, `trtllm_mha`) where
    the release has it, vLLM `"attention_backend"` in `--speculative-config` where the
    release and runner apply it. Otherwise choose a target backend that runs both (in
    vLLM, force none: it then picks one per layer), upgrade, or serve an MLA draft
    (`Eagle3DeepseekV2ForCausalLM`).
    """


@event_rule(
    DRAFT_QUANTIZATION_FLAG_INHERITED,
    "--quantization is applied to an unquantized draft",
    needs_target=True,
    needs_serve=True,
)
def draft_quantization_flag_inherited() -> None:
    """## What it checks
    An SGLang launch that passes `--quantization METHOD` (a method that needs a stored
    quantization config, not the online `fp8`) for a draft that is not quantized, with
    no `--speculative-draft-model-quantization`.

    ## Why it matters
    SGLang builds the draft with the server's `--quantization` too: the draft has no
    such config, and start-up fails (`Cannot find the config file for awq`). Without
    the launch's settings, DF515 says this may happen; with them, this rule says
    whether it does.

    ## Example
    `python -m sglang.launch_server --model-path T-AWQ --quantization awq
    --speculative-algorithm EAGLE3 --speculative-draft-model-path D`

    ## Fix
    Where the version has it, `--speculative-draft-model-quantization unquant`. Or leave
    `--quantization` out: SGLang reads the target's method from its config.json.
    """


@event_rule(
    MAX_DRAFT_LEN_MISSING,
    "TensorRT-LLM speculative_config has no max_draft_len",
    needs_serve=True,
)
def max_draft_len_missing() -> None:
    """## What it checks
    A TensorRT-LLM launch (`--extra_llm_api_options` YAML, or a YAML given to
    `--serve-config`) whose `speculative_config` names an Eagle `decoding_type` but no
    `max_draft_len`.

    ## Why it matters
    TensorRT-LLM has no default draft length for Eagle: it refuses the speculative config
    at start-up (`max_draft_len must be > 0 for Eagle`; older releases assert
    `max_draft_len is required for Eagle`), so the server does not start.

    ## Example
    `speculative_config: {decoding_type: Eagle, speculative_model_dir: /models/draft}`

    ## Fix
    Add `max_draft_len: N`, the draft tokens proposed per step (e.g. 3).
    """


@event_rule(
    DRAFT_PATH_KEY_UNREAD,
    "TensorRT-LLM speculative_config names the draft with a key the release does not read",
    needs_serve=True,
)
def draft_path_key_unread() -> None:
    """## What it checks
    A TensorRT-LLM launch whose `speculative_config` names the draft with a key that is
    not the one its release reads. The key was renamed more than once:
    `pytorch_eagle_weights_path`, then `pytorch_weights_path`, then `speculative_model_dir`,
    then `speculative_model` (which still accepts `speculative_model_dir` as an alias).

    ## Why it matters
    Where the decoding config is a strict model, it refuses keys it does not declare, so
    the arguments are rejected and the server does not start; where an unknown key is not
    refused, the draft path is missing and start-up fails all the same (`Draft model must
    be provided for EAGLE`).

    ## Example
    `speculative_config: {decoding_type: Eagle, max_draft_len: 3, speculative_model:
    /models/draft}` for a release that reads `speculative_model_dir`.

    ## Fix
    Rename the key to the one the release reads; the finding's fix names it.
    """


@event_rule(
    DRAFT_PATH_MISSING,
    "TensorRT-LLM speculative_config names no draft",
    needs_serve=True,
)
def draft_path_missing() -> None:
    """## What it checks
    A TensorRT-LLM launch whose `speculative_config` names an Eagle `decoding_type` but no
    draft checkpoint under any of the keys TensorRT-LLM has used for it.

    ## Why it matters
    EAGLE-3 needs the draft's weights: TensorRT-LLM raises `ValueError` at start-up
    (`Draft model must be provided for EAGLE` / `Path to EAGLE3 weights must be
    specified.`).

    ## Example
    `speculative_config: {decoding_type: Eagle, max_draft_len: 3}`

    ## Fix
    Add the draft's folder under the key the release reads (the finding's fix names it).
    """


@event_rule(
    DECODING_TYPE_UNKNOWN,
    "TensorRT-LLM decoding_type is not one the release runs EAGLE-3 with",
    needs_serve=True,
)
def decoding_type_unknown() -> None:
    """## What it checks
    A TensorRT-LLM launch whose `speculative_config.decoding_type` is not one of the
    types with which its release runs an EAGLE-3 draft: `Eagle` in every release draftfit
    knows, `Eagle3` only in the later ones.

    ## Why it matters
    The decoding type picks the decoding config class. A name the release does not have
    is rejected while the arguments are parsed, and the server does not start; another
    method's name (`MTP`, `NGram`, ...) does not run the draft as EAGLE-3.

    ## Example
    `speculative_config: {decoding_type: Eagle3, max_draft_len: 3,
    speculative_model_dir: /models/draft}` for a release without `Eagle3`.

    ## Fix
    Use the release's name: `Eagle` (or `Eagle3` where the release has it).
    """


@event_rule(
    SERVE_SETTING_INVALID,
    "a launch setting names nothing the release knows (method, quantization, paths, --model)",
    needs_serve=True,
)
def serve_setting_invalid() -> None:
    """## What it checks
    The values of the launch's settings, not only their types:
    - a vLLM `method` or SGLang `--speculative-algorithm` that is not one with which the
      release serves an EAGLE draft (the finding lists them and suggests the closest; when
      the name is the draft's own method, which the release lacks, it names the first
      release that has it instead: no other name serves the draft);
    - a `quantization` (the target's, or the draft's own) that is not a method name
      (`-1`, `64`; a non-finite number is refused as a usage error);
    - a draft path (`model` in vLLM's speculative config, SGLang's
      `--speculative-draft-model-path`, TensorRT-LLM's `speculative_model_dir`) that exists
      here and is not a folder, such as `/dev/zero`;
    - a draft or target path of a vLLM or SGLang launch that does not exist and is not a
      Hub repository id either (`./draft`, `/models/draft`, `~/draft`, `a/b/c`), at the
      releases whose path lookup was read. A relative path is resolved from the current
      folder, as the engine resolves it from the folder it is started in (the same for a
      path inside a `--serve-config` file or a `vllm serve --config` file: the engine does
      not resolve it from the file's folder). A name shaped like a Hub id (`org/name`, or a
      bare `name`) that is not a folder here is looked up on the Hub (or in its cache) by
      the engine, and is not judged;
    - `vllm serve --model TARGET` at the releases whose parser refuses the option (the word
      `--model` is refused, `--model=TARGET` passes), and at the releases that move it to
      the positional place, a launch that names the target both ways.

    ## Why it matters
    An unknown method name is rejected while the arguments are parsed, or selects another
    speculative method, so the draft is not served as EAGLE; a quantization that names no
    method fails at start-up; a draft path that is a file or a device cannot be loaded; a
    path that is neither a folder nor a Hub id is refused while the model configs are built
    (`Invalid repository ID or local directory specified`); the `--model` option is refused
    while the arguments are parsed. Either way the server does not start.

    ## Example
    `--serve-config '{"method": "eagle-3", "model": "/models/draft"}'`, or
    `vllm serve --model ./Llama-3.1-8B-Instruct --speculative-config '{"method": "eagle3",
    "model": "./no-such-draft", "num_speculative_tokens": 3}'` where `vllm serve` refuses
    `--model`.

    ## Fix
    Use the name the finding suggests (`eagle3`) or the release it names, a quantization
    method the engine has (`fp8`, `awq`, ...) or leave it out, the draft's folder (as the
    engine's working folder sees it) or Hub id as its path, and the target as `vllm serve`'s
    first word.
    """


@event_rule(
    REMOTE_CODE_NOT_TRUSTED,
    "the launch lacks --trust-remote-code for a config the release reads only with its own code",
    needs_serve=True,
)
def remote_code_not_trusted() -> None:
    """## What it checks
    A vLLM or SGLang launch without `--trust-remote-code` whose target's (or draft's)
    `config.json` names code of its own for Transformers' `AutoConfig` (`auto_map`:
    Kimi-K2's `configuration_deepseek.DeepseekV3Config`, Kimi-K2.5's
    `configuration_kimi_k25.KimiK25Config`) for a `model_type` the release does not read
    natively: neither the engine's own config registry nor the Transformers release it
    runs with has a class for it. The engine data lists, per release read, the model types
    it reads natively and the Transformers release the list was taken with.

    ## Why it matters
    The engine builds the model config with Transformers' `AutoConfig`, which refuses a
    config whose code it may not run (`... contains custom code which must be executed to
    correctly load the model ... pass the argument trust_remote_code=True`): the server
    does not start. The draft's config is loaded with the target's setting, so one flag
    covers both. Where the release reads the type natively (recent vLLM and SGLang releases
    have Kimi-K2.5 and Kimi-K2 config classes of their own; older ones have neither), the
    flag is not needed, and the config's own code is not run without it.

    ## Example
    `vllm serve moonshotai/Kimi-K2.5 -tp 8 --speculative-config '{"method": "eagle3",
    "model": "D", "num_speculative_tokens": 3}'` with a vLLM release that has no class for
    `kimi_k25`.

    ## Fix
    Add `--trust-remote-code` (read the config's code first: the engine runs it), or serve
    with a release that reads the model type natively.
    """
