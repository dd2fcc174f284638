"""SGLang's method and draft class: the method comes from `--speculative-algorithm`, the
draft config goes through transformers as is (no speculators reader, `model_type`
required), and `architectures[0]` picks the class with no rewrite."""

from __future__ import annotations

import re

from draftfit import rule_ids
from draftfit.draft.description import EAGLE, EAGLE3
from draftfit.draft.dialects import is_eagle4_architecture, non_eagle_kind
from draftfit.engines.procedure.classes import settle_class
from draftfit.engines.procedure.dimensions import require_dims
from draftfit.engines.procedure.state import CONFIG, BuildState
from draftfit.engines.sglang.classes import CLASS_FAMILY, EAGLE4_SERVING, LLAMA_EAGLE, LLAMA_EAGLE3
from draftfit.engines.sglang.target import target_checks
from draftfit.location import Location, config_at

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.METHOD_MISMATCH,
    rule_ids.METHOD_UNSUPPORTED,
    rule_ids.MISSING_ARCHITECTURES,
    rule_ids.MISSING_CONFIG_FIELD,
    rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
    rule_ids.UNSUPPORTED_ACTIVATION,
    rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
)
EMITS_STAGE = "engine procedure: SGLang's method and class resolution"


def algorithm(method: str) -> str:
    """The `--speculative-algorithm` that runs `method`."""
    return "EAGLE3" if method == EAGLE3 else "EAGLE"


def method_supported(state: BuildState) -> bool:
    """Step: refuse (and stop) where this release has no such algorithm."""
    key = "eagle3_supported" if state.method == EAGLE3 else "eagle_supported"
    if state.value(key):
        return True
    state.refuse(
        rule_ids.METHOD_UNSUPPORTED,
        f"{state.profile.title} has no `--speculative-algorithm "
        f"{algorithm(state.method or EAGLE3)}`",
        Location(CONFIG),
        (key,),
        fix="use SGLang 0.4.4.post2 or later",
    )
    return False


def method_matches(state: BuildState) -> bool:
    """Step: refuse (and stop) a method that does not fit the checkpoint."""
    own = state.draft.method
    if own is None or own == state.method:
        return True
    assert state.method is not None
    worker = algorithm(state.method)
    serve = state.serve
    named = (serve.method or "").strip().upper() if serve is not None else ""
    # an alias (NEXTN) is named as written, with the worker it runs
    alias = f" (SGLang's {worker} worker)" if named and named != worker else ""
    state.refuse(
        rule_ids.METHOD_MISMATCH,
        f"the checkpoint is an {own} draft, but it is served with "
        f"`--speculative-algorithm {named if alias else worker}`{alias}: SGLang runs the "
        "wrong speculative worker for it",
        Location(CONFIG, "/architectures"),
        ("algorithm_names",),
        fix=f"serve it with --speculative-algorithm {algorithm(own)}",
    )
    return False


def resolve_class(state: BuildState) -> bool:
    """Step: the config as transformers reads it and the draft class `architectures[0]`
    names; without one, the target checks still run (they need no class)."""
    arch = _draft_class(state) if _config_route(state) else None
    return settle_class(state, arch, _family, _no_class)


def _family(state: BuildState, arch: str) -> str:
    return CLASS_FAMILY[arch]


def _no_class(state: BuildState) -> None:
    """No draft class resolves, but the target checks need none: report them too."""
    state.family = LLAMA_EAGLE if state.method == EAGLE else LLAMA_EAGLE3
    target_checks(state)


