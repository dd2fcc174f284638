"""One draft, every engine: an engine that finds nothing wrong while another refuses the
draft over the same config field must have a reason in its own data.

For every rule case of `tests/cases/` (with its target and method), every release of every
engine checks the draft. Where a release of one engine finds nothing wrong (`compatible` or
`unverified`) while a release of another engine reports an *error* located in the draft's
config.json, the triple (quiet engine, the error's rule, the field at the root of its
location) must be listed in EXPLAINED with the fact of the quiet engine's data that says
why it accepts what the other refuses (a test checks the fact exists), or in KNOWN_GAPS
with what is missing. This is what caught SGLang calling a draft without `architectures`
compatible.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_checkpoint
from draftfit.engines.registry import load_engine
from draftfit.origins.reference import open_checkpoint, open_target
from draftfit.report import Finding
from draftfit.rules.base import Severity
from tests.cases import CASES, Case
from tests.sampling import sampled

ENGINES = ("vllm", "sglang", "trtllm")
QUIET = ("compatible", "unverified")

# (engine that finds nothing wrong, rule of another engine's error, root config field) ->
# the fact of the quiet engine's data that explains the difference.
EXPLAINED: dict[tuple[str, str, str], str] = {
    # vLLM reads speculators-format configs; SGLang and TensorRT-LLM do not.
    ("vllm", "DF105", "speculators_model_type"): "speculators_format",
    # vLLM rewrites `LlamaForCausalLM` to its EAGLE-3 class; SGLang builds a plain model.
    ("vllm", "DF101", "architectures"): "eagle3_arch_rewrite",
    # TensorRT-LLM's one-model path builds Eagle3ForCausalLM whatever `architectures` says.
    ("trtllm", "DF101", "architectures"): "draft_class_selection",
    ("trtllm", "DF102", "architectures"): "missing_architectures",
    ("trtllm", "DF107", "architectures"): "draft_class_selection",
    # These releases default `draft_vocab_size` to `vocab_size`; SGLang reads it.
    ("vllm", "DF110", "draft_vocab_size"): "draft_vocab_size_required",
    ("trtllm", "DF110", "draft_vocab_size"): "draft_vocab_size_required",
    # vLLM raises the draft's context to the target's; SGLang refuses a shorter one.
    ("vllm", "DF506", "max_position_embeddings"): "max_position_raised",
    # SGLang reads the nested aux ids vLLM ignores, so it builds fc for as many as it captures.
    ("sglang", "DF305", "eagle_aux_hidden_state_layer_ids"): "aux_ids_read_from",
    # SGLang takes the method from --speculative-algorithm, never from the draft's path.
    ("sglang", "DF101", "architectures"): "algorithm_names",
    ("sglang", "DF107", "architectures"): "algorithm_names",
    # SGLang registers an MLA EAGLE-3 class; vLLM turns a DeepSeek model_type into MTP.
    ("sglang", "DF101", "model_type"): "eagle3_draft_architectures",
    # Early vLLM forces its EAGLE-3 class whatever `architectures` says.
    ("vllm", "DF102", "architectures"): "eagle3_arch_rewrite",
    # vLLM builds multi-layer drafts from the release its data names; old SGLang refuses them.
    ("vllm", "DF116", "num_hidden_layers"): "multi_layer_drafts",
    # SGLang builds the draft's KV cache from the draft's own geometry; early vLLM needs one
    # KV page size for the draft's and the target's layers.
    ("sglang", "DF530", "head_dim"): "draft_kv_geometry_own",
    ("sglang", "DF530", "num_key_value_heads"): "draft_kv_geometry_own",
    ("sglang", "DF530", "num_attention_heads"): "draft_kv_geometry_own",
    # Early TensorRT-LLM does not read `target_hidden_size`, so a null one is not used.
    ("trtllm", "DF112", "target_hidden_size"): "target_hidden_size_supported",
    # DF301 is an error (the draft drafts garbage) where an engine captures other layers than
    # the draft was trained on; an engine that reads the written aux ids captures the trained
    # ones, and its data says where it reads them.
    ("vllm", "DF301", "eagle_aux_hidden_state_layer_ids"): "aux_ids_read_from_mrv1",
    ("vllm", "DF301", "eagle_config"): "aux_ids_read_from_mrv1",
    ("sglang", "DF301", "eagle_aux_hidden_state_layer_ids"): "aux_ids_read_from",
    ("sglang", "DF301", "eagle_config"): "aux_ids_read_from",
    ("trtllm", "DF301", "eagle_config"): "aux_ids_read_from",
    # An engine that honours `norm_before_fc` is quiet where another ignores it (DF601).
    ("vllm", "DF601", "norm_before_fc"): "norm_before_fc_supported",
    ("sglang", "DF601", "norm_before_fc"): "norm_before_fc_supported",
    # An engine that shares the target's lm_head when the draft has none is quiet where
    # another leaves a reduced-vocabulary head without weights (DF402).
    ("vllm", "DF402", "tie_word_embeddings"): "lm_head_shared_when_missing",
    ("trtllm", "DF402", "tie_word_embeddings"): "lm_head_rule",
}
# Pairs the data cannot explain yet: the quiet engine's data has no fact on the field.
KNOWN_GAPS: dict[tuple[str, str, str], str] = {
    ("trtllm", "DF115", "hidden_act"): "TensorRT-LLM's data records no draft activation",
    ("trtllm", "DF506", "max_position_embeddings"): (
        "TensorRT-LLM's data records nothing about a draft context shorter than the target's"
    ),
    ("vllm", "DF117", "num_nextn_predict_layers"): (
        "vLLM's data has no fact on `num_nextn_predict_layers` (SGLang sizes its draft KV "
        "pool from it)"
    ),
    ("trtllm", "DF530", "head_dim"): (
        "TensorRT-LLM's data records nothing about the draft's KV-cache geometry"
    ),
    ("trtllm", "DF530", "num_key_value_heads"): (
        "TensorRT-LLM's data records nothing about the draft's KV-cache geometry"
    ),
    ("trtllm", "DF530", "num_attention_heads"): (
        "TensorRT-LLM's data records nothing about the draft's KV-cache geometry"
    ),
    ("trtllm", "DF117", "num_nextn_predict_layers"): (
        "TensorRT-LLM's data has no fact on `num_nextn_predict_layers`"
    ),
}
PROFILES = [load_engine(e).resolve(v) for e in ENGINES for v in load_engine(e).versions]


def _root_field(finding: Finding) -> str | None:
    location = finding.location
    if location.file != "config.json" or location.in_target or not location.pointer:
        return None
    return location.pointer.split("/")[1]


def _conflicts(case: Case, tmp_path: Path) -> set[tuple[str, str, str]]:
    draft, target = case.build(tmp_path)
    report = check_checkpoint(
        open_checkpoint(draft),
        open_target(target) if target is not None else None,
        PROFILES,
        case.method,
    )
    found = set()
    for result in report.engines:
        if result.verdict not in QUIET:
            continue
        other = result.engine + "=="
        for finding in report.findings:
            field = _root_field(finding)
            if finding.severity != Severity.ERROR or field is None:
                continue
            if all(label.startswith(other) for label in (e.label for e in finding.engines)):
                continue  # the same engine at other releases: the data's version ranges
            found.add((result.engine, finding.code, field))
    return found


@pytest.mark.parametrize("case", sampled(CASES, 20, lambda c: c.id))
def test_no_engine_is_quiet_about_a_field_another_refuses(case: Case, tmp_path: Path) -> None:
    unexplained = _conflicts(case, tmp_path) - set(EXPLAINED) - set(KNOWN_GAPS)
    assert not unexplained, (
        "an engine finds nothing wrong where another reports an error on the same config "
        f"field, and its data does not say why: {sorted(unexplained)}"
    )


def test_known_gaps_are_still_gaps(tmp_path: Path) -> None:
    seen: set[tuple[str, str, str]] = set()
    for index, case in enumerate(CASES):
        if case.id in (
            "gelu-activation",
            "sglang-draft-context-refused",
            "sglang-nextn-zero-0.5.13",
            "kv-head-dim-80-vllm-0.9.1",
            "kv-heads-differ-vllm-0.10.2",
            "kv-derived-head-size-vllm-0.10.2",
        ):
            seen |= _conflicts(case, tmp_path / str(index))
    assert set(KNOWN_GAPS) <= seen, "a known gap is closed: move it to EXPLAINED"


@pytest.mark.parametrize(("key", "fact"), sorted(EXPLAINED.items()))
def test_each_explanation_names_a_fact_of_that_engine(key: tuple[str, str, str], fact: str) -> None:
    assert fact in load_engine(key[0]).facts
