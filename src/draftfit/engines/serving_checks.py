"""What an engine version does with the launch's serving settings (DF550-DF559).

Run by the view builder only when settings were given for this engine (`--serve-config`,
`--serve-args`); each check reads the settings (:class:`~draftfit.serve.settings.ServeSettings`)
and the engine data, and emits an event tagged with the rule that reports it
(:mod:`draftfit.rules.serving`). Without settings these rules are skipped, not guessed.
"""

from __future__ import annotations

import difflib
import os
import re
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.draft.spec import EAGLE3
from draftfit.engines.draft_quant import read_draft_quant
from draftfit.engines.serve import first_release_where
from draftfit.engines.view import Event
from draftfit.location import Location
from draftfit.records import frozen
from draftfit.rule_ids import Consequence
from draftfit.serve.flags import vllm_flag
from draftfit.settings_text import clip

if TYPE_CHECKING:
    from draftfit.engines.builder import BaseBuilder
    from draftfit.engines.profile import Profile
    from draftfit.serve.settings import ServeSettings

SERVE = "serving settings"
# Quantization methods that quantize bf16 weights at load time: an unquantized draft can
# take them (SGLang then quantizes the draft too).
ONLINE_QUANTIZATION = frozenset({"fp8"})


def check_settings(b: BaseBuilder, settings: ServeSettings) -> None:
    """Emit the events for `settings` at the builder's engine version."""
    _launch_flags(b, settings)
    _value_after_switch(b, settings)
    _speculative_config_keys(b, settings)
    _method_known(b, settings)
    _launch_serves_draft(b, settings)
    _token_count_given(b, settings)
    _quantization_names(b, settings)
    _draft_path_is_folder(b, settings)
    if b.p.engine == "vllm":
        _vllm_draft_tp(b, settings)
        _vllm_pipeline_parallel(b, settings)
        _vllm_mla_backend(b, settings)
    elif b.p.engine == "sglang":
        _sglang_pipeline_parallel(b, settings)
        _mla_backend(b, settings)
        _sglang_quantization_flag(b, settings)
    elif b.p.engine == "trtllm":
        _trtllm_pipeline_parallel(b, settings)
        _trtllm_decoding_type(b, settings)
        _trtllm_max_draft_len(b, settings)
        _trtllm_draft_path(b, settings)


# A quantization method's name (`fp8`, `awq_marlin`, `compressed-tensors`, `modelopt_fp4`).
_METHOD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


def _eagle_names(b: BaseBuilder) -> list[str]:
    """The method names with which this vLLM or SGLang release serves an EAGLE draft, as
    the launch writes them (empty for TensorRT-LLM, whose names DF558 judges)."""
    if b.p.engine == "vllm":
        supported = (("eagle3", "eagle3_supported"), ("eagle", "eagle_supported"))
        return [name for name, fact in supported if b.value(fact)]
    if b.p.engine == "sglang":
        return [str(item[0]) for item in b.value("algorithm_names") or [] if item]
    return []


def _method_known(b: BaseBuilder, s: ServeSettings) -> None:
    """vLLM / SGLang: a method name that is not one of this release's EAGLE methods."""
    known = _eagle_names(b)
    named = s.method
    if named is None or not known:
        return
    # vLLM validates the name as written (a Literal of lower-case names: `EAGLE3` is refused,
    # vllm/config/speculative.py:1623-1634@v0.34.0); SGLang's algorithm names take any case.
    if (
        (named in known)
        if b.p.engine == "vllm"
        else (named.strip().lower() in {k.lower() for k in known})
    ):
        return
    flag = "--speculative-algorithm" if b.p.engine == "sglang" else "method"
    close = difflib.get_close_matches(named.lower(), [k.lower() for k in known], n=1)
    use = next((k for k in known if close and k.lower() == close[0]), known[0])
    guess = f". Did you mean `{use}`?" if close else ""
    listed = ", ".join(f"`{k}`" for k in known)
    b.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"`{flag}` is `{clip(named)}`, not a method with which {b.p.title} serves an EAGLE "
        f"draft ({listed}): the launch is refused while its arguments are parsed, or runs "
        f"another method, and the draft is not served as EAGLE{guess}",
        _where(s, "/speculative_config/method" if b.p.engine == "vllm" else "/" + flag[2:]),
        ("eagle3_supported", "eagle_supported") if b.p.engine == "vllm" else ("algorithm_names",),
        fix=f"set `{flag}` to `{use}`",
    )


