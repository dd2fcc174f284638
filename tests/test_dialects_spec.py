"""Dialect fingerprints and the canonical description, one producer at a time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.checkpoint import load_checkpoint
from draftfit.draft.aux_counting import CAPTURE_BEFORE, OUTPUT_OF, resolve_with_target
from draftfit.draft.description import describe
from tests import factory as f


def _spec(draft: f.Draft, tmp: Path):
    return describe(load_checkpoint(draft.write(tmp / "d")))


@pytest.mark.parametrize(
    ("draft", "dialect", "variant", "method"),
    [
        (lambda: f.specforge(), "specforge", "eagle3", "eagle3"),
        (lambda: f.speculators(), "speculators", "trained", "eagle3"),
        (lambda: f.speculators(variant="converted"), "speculators", "converted", "eagle3"),
        (lambda: f.modelopt(), "modelopt", "eagle3", "eagle3"),
        (lambda: f.eagle_official(), "eagle-official", "eagle3", "eagle3"),
        (lambda: f.eagle1(bias=True), "eagle-official", "eagle1", "eagle"),
    ],
)
def test_dialect_and_method(tmp_path: Path, draft, dialect, variant, method) -> None:
    spec = _spec(draft(), tmp_path)
    assert (spec.dialect.name, spec.dialect.variant, spec.method) == (dialect, variant, method)
    assert spec.dialect.evidence


def test_modelopt_version_hints(tmp_path: Path) -> None:
    assert _spec(f.modelopt(naming="layers"), tmp_path / "a").dialect.version_hint == ">=0.43"
    assert _spec(f.modelopt(naming="midlayer"), tmp_path / "b").dialect.version_hint == "0.41-0.42"


def test_angelslim_and_legacy_vllm(tmp_path: Path) -> None:
    angel = f.specforge()
    angel.config["architectures"] = ["Eagle3LlamaForCausalLM"]
    angel.config["target_model_type"] = "qwen3"
    assert _spec(angel, tmp_path / "a").dialect.name == "angelslim"
    legacy = f.Draft({"model_type": "eagle", "model": f.llama_layer_config()}, f.eagle1().tensors)
    spec = _spec(legacy, tmp_path / "b")
    assert spec.dialect.name == "vllm-legacy-eagle"
    assert spec.layer_config_pointer == "/model"
    assert spec.hidden_size == f.H


def test_speculators_dims_come_from_the_layer_config(tmp_path: Path) -> None:
    spec = _spec(f.speculators(aux=[2, 16, 29]), tmp_path)
    assert spec.layer_config_pointer == "/transformer_layer_config"
    assert spec.field("hidden_size").pointer == "/transformer_layer_config/hidden_size"
    assert spec.field("draft_vocab_size").pointer == "/draft_vocab_size"
    assert spec.head_dim == f.HEAD_DIM and spec.draft_vocab_size == f.DRAFT_VOCAB
    assert spec.num_aux_states == 3
    (aux,) = spec.aux
    assert (aux.pointer, aux.convention, aux.capture_before()) == (
        "/eagle_aux_hidden_state_layer_ids",
        CAPTURE_BEFORE,
        (2, 16, 29),
    )


def test_nested_ids_are_output_of_counting(tmp_path: Path) -> None:
    spec = _spec(f.specforge(nested_aux=[1, 15, 28]), tmp_path)
    (aux,) = spec.aux
    assert aux.convention == OUTPUT_OF
    assert aux.capture_before() == (2, 16, 29)


def test_nested_ids_equal_to_the_capture_default_are_capture_before(tmp_path: Path) -> None:
    # AQ-MedAI's Kimi-K2 draft nests [2, 30, 58] for a 61-layer target.
    spec = _spec(f.specforge(nested_aux=[2, 30, 58]), tmp_path)
    resolved = resolve_with_target(spec.aux[0], 61)
    assert resolved.convention == CAPTURE_BEFORE and resolved.capture_before() == (2, 30, 58)
    assert resolve_with_target(spec.aux[0], 32).convention == OUTPUT_OF


def test_canonical_names_unify_midlayer_and_layers(tmp_path: Path) -> None:
    a = _spec(f.specforge(), tmp_path / "a")
    b = _spec(f.speculators(), tmp_path / "b")
    shared = {n for n in a.tensors if n.startswith("layers.0.")}
    assert shared and shared <= set(b.tensors)
    assert a.raw("layers.0.hidden_norm.weight") == "midlayer.hidden_norm.weight"


def test_head_dim_defaults_to_hidden_over_heads(tmp_path: Path) -> None:
    spec = _spec(f.speculators(head_dim=None), tmp_path)
    assert spec.head_dim_explicit is None and spec.head_dim == f.H // f.HEADS


def test_target_text_config_is_found_inside_multimodal_configs(tmp_path: Path) -> None:
    from draftfit.draft.target import load_target

    root = tmp_path / "vlm"
    root.mkdir()
    (root / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["KimiK25ForConditionalGeneration"],
                "model_type": "kimi_k25",
                "text_config": {
                    "model_type": "kimi_k2",
                    "hidden_size": 7168,
                    "num_hidden_layers": 61,
                    "vocab_size": 163840,
                    "num_attention_heads": 64,
                },
                "vision_config": {"hidden_size": 1152},
            }
        )
    )
    target = load_target(root)
    assert (target.architecture, target.model_type, target.hidden_size, target.num_layers) == (
        "KimiK25ForConditionalGeneration",
        "kimi_k2",
        7168,
        61,
    )
    assert target.text_pointer == "/text_config"