def _config_route(state: BuildState) -> bool:
    cfg = state.config
    if "speculators_config" in cfg or "speculators_model_type" in cfg:
        state.refuse(
            rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
            f"{state.profile.title} parses the draft config with transformers as is and does "
            "not understand speculators-format configs (`speculators_config`, "
            "`transformer_layer_config`)",
            config_at("/speculators_model_type"),
            ("speculators_format",),
            fix="rewrite it as a plain config: `draftfit convert DRAFT --to sglang -o OUT`",
        )
        return False
    state.visible = dict(cfg)
    if "model_type" not in cfg:
        state.refuse(
            rule_ids.MISSING_CONFIG_FIELD,
            "the draft config has no `model_type`: SGLang loads it with transformers' "
            "AutoConfig, which needs one",
            config_at("/model_type"),
            ("draft_config_loader",),
            fix='add "model_type": "llama" (for MLA drafts, the target\'s model_type)',
        )
        return False
    return True


def _draft_class(state: BuildState) -> str | None:
    title = state.profile.title
    archs = state.config.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        state.refuse(
            rule_ids.MISSING_ARCHITECTURES,
            f"`architectures` is missing or empty: {title} picks the draft class "
            "from `architectures[0]` and fails building the draft's model config "
            "(TypeError on None, IndexError on an empty list)",
            config_at("/architectures"),
            ("missing_architectures",),
            fix='set "architectures": ["LlamaForCausalLMEagle3"] (EAGLE-3) or '
            '["LlamaForCausalLMEagle"] (EAGLE-1)',
        )
        return None
    arch = archs[0]
    key = "eagle3_draft_architectures" if state.method == EAGLE3 else "eagle_draft_architectures"
    registered = [a for a in (state.value(key) or []) if a in CLASS_FAMILY]
    if arch in registered:
        return arch
    mla = bool(state.visible.get("kv_lora_rank"))
    if state.method == EAGLE3:
        want = "Eagle3DeepseekV2ForCausalLM" if mla else "LlamaForCausalLMEagle3"
    else:
        want = "LlamaForCausalLMEagle"
    if arch in (state.value("eagle_draft_architectures") or []) + (
        state.value("eagle3_draft_architectures") or []
    ):
        why = (
            f"`{arch}` is SGLang's "
            + ("EAGLE-1" if state.method == EAGLE3 else "EAGLE-3")
            + " draft class, which builds other parameters than this draft has"
        )
    elif re.fullmatch(r"[A-Za-z0-9_]+For(CausalLM|ConditionalGeneration)", arch) and (
        "eagle" not in arch.lower()
    ):
        why = (
            f"`{arch}` is a regular model class in SGLang: it builds a plain model that "
            "binds none of the draft's weights (or the EAGLE worker fails on the missing "
            "`hot_token_id`)"
        )
    else:
        why = (
            f"`{arch}` is not registered in {title}: it falls back to the "
            "Transformers backend and fails ('Cannot find model module')"
        )
    if want not in registered:
        fix = f"{title} has no draft class for this checkpoint; use a later SGLang (`{want}`)"
    else:
        fix = f'set "architectures": ["{want}"] (`draftfit convert --to sglang` does it)'
    if is_eagle4_architecture(arch):
        fix = EAGLE4_SERVING
    elif non_eagle_kind(state.config) is not None:
        fix = "this is not an EAGLE draft: serve it with the algorithm made for it"
    state.refuse(
        rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
        why,
        config_at("/architectures/0"),
        (key, "eagle3_arch_rewrite") if state.method == EAGLE3 else (key,),
        fix=fix,
    )
    return None


def layer_buildable(state: BuildState) -> bool:
    """Step: refuse (and stop) an activation SGLang's draft MLP lacks or a missing
    dimension."""
    act = state.visible.get("hidden_act", "silu")
    if act not in (state.value("draft_activation") or ["silu"]):
        state.refuse(
            rule_ids.UNSUPPORTED_ACTIVATION,
            f"`hidden_act` is `{act}`: SGLang's draft MLP supports only `silu` and raises "
            "'Unsupported activation' while building the draft",
            config_at("/hidden_act"),
            ("draft_activation",),
            fix='train the draft with "hidden_act": "silu"',
        )
        return False
    return require_dims(state, "", ("draft_config_loader",))