def _quantization_names(b: BaseBuilder, s: ServeSettings) -> None:
    """A quantization setting that is not a method name (`-1`, `64`)."""
    for field, pointer in (
        ("quantization", "/quantization"),
        ("draft_quantization", "/speculative_config/quantization"),
    ):
        value = getattr(s, field)
        if value is None or _METHOD_NAME.fullmatch(value):
            continue
        b.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"`{pointer[1:]}` is `{clip(value)}`, which names no quantization method: "
            f"{b.p.title} refuses it at start-up",
            _where(s, pointer),
            (),
            fix="give a quantization method by name (`fp8`, `awq`, ...) or leave it out",
        )


def _draft_path_is_folder(b: BaseBuilder, s: ServeSettings) -> None:
    """A draft path that exists here and is not a folder (a file, a device): no engine
    loads a checkpoint from it. A path that does not exist here may be the serving
    machine's or a Hub id, and is not judged."""
    path = s.draft_model
    if not path or not os.path.lexists(path) or os.path.isdir(path):
        return
    key = s.draft_path_key or ("model" if b.p.engine == "vllm" else "draft model path")
    b.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"the draft path `{clip(path)}` (`{key}`) is not a folder: {b.p.title} loads a "
        "draft checkpoint from a folder (or a Hub id) and fails at start-up",
        _where(s, f"/speculative_config/{key}"),
        (),
        fix="name the draft's folder",
    )


# Flags that releases renamed or never had, and what to write instead.
_FLAG_HINTS: dict[str, dict[str, str]] = {
    "vllm": {
        "--tp": "`-tp` / `--tensor-parallel-size`",
        "--pp": "`-pp` / `--pipeline-parallel-size`",
        "--tp-size": "`-tp` / `--tensor-parallel-size`",
        "--speculative-model": "`--speculative-config '{\"model\": DRAFT, ...}'`",
        "--num-speculative-tokens": (
            "`--speculative-config '{\"num_speculative_tokens\": N, ...}'`"
        ),
        "--speculative-draft-tensor-parallel-size": (
            "`--speculative-config '{\"draft_tensor_parallel_size\": N, ...}'`"
        ),
    },
    "sglang": {"--tensor-parallel": "`--tp-size`"},
}


@frozen
class LaunchGrammar:
    """A release's command line as its argument parser declares it (the engine data's
    `launch_grammar`): every option string, those that take no value, and whether a unique
    prefix of a long flag stands for it."""

    flags: frozenset[str]
    switches: frozenset[str]
    abbreviations: bool

    def meaning(self, flag: str) -> list[str]:
        """The flags `flag` stands for: itself, the one flag it abbreviates, several
        (ambiguous) or none (unrecognised)."""
        if flag in self.flags:
            return [flag]
        if not self.abbreviations or not flag.startswith("--"):
            return []
        return sorted(name for name in self.flags if name.startswith(flag))


def launch_grammar(profile: Profile) -> LaunchGrammar | None:
    """`profile`'s command-line grammar, None where the release's parser was not read."""
    if "launch_grammar" not in profile.data.facts:
        return None
    value = profile.fact("launch_grammar").value
    if not isinstance(value, dict) or not value.get("flags"):
        return None
    return LaunchGrammar(
        frozenset(str(f) for f in value["flags"]),
        frozenset(str(f) for f in value.get("no_value") or ()),
        bool(value.get("abbreviations")),
    )


def _launch_flags(b: BaseBuilder, s: ServeSettings) -> None:
    """A flag the release's argument parser does not take (unknown, or an abbreviation two
    of its flags share): the parser prints an error and the server does not start."""
    grammar = launch_grammar(b.p)
    if grammar is None or not s.flags_written:
        return
    prog = "vllm serve" if b.p.engine == "vllm" else "sglang serve"
    for flag in dict.fromkeys(s.flags_written):
        base = flag.split(".", 1)[0] if b.p.engine == "vllm" else flag
        meant = grammar.meaning(base)
        if len(meant) == 1:
            continue
        if meant:
            shown_matches = ", ".join(meant[:6]) + (", ..." if len(meant) > 6 else "")
            printed = f"{prog}: error: ambiguous option: {base} could match {shown_matches}"
            fix = "write the whole flag: " + " or ".join(f"`{m}`" for m in meant[:3])
        else:
            printed = f"{prog}: error: unrecognized arguments: {base}"
            hint = _FLAG_HINTS.get(b.p.engine, {}).get(base)
            if hint is None:
                close = difflib.get_close_matches(base, sorted(grammar.flags), n=2, cutoff=0.75)
                hint = " / ".join(f"`{c}`" for c in close) or None
            fix = f"did you mean {hint}?" if hint else f"leave {base} out"
        b.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"`{clip(base)}`: {b.p.title}'s argument parser does not take it and the server "
            f"does not start (`{clip(printed, 200)}`)",
            _where(s, "/" + clip(base.lstrip("-"))),
            ("launch_grammar",),
            fix=fix,
        )


