"""`draftfit diff`: pairs that are equivalent for vLLM, and pairs that are not."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from draftfit.cli.main import main
from draftfit.commands.comparison import diff_paths
from draftfit.rules import all_rules
from draftfit.rules.base import Scope
from tests import factory as f
from tests.factory import Draft


def _same_draft_two_conventions() -> tuple[Draft, Draft]:
    """A SpecForge draft and the same draft written the way speculators writes it."""
    specforge = f.specforge(nested_aux=[1, 3, 4])
    speculators = f.speculators(
        aux=[2, 4, 5], variant="converted", norm_before_residual=False, embed=False
    )
    return speculators, specforge


def _edit(make: Callable[[Draft], None]) -> Callable[[], tuple[Draft, Draft]]:
    def build() -> tuple[Draft, Draft]:
        draft = f.specforge()
        make(draft)
        return draft, f.specforge()

    return build


def _head_dim_pair() -> tuple[Draft, Draft]:
    """The demo's case: head_dim 32 declared in the reference, missing in the draft, whose
    hidden/heads gives 16 while its tensors are 32-wide."""
    reference = f.specforge()
    reference.config["head_dim"] = 32
    reference.tensors.update(f.eagle3_tensors(head_dim=32))
    draft = f.specforge()
    del draft.config["head_dim"]
    draft.tensors.update(f.eagle3_tensors(head_dim=32))
    return draft, reference


def _norm(draft: Draft) -> None:
    draft.config["norm_before_residual"] = True


def _aux(draft: Draft) -> None:
    draft.config["eagle_aux_hidden_state_layer_ids"] = [1, 3, 6]


def _drop_k(draft: Draft) -> None:
    draft.drop("midlayer.self_attn.k_proj.weight")


def _other_vocab(draft: Draft) -> None:
    d2t, _ = f.vocab_maps(f.VOCAB, f.DRAFT_VOCAB, seed=1)
    draft.add("d2t", "I64", (f.DRAFT_VOCAB,), d2t)


def _prefix(draft: Draft) -> None:
    draft.prefix_all("model.")


def _f32(draft: Draft) -> None:
    draft.tensors["fc.weight"] = f.Tensor("F32", draft.tensors["fc.weight"].shape)


def _no_t2d(draft: Draft) -> None:
    draft.drop("t2d")


def _embed(draft: Draft) -> None:
    draft.add("embed_tokens.weight", "BF16", (f.VOCAB, f.H))


def _eagle1() -> tuple[Draft, Draft]:
    return f.eagle1(), f.specforge()


def _qwen3_layer() -> tuple[Draft, Draft]:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["transformer_layer_config"]["model_type"] = "qwen3"
    for norm in ("q_norm", "k_norm"):
        draft.add(f"layers.0.self_attn.{norm}.weight", "BF16", (f.HEAD_DIM,))
    return draft, f.speculators(aux=[2, 4, 5])


PAIRS = [
    (
        "same-draft-two-conventions",
        _same_draft_two_conventions,
        "equivalent",
        {"DF810", "DF812"},
        {
            "DF801",
            "DF802",
            "DF803",
            "DF804",
            "DF805",
            "DF806",
            "DF807",
            "DF808",
            "DF811",
            "DF813",
            "DF814",
        },
    ),
    (
        "identical",
        lambda: (f.specforge(), f.specforge()),
        "equivalent",
        set(),
        {r.code for r in all_rules() if r.scope is Scope.DIFF},
    ),
    ("head-dim-112-vs-128", _head_dim_pair, "different", {"DF803"}, {"DF801", "DF806"}),
    ("norm-before-residual", _edit(_norm), "different", {"DF805"}, {"DF803"}),
    ("other-aux-layers", _edit(_aux), "different", {"DF804"}, {"DF805"}),
    ("missing-k-proj", _edit(_drop_k), "different", {"DF806"}, {"DF803"}),
    ("other-vocabulary", _edit(_other_vocab), "different", {"DF807"}, {"DF806"}),
    ("prefixed-names", _edit(_prefix), "different", {"DF808"}, {"DF807"}),
    ("f32-fc", _edit(_f32), "equivalent", {"DF813"}, {"DF806"}),
    ("no-t2d", _edit(_no_t2d), "equivalent", {"DF814"}, {"DF806"}),
    ("embedding-stored", _edit(_embed), "equivalent", {"DF811"}, {"DF806"}),
    ("eagle1-vs-eagle3", _eagle1, "different", {"DF801"}, {"DF802"}),
    ("qwen3-vs-llama-layer", _qwen3_layer, "different", {"DF802"}, {"DF801"}),
]


@pytest.mark.parametrize(
    ("name", "build", "verdict", "fires", "quiet"), PAIRS, ids=[p[0] for p in PAIRS]
)
def test_pair(tmp_path: Path, name, build, verdict, fires, quiet) -> None:
    draft, reference = build()
    report = diff_paths(
        draft.write(tmp_path / "a"),
        reference.write(tmp_path / "b"),
        target=f.llama_target(tmp_path / "t"),
    )
    codes = {x.code for x in report.findings}
    detail = "\n".join(f"{x.code} {x.message}" for x in report.findings)
    assert report.engines[0].verdict == verdict, detail
    assert fires <= codes, detail
    assert not (quiet & codes), detail


def test_every_diff_code_fires_and_stays_quiet_somewhere() -> None:
    codes = {r.code for r in all_rules() if r.scope is Scope.DIFF}
    assert codes - set().union(*(p[3] for p in PAIRS)) == set()
    assert codes - set().union(*(p[4] for p in PAIRS)) == set()


def test_aux_convention_spelling_is_explained(tmp_path: Path) -> None:
    speculators, specforge = _same_draft_two_conventions()
    report = diff_paths(
        speculators.write(tmp_path / "a"),
        specforge.write(tmp_path / "b"),
        target=f.llama_target(tmp_path / "t"),
    )
    spelling = [x.message for x in report.findings if x.code == "DF810"]
    assert any("the same physical layers ([2, 4, 5]" in m for m in spelling)
    assert any("`Eagle3Speculator`" in m or "Eagle3Speculator" in m for m in spelling)


def test_target_layers_inferred_from_default_pattern(tmp_path: Path) -> None:
    report = diff_paths(
        f.speculators(aux=[2, 30, 58]).write(tmp_path / "a"),
        f.specforge(nested_aux=[2, 30, 58]).write(tmp_path / "b"),
    )
    assert any("61-layer target is assumed" in n for n in report.notes)
    assert not any(x.code == "DF804" for x in report.findings)


def test_cli_diff_exit_codes_and_json(tmp_path: Path, capsys) -> None:
    a = f.specforge().write(tmp_path / "a")
    b = f.specforge().write(tmp_path / "b")
    target = f.llama_target(tmp_path / "t")
    assert main(["diff", str(a), str(b), "--target", str(target)]) == 0
    assert "equivalent" in capsys.readouterr().out
    # Without a target the checks against it did not run: not called equivalent, and
    # `--fail-on unverified` fails on it.
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert ": unverified (0 that matter, 0 spelling) · no target: DF303" in out
    assert main(["diff", str(a), str(b), "--fail-on", "unverified"]) == 1
    capsys.readouterr()
    c = f.specforge()
    _norm(c)
    c_path = c.write(tmp_path / "c")
    assert main(["diff", str(c_path), str(b), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["engines"][0]["verdict"] == "different"
    finding = next(x for x in data["findings"] if x["code"] == "DF805")
    assert finding["severity"] == "error" and finding["location"]["file"] == "config.json"
    assert data["summary"]["matters"] >= 1


def test_cli_diff_missing_reference_is_usage_error(tmp_path: Path, capsys) -> None:
    a = f.specforge().write(tmp_path / "a")
    assert main(["diff", str(a), str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_engine_specific_naming_matters_only_where_the_engine_does_not_bind_it(
    tmp_path: Path,
) -> None:
    """`midlayer.*` vs `layers.0.*`: spelling for SGLang 0.5.12+, a real difference for 0.5.6,
    whose decoder module is `midlayer`, so `layers.*` tensors load nothing."""
    draft = f.specforge().write(tmp_path / "d")
    reference = f.specforge()
    reference.tensors = f.eagle3_tensors(naming="layers")
    ref = reference.write(tmp_path / "r")
    target = f.llama_target(tmp_path / "t")
    new = diff_paths(draft, ref, engines=["sglang==0.5.23"], target=target)
    assert new.engines[0].verdict == "equivalent"
    old = diff_paths(draft, ref, engines=["sglang==0.5.6"], target=target)
    assert old.engines[0].verdict == "different"
    messages = [x.message for x in old.findings if x.code == "DF806"]
    assert any("load for the draft but not for the reference" in m for m in messages)


def test_spelling_section_verdict_and_summary_count_the_same_findings(
    tmp_path: Path, capsys
) -> None:
    """The demo's pair has a DF811 (embedding stored on one side only) beside its DF810s:
    the "Spelling" section's count, the verdict line's "N spelling" and the JSON summary
    agree, and DF811 is among them."""
    from draftfit.commands.demo import build_demo

    paths = build_demo(tmp_path)
    args = ["diff", str(paths.draft), str(paths.reference), "--target", str(paths.target)]
    assert main(args) == 1
    text = capsys.readouterr().out
    section = next(x for x in text.splitlines() if x.startswith("Spelling the engine"))
    shown = int(section.rsplit("(", 1)[1].rstrip(")"))
    verdict = next(x for x in text.splitlines() if x.startswith("vLLM 0.34.0: different"))
    assert f", {shown} spelling)" in verdict
    assert main([*args, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    spelling_codes = [x["code"] for x in data["findings"] if x["severity"] == "info"]
    assert "DF811" in spelling_codes
    assert data["summary"]["spelling"] == shown == data["engines"][0]["counts"]["spelling"]
