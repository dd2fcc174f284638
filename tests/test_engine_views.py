"""The engine views' typed vocabulary: events name their rule by its RuleId, and every
tensor fate says why (FateCause), so rules never read messages."""

from __future__ import annotations

import ast
from pathlib import Path

from draftfit.checkpoint import load_checkpoint
from draftfit.draft.description import describe
from draftfit.engines.interface import build_view
from draftfit.engines.registry import parse_engine_selector
from draftfit.engines.view import BuildInputs, EngineView, FateCause
from draftfit.rule_ids import BY_NAME, METHOD_MISMATCH, RuleId
from tests import factory as f
from tests.source_trees import parsed

ENGINES = Path(__file__).resolve().parents[1] / "src" / "draftfit" / "engines"


def _view(tmp_path: Path, draft: f.Draft, engine: str, method: str | None = None) -> EngineView:
    path = f.write_checkpoint(tmp_path / "draft", draft.config, draft.tensors)
    checkpoint = load_checkpoint(path)
    described = describe(checkpoint)
    (profile,) = parse_engine_selector(engine)
    return build_view(
        BuildInputs(checkpoint, described, None, profile, method or described.method, True)
    )


def test_engine_modules_name_no_rule_by_string() -> None:
    for module in sorted(ENGINES.glob("*.py")):
        tree = parsed(module)
        names = {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        assert not names & set(BY_NAME), module.name


def test_refusal_carries_its_rule_id(tmp_path: Path) -> None:
    view = _view(tmp_path, f.specforge(), "sglang==0.5.23", method="eagle")
    assert [e.rule for e in view.refusals] == [METHOD_MISMATCH]
    assert all(isinstance(e.rule, RuleId) for e in view.refusals + view.events)


def test_prefixed_names_are_rejected_for_the_prefix(tmp_path: Path) -> None:
    view = _view(tmp_path, f.specforge().prefix_all("model."), "vllm==0.34.0")
    rejected = {x.raw: x.cause for x in view.fates if x.status == "rejected"}
    # vLLM prepends `model.` to every name but the head's, so `model.lm_head.weight` is
    # merely unknown.
    assert rejected.pop("model.lm_head.weight") is FateCause.UNKNOWN_NAME
    assert rejected and set(rejected.values()) == {FateCause.PREFIX_ADDED}


def test_t2d_is_skipped_by_the_loader_and_weights_load(tmp_path: Path) -> None:
    view = _view(tmp_path, f.specforge(), "trtllm==1.4.0rc0")
    causes = {x.raw: x.cause for x in view.fates}
    assert causes["t2d"] is FateCause.SKIPPED_BY_LOADER
    assert causes["fc.weight"] is FateCause.MATCHED
    assert all(x.cause is FateCause.MATCHED for x in view.fates if x.status == "loaded")


def test_stray_bias_is_dropped_as_such(tmp_path: Path) -> None:
    draft = f.specforge()
    draft.add("midlayer.extra.bias", "BF16", (f.H,))
    view = _view(tmp_path, draft, "sglang==0.5.23")
    (fate,) = [x for x in view.fates if x.raw == "midlayer.extra.bias"]
    assert (fate.status, fate.cause) == ("skipped", FateCause.STRAY_BIAS)