def _value_after_switch(b: BaseBuilder, s: ServeSettings) -> None:
    """vLLM / SGLang: a word after a flag that takes no value (`--enforce-eager true`,
    `--disable-cuda-graph true`) where the parser has no place for it (vLLM once the model
    was named; SGLang's launch_server takes no positional word): it refuses the launch."""
    grammar = launch_grammar(b.p)
    if grammar is None or not s.words:
        return
    command = ["vllm", "serve"] if b.p.engine == "vllm" else ["-m", "sglang.launch_server"]
    words = list(s.words)
    starts = [i + 2 for i in range(len(words) - 1) if words[i : i + 2] == command]
    if not starts:
        return
    # vLLM's `serve` takes the model as its one positional word; SGLang's takes none.
    model_named = b.p.engine != "vllm"
    prog = "vllm serve" if b.p.engine == "vllm" else "sglang serve"
    index = starts[0]
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-") or word == "-":
            model_named = True  # the model (a positional); a second one is judged below
            continue
        if "=" in word:
            continue
        flag = vllm_flag(word).split(".", 1)[0] if b.p.engine == "vllm" else word
        meant = grammar.meaning(flag)
        if len(meant) != 1:
            return  # an unknown or ambiguous flag is already a finding; stop reading here
        if meant[0] not in grammar.switches:
            index += 1  # its value
            continue
        if index < len(words) and not words[index].startswith("-") and model_named:
            stray = words[index]
            b.refuse(
                rule_ids.SERVE_SETTING_INVALID,
                f"`{clip(word)}` takes no value, so `{clip(stray)}` after it is an extra "
                f"argument: {b.p.title}'s argument parser refuses the launch (`{prog}: "
                f"error: unrecognized arguments: {clip(stray)}`)",
                _where(s, "/" + clip(word.lstrip("-"))),
                ("launch_grammar",),
                fix=f"write `{clip(word)}` alone (it is a switch)",
            )
            return


def _speculative_config_keys(b: BaseBuilder, s: ServeSettings) -> None:
    """vLLM: a `--speculative-config` key the release's SpeculativeConfig has no field for
    (refused while the config is built)."""
    if b.p.engine != "vllm" or not s.spec_keys_written:
        return
    fact = b.p.fact("speculative_config_keys")
    known = [str(k) for k in fact.value or []]
    if not known:
        return  # this release's keys were not read
    for key in dict.fromkeys(s.spec_keys_written):
        if key.replace("-", "_") in known:
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        if key.replace("-", "_") in ("num_spec_tokens", "num_tokens", "spec_tokens"):
            close = ["num_speculative_tokens"]
        b.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"`--speculative-config` key `{clip(key)}`: {b.p.title}'s SpeculativeConfig has "
            "no such field and refuses the launch while it builds the config (an unexpected "
            "keyword argument)",
            _where(s, "/speculative_config/" + clip(key)),
            (),  # no field of that name: the release's fields are the data's items
            fix=f"did you mean `{close[0]}`?" if close else f"leave `{clip(key)}` out",
        )


def _same_draft(b: BaseBuilder, named: str) -> bool | None:
    """Whether the draft path a launch names is the checked draft, as the engine resolves
    it: a folder relative to the engine's working folder (here), or a Hub id matched
    against `hf://` or a Hub cache folder. None when it cannot be told (a path that is not
    a folder here may be the serving machine's; a Hub id where the checked draft's
    repository is not known)."""
    from draftfit.sources.hub import PREFIX  # only a launch's draft path is compared

    source = b.ckpt.source
    if os.path.isdir(named):
        if source.startswith(PREFIX):
            return False
        return os.path.realpath(named) == os.path.realpath(source)
    repo = source[len(PREFIX) :].split("@", 1)[0] if source.startswith(PREFIX) else None
    repo = repo or (b.ckpt.origin.repo_id if b.ckpt.origin is not None else None)
    hub_like = named.count("/") == 1 and not named.startswith((".", "/", "~"))
    if hub_like and repo is not None:
        return named == repo
    return None  # a path of the serving machine, or a Hub id of unknown weights


def _launch_serves_draft(b: BaseBuilder, s: ServeSettings) -> None:
    """vLLM / SGLang: a whole launch that does not serve the checked draft (no draft path,
    another folder; SGLang without a speculative algorithm)."""
    if b.p.engine not in ("vllm", "sglang") or not s.full_launch:
        return
    if b.p.engine == "sglang" and s.method is None:
        b.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            "the launch has no `--speculative-algorithm`: SGLang loads no draft and serves "
            "the target alone, so the checked draft is not what runs",
            _where(s, "/speculative-algorithm"),
            (),
            fix="add `--speculative-algorithm EAGLE3` (or `EAGLE`) and "
            "`--speculative-draft-model-path DRAFT`",
            consequence=Consequence.DRAFT_NOT_SERVED,
        )
        return
    speculative = s.method is not None or s.num_speculative_tokens is not None
    if b.p.engine == "vllm" and not speculative and s.draft_model is None:
        # No speculative config: vLLM serves the target alone. A speculative flag of another
        # spelling (`--speculative-model` of releases before 0.8.3) is judged by the
        # release's grammar instead, not taken for a launch without a draft.
        if not any(_SPECULATIVE_WORD in flag for flag in s.flags_written):
            b.refuse(
                rule_ids.SERVE_SETTING_INVALID,
                "the launch has no `--speculative-config`: vLLM loads no draft and serves the "
                "target alone, so the checked draft is not what runs",
                _where(s, "/speculative_config"),
                (),
                fix='add `--speculative-config \'{"method": "eagle3", "model": DRAFT, '
                '"num_speculative_tokens": 3}\'` (the method of the checked draft)',
                consequence=Consequence.DRAFT_NOT_SERVED,
            )
        return
    key = "model" if b.p.engine == "vllm" else "--speculative-draft-model-path"
    if s.draft_model is None:
        what = (
            "vLLM refuses a speculative config without a draft for EAGLE methods "
            "(ValueError at start-up)"
            if b.p.engine == "vllm"
            else "SGLang loads the target's own weights as the draft"
        )
        b.refuse(
            rule_ids.DRAFT_PATH_MISSING,
            f"the launch names no draft (`{key}`): {what}; the checked draft is not what runs",
            _where(s, "/speculative_config/model" if b.p.engine == "vllm" else "/" + key[2:]),
            (),
            fix=f"name the draft's folder with `{key}`",
        )
        return
    if _same_draft(b, s.draft_model) is not False:
        return
    b.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"the launch's draft path `{clip(s.draft_model)}` (`{key}`) is not the checked "
        f"draft `{clip(b.ckpt.source)}` (paths resolved from the current folder, as the "
        "engine resolves them from its own): the checked draft is not what runs",
        _where(s, "/speculative_config/model" if b.p.engine == "vllm" else "/" + key[2:]),
        (),
        fix=f"check the draft the launch serves (`draftfit check {clip(s.draft_model)}`), "
        "or name the checked draft in the launch",
        consequence=Consequence.DRAFT_NOT_SERVED,
    )


# Part of every vLLM flag that configures speculative decoding, in any release's spelling.
_SPECULATIVE_WORD = "speculative"


def _token_count_given(b: BaseBuilder, s: ServeSettings) -> None:
    """vLLM: a speculative config that names a draft but no `num_speculative_tokens`, for a
    draft whose config has no `n_predict` to take it from: refused while the config is
    built."""
    if b.p.engine != "vllm" or b.value("num_speculative_tokens_required") != "unless-n-predict":
        return
    if s.draft_model is None or s.num_speculative_tokens is not None:
        return
    config = b.ckpt.config or {}
    if config.get("n_predict") is not None:
        return
    b.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"the speculative config names a draft but no `num_speculative_tokens`, and the "
        f"draft's config has no `n_predict` to take it from: {b.p.title} raises ValueError "
        "while it builds the speculative config and does not start",
        _where(s, "/speculative_config/num_speculative_tokens"),
        ("num_speculative_tokens_required",),
        fix='add `"num_speculative_tokens": 3` (or the count the draft was trained for)',
    )


def _where(settings: ServeSettings, pointer: str) -> Location:
    return Location(f"{SERVE} ({settings.given_by})", pointer)


def _vllm_draft_tp(b: BaseBuilder, s: ServeSettings) -> None:
    """vLLM: a draft tensor-parallel size apart from the target's is refused unless it is
    1, and an EAGLE draft runs at the target's size whatever it says."""
    draft_tp, target_tp = s.draft_tensor_parallel_size, s.tensor_parallel_size
    if target_tp is None and s.full_launch:
        target_tp = 1  # a whole launch without -tp runs the target at vLLM's default, 1
    if draft_tp is None or target_tp is None or b.value("draft_tp_choices") is None:
        return  # a speculative config alone does not say the target's size
    if draft_tp == target_tp:
        return
    where = _where(s, "/speculative_config/draft_tensor_parallel_size")
    if draft_tp != 1:
        b.refuse(
            rule_ids.DRAFT_TENSOR_PARALLEL_REFUSED,
            f"draft_tensor_parallel_size is {draft_tp} and the target's tensor-parallel size "
            f"{target_tp}: {b.p.title} accepts only 1 or the target's size and raises "
            "ValueError at start-up",
            where,
            ("draft_tp_choices",),
            fix=f"leave draft_tensor_parallel_size out (the draft then runs at {target_tp})",
        )
        return
    if b.value("draft_tp_eagle_honoured") is False:
        b.event(
            rule_ids.DRAFT_TENSOR_PARALLEL_IGNORED,
            f"draft_tensor_parallel_size is 1 and the target's tensor-parallel size "
            f"{target_tp}: {b.p.title} builds an EAGLE draft with the target's parallel "
            f"config, so the draft runs sharded {target_tp} ways anyway (memory and speed "
            "as at the target's size, not as configured)",
            where,
            ("draft_tp_eagle_honoured",),
            fix="leave draft_tensor_parallel_size out: this version has no unsharded EAGLE draft",
        )


def _pipeline_stages(b: BaseBuilder, s: ServeSettings) -> int | None:
    """The pipeline-parallel size when it splits an EAGLE-3 target, else None."""
    pp = s.pipeline_parallel_size
    if pp is None or pp < 2 or b.method != EAGLE3:
        return None
    return pp


def _sglang_pipeline_parallel(b: BaseBuilder, s: ServeSettings) -> None:
    """SGLang refuses pipeline parallelism with EAGLE3 in its server-argument checks."""
    pp = _pipeline_stages(b, s)
    if pp is None or b.value("pp_with_eagle3") != "refused":
        return
    gpus = pp * (s.tensor_parallel_size or 1)
    b.refuse(
        rule_ids.PIPELINE_PARALLEL_AUX_STATES,
        f"--pp-size {pp} with EAGLE3: {b.p.title} refuses pipeline parallelism with this "
        "speculative algorithm while it checks the server arguments (an assertion), so "
        "the server does not start",
        _where(s, "/pipeline_parallel_size"),
        ("pp_with_eagle3",),
        fix=f"serve with --pp-size 1 (spread the GPUs with --tp-size {gpus} instead)",
    )


def _trtllm_pipeline_parallel(b: BaseBuilder, s: ServeSettings) -> None:
    """TensorRT-LLM refuses a separate draft model (two-model EAGLE-3) with its
    pipeline-parallel executor loop; one-model EAGLE-3 builds no drafter and is not judged."""
    pp = _pipeline_stages(b, s)
    if pp is None or b.value("pp_with_two_model_eagle3") != "refused":
        return
    mode = b.value("one_model_default")
    by_launch = mode == "one-model-default" and s.one_model is False
    if mode != "two-model" and not by_launch:
        return
    gpus = pp * (s.tensor_parallel_size or 1)
    path = (
        "the launch sets `eagle3_one_model: false`"
        if by_launch
        else f"the only EAGLE-3 path of {b.p.title}"
    )
    b.refuse(
        rule_ids.PIPELINE_PARALLEL_AUX_STATES,
        f"pipeline_parallel_size {pp} with two-model EAGLE-3 ({path}): {b.p.title} runs the "
        "draft as a separate model, which its pipeline-parallel executor loop does not "
        "support, so start-up fails (`NotImplementedError: Drafting is not supported for "
        "selected executor loop. Please disable disagg/pipeline parallelism scheduler.`)",
        _where(s, "/pipeline_parallel_size"),
        ("pp_with_two_model_eagle3", "one_model_default"),
        fix=f"serve with --pp_size 1 (spread the GPUs with --tp_size {gpus} instead)"
        + (
            "; or leave `eagle3_one_model` out: the one-model path builds no separate draft "
            "model, so this check does not refuse it (whether it carries the aux states "
            "across stages draftfit has not read)"
            if by_launch
            else ""
        ),
    )


def _vllm_pipeline_parallel(b: BaseBuilder, s: ServeSettings) -> None:
    """vLLM: aux states captured before the last pipeline stage are dropped (older
    releases) or need a target decoder that carries them (refused otherwise)."""
    pp = _pipeline_stages(b, s)
    t = b.target
    if pp is None or t is None:
        return
    mode = b.value("aux_states_over_pp")
    where = _where(s, "/pipeline_parallel_size")
    arch = t.architecture or "this target"
    if mode == "model-flag":
        if arch in (b.value("pp_aux_architectures") or []):
            return
        b.refuse(
            rule_ids.PIPELINE_PARALLEL_AUX_STATES,
            f"--pipeline-parallel-size {pp} with EAGLE-3: {b.p.title} carries aux hidden "
            f"states across pipeline stages only for targets whose decoder declares it, and "
            f"`{arch}` does not: start-up fails (`ValueError: ... does not support eagle3 "
            "with pipeline parallelism`)",
            where,
            ("aux_states_over_pp", "pp_aux_architectures"),
            fix="serve with --pipeline-parallel-size 1 (tensor parallelism instead)",
        )
        return
    if mode != "dropped" or b.view.aux is None or not b.view.aux.used or not t.num_layers:
        return
    n = t.num_layers
    last_start = n - n // pp  # vLLM gives the last stage n // pp layers
    early = [i for i in b.view.aux.used if i <= last_start]
    if not early:
        return
    fixed_in = first_release_where(
        b.p,
        lambda later: (
            later.value("aux_states_over_pp") == "model-flag"
            and arch in (later.value("pp_aux_architectures") or [])
        ),
    )
    b.refuse(
        rule_ids.PIPELINE_PARALLEL_AUX_STATES,
        f"--pipeline-parallel-size {pp} with EAGLE-3: the last of the {pp} stages holds "
        f"layers {last_start}-{n - 1} of {n}, and aux layers {early} (capture-before "
        f"counting) are captured on an earlier stage; {b.p.title} passes only the hidden "
        f"states between stages, so the draft gets {len(b.view.aux.used) - len(early)} of "
        f"its {len(b.view.aux.used)} aux states and its fc fails with a shape mismatch",
        where,
        ("aux_states_over_pp",),
        fix="serve with --pipeline-parallel-size 1 (tensor parallelism instead)"
        + (f", or upgrade to vLLM {fixed_in}, which carries them for `{arch}`" if fixed_in else ""),
    )


def _mla_backend(b: BaseBuilder, s: ServeSettings) -> None:
    """SGLang: an MHA draft next to an MLA target inherits the target's attention backend;
    an MLA-only backend then refuses the draft at start-up."""
    backend = s.attention_backend
    if (
        backend is None
        or b.target is None
        or not b.target.is_mla
        or s.draft_attention_backend is not None
    ):
        return
    if b.family in type(b).mla_families:
        return  # an MLA draft runs on MLA backends
    if backend not in (b.value("mla_only_attention_backends") or []):
        return
    if b.value("draft_attention_backend_default") != "target":
        return
    has_setting = bool(b.value("draft_attention_backend_flag"))
    error = f"`ValueError: {backend} backend can only be used with MLA models.`"
    arrives = first_release_where(
        b.p, lambda later: bool(later.value("draft_attention_backend_flag"))
    )
    fix = (
        "add `--speculative-draft-attention-backend` with a backend for standard "
        "attention (e.g. `fa3`, `flashinfer` or, on Blackwell, `trtllm_mha`), or serve an "
        "MLA draft (`Eagle3DeepseekV2ForCausalLM`)"
        if has_setting
        else f"{b.p.title} has no draft attention backend setting "
        f"(`--speculative-draft-attention-backend` arrives in SGLang {arrives}): choose a "
        "--attention-backend that runs both MLA and standard attention (e.g. "
        "`flashinfer`), upgrade, or serve an MLA draft"
    )
    sources = b.p.item_sources("mla_only_attention_backends", backend) + b.src(
        "draft_attention_backend_default", "draft_attention_backend_flag"
    )
    b.view.refuse(
        Event(
            rule_ids.DRAFT_MLA_ATTENTION_BACKEND,
            f"the target is MLA (`kv_lora_rank`) and the draft uses standard attention; with "
            f"--attention-backend {backend} and no draft backend of its own, {b.p.title} runs "
            f"the draft on {backend} too, which fails at start-up: {error}",
            _where(s, "/attention_backend"),
            sources,
            fix,
        )
    )


ENV_BACKEND = "VLLM_ATTENTION_BACKEND"


def _vllm_forced_backend(b: BaseBuilder, s: ServeSettings) -> tuple[str, str, str] | None:
    """The backend the launch forces at this vLLM release: (name as vLLM reads it, how the
    launch gives it, the settings pointer); None when it forces none this release reads."""
    reads = b.value("attention_backend_setting")
    flag, env = s.attention_backend, s.attention_backend_env
    if reads == "flag-or-env" and flag is not None and env is not None:
        return None  # both at once: vLLM refuses the pair itself (mutually exclusive)
    if flag is not None and reads in ("flag", "flag-or-env"):
        return flag.upper(), f"--attention-backend {flag}", "/attention_backend"
    if env is not None and reads in ("env", "flag-or-env"):
        # checked against the backend names as spelled, case and all (from 0.11.1, where
        # the MLA-only names below start: vllm/envs.py:637@v0.11.1, env_with_choices)
        return env, f"{ENV_BACKEND}={env}", "/attention_backend_env"
    return None


def _per_runner(b: BaseBuilder, key: str) -> object:
    """A fact's value for the runner serving this launch (a table gives it per runner; the
    builder settled the runner, pipeline stages included); None when the value depends on a
    runner draftfit could not settle."""
    value = b.value(key)
    if not isinstance(value, dict):
        return value
    runner = b.view.effective.get("runner")
    return value.get(runner) if isinstance(runner, str) else None


def _own_backend_from(b: BaseBuilder) -> str | None:
    """The first later release from which every release gives an EAGLE draft its own
    attention backend setting, whichever runner serves it."""
    versions = b.p.data.versions
    later = versions[versions.index(b.p.version) + 1 :]
    found: str | None = None
    for version in later:
        if b.p.data.resolve(version).value("draft_attention_backend_flag") is True:
            found = found or version
        else:
            found = None
    return found


def _vllm_mla_backend(b: BaseBuilder, s: ServeSettings) -> None:
    """vLLM: a standard-attention draft next to an MLA target whose launch forces an
    MLA-only backend gets that backend too, where the runner builds the draft with the
    launch's backend, and the backend refuses the draft's layers at start-up."""
    forced = _vllm_forced_backend(b, s)
    if (
        forced is None
        or b.target is None
        or not b.target.is_mla
        or b.family in type(b).mla_families
    ):
        return
    named, how, pointer = forced
    if named not in (b.value("mla_only_attention_backends") or []):
        return
    if _per_runner(b, "draft_attention_backend_default") != "target":
        return
    applies = bool(_per_runner(b, "draft_attention_backend_flag"))
    if s.draft_attention_backend is not None and applies:
        return  # the draft has a backend of its own
    if s.draft_attention_backend is not None and b.value("draft_attention_backend_flag") is False:
        return  # no such key in this release: its speculative config refuses unknown keys
    runner_dependent = isinstance(b.value("draft_attention_backend_default"), dict)
    shown = how.split("=", 1)[1] if pointer != "/attention_backend" else how.split(" ", 1)[1]
    own = (
        f"`attention_backend` {s.draft_attention_backend} in --speculative-config, which "
        "that runner does not apply to an EAGLE draft"
        if s.draft_attention_backend is not None
        else "no draft backend of its own"
    )
    runner = ""
    runs = f"{b.p.title} runs"
    if runner_dependent:
        runner = f" {b.view.effective.get('runner_reason') or b.p.title}:"
        runs = "it runs"
    error = (
        f"`ValueError: Selected backend AttentionBackendEnum.{named} is not valid for this "
        "configuration.` (its reasons include 'non-MLA not supported')"
    )
    if applies:
        fix = (
            'add `"attention_backend": "FLASH_ATTN"` (or another backend for standard '
            "attention) to --speculative-config, or serve an MLA draft"
        )
    else:
        leave = "--attention-backend" if pointer == "/attention_backend" else ENV_BACKEND
        upgrade = _own_backend_from(b)
        fix = (
            f"leave {leave} out (vLLM then picks a backend per layer: an MLA one for the "
            f"target, a standard one for the draft); {b.p.title} gives this draft no "
            "attention backend of its own"
            + (
                f" (from vLLM {upgrade}, `attention_backend` in --speculative-config does)"
                if upgrade
                else ""
            )
            + ", or serve an MLA draft"
        )
    sources = b.p.item_sources("mla_only_attention_backends", named) + b.src(
        "draft_attention_backend_default",
        "draft_attention_backend_flag",
        "attention_backend_setting",
        *(("runner_default",) if runner_dependent else ()),
    )
    b.view.refuse(
        Event(
            rule_ids.DRAFT_MLA_ATTENTION_BACKEND,
            f"the target is MLA (`kv_lora_rank`) and the draft uses standard attention;"
            f"{runner} with {how} and {own}, {runs} the draft on {shown} too, which fails at "
            f"start-up: {error}",
            _where(s, pointer),
            sources,
            fix,
        )
    )


def _sglang_quantization_flag(b: BaseBuilder, s: ServeSettings) -> None:
    """SGLang: `--quantization METHOD` builds the draft with METHOD too; an unquantized draft
    then fails at start-up (unless `--speculative-draft-model-quantization unquant`)."""
    flag = s.quantization
    if flag is None or flag.lower() in ONLINE_QUANTIZATION or b.target is None:
        return
    if not b.value("draft_quantization_inherited") or read_draft_quant(b.config) is not None:
        return
    opt_out = bool(b.value("draft_quantization_opt_out"))
    if opt_out and s.draft_quantization is not None:
        return  # the draft has its own setting (`unquant` keeps it as stored)
    method = b.target.quantization_method
    b.refuse(
        rule_ids.DRAFT_QUANTIZATION_FLAG_INHERITED,
        f"the launch passes --quantization {flag} and the draft is not quantized: "
        f"{b.p.title} builds the draft with `{flag}` too and start-up fails looking for the "
        f"draft's `{flag}` config",
        _where(s, "/quantization"),
        ("draft_quantization_inherited", "draft_quantization_opt_out"),
        fix="pass `--speculative-draft-model-quantization unquant`"
        + (
            f", or leave --quantization out (SGLang reads `{method}` from the target's config)"
            if method is not None
            else ", or leave --quantization out"
        )
        if opt_out
        else f"leave --quantization out ({b.p.title} has no draft quantization setting"
        + (f"; SGLang reads `{method}` from the target's config)" if method else ")"),
    )


def _trtllm_decoding_type(b: BaseBuilder, s: ServeSettings) -> None:
    """TensorRT-LLM: a `decoding_type` that is not one of this version's EAGLE-3 types."""
    named = s.method
    known = [str(t) for t in b.value("decoding_types") or []]
    if named is None or not known or named in known:
        return
    use = "Eagle3" if "Eagle3" in known else known[0]
    listed = ", ".join(f"`{t}`" for t in known)
    # Where the data has the name at other releases, say from when (and how sure that is).
    elsewhere = [e for e in b.p.data.facts["decoding_types"].entries if e.value == named]
    when = ""
    if elsewhere:
        entry = elsewhere[0]
        when = f" (draftfit's data has `{named}` from {entry.since}" + (
            f"; {entry.note})" if entry.note else ")"
        )
    if named.lower().startswith("eagle"):
        why = (
            f"{b.p.title} has no decoding type `{named}`; its EAGLE-3 decoding types are "
            f"{listed}{when}: the LLM API rejects the speculative config while it parses the "
            "arguments, so the server does not start"
        )
    else:
        why = (
            f"`{named}` is not a decoding type with which {b.p.title} runs an EAGLE-3 draft "
            f"({listed}): the launch is refused or runs another method, and the draft is not "
            "served as EAGLE-3"
        )
    b.view.refuse(
        Event(
            rule_ids.DECODING_TYPE_UNKNOWN,
            f"`decoding_type: {named}`: {why}",
            _where(s, "/speculative_config/decoding_type"),
            tuple(e.source for e in elsewhere) + b.src("decoding_types"),
            f"set `decoding_type: {use}`",
        )
    )


def _trtllm_max_draft_len(b: BaseBuilder, s: ServeSettings) -> None:
    """TensorRT-LLM: an Eagle speculative config without `max_draft_len`."""
    if s.method is None or s.max_draft_len is not None or not b.value("max_draft_len_required"):
        return
    b.refuse(
        rule_ids.MAX_DRAFT_LEN_MISSING,
        f"the speculative config has no `max_draft_len`: {b.p.title} requires it for Eagle "
        "and refuses the config at start-up ('max_draft_len must be > 0 for Eagle')",
        _where(s, "/speculative_config"),
        ("max_draft_len_required",),
        fix="add `max_draft_len: N` to speculative_config (the draft tokens per step, e.g. 3)",
    )


def _trtllm_draft_path(b: BaseBuilder, s: ServeSettings) -> None:
    """TensorRT-LLM: the draft named with a key this version does not read, or not at all."""
    want = b.value("draft_path_key")
    if s.method is None or not isinstance(want, str):
        return
    key = s.draft_path_key
    if key is None:
        b.refuse(
            rule_ids.DRAFT_PATH_MISSING,
            f"the speculative config names no draft: {b.p.title} reads its path from "
            f"`{want}` and, without it, raises ValueError at start-up ('Draft model must be "
            "provided for EAGLE' / 'Path to EAGLE3 weights must be specified.')",
            _where(s, "/speculative_config"),
            ("draft_path_key",),
            fix=f"add `{want}: DRAFT` to speculative_config (the draft's folder)",
        )
        return
    aliases = [str(a) for a in b.value("draft_path_aliases") or []]
    if key == want or key in aliases:
        return
    refused = b.value("spec_config_unknown_keys") == "refused"
    what = (
        "its speculative config declares no such key and refuses it while the arguments are "
        "parsed ('Extra inputs are not permitted'), so the server does not start"
        if refused
        else "the key is not read, so the draft path is missing and start-up fails "
        "(ValueError: 'Draft model must be provided for EAGLE' / 'Path to EAGLE3 weights "
        "must be specified.')"
    )
    b.refuse(
        rule_ids.DRAFT_PATH_KEY_UNREAD,
        f"the launch names the draft with `{key}`, but {b.p.title} reads it from `{want}`: " + what,
        _where(s, f"/speculative_config/{key}"),
        ("draft_path_key", "draft_path_aliases")
        + (("spec_config_unknown_keys",) if refused else ()),
        fix=f"rename `{key}` to `{want}` (`{want}: {s.draft_model}`)",
    )
