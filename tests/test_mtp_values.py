"""Value checks of a target's own MTP layers (`check T --method mtp --values`, DF710–DF714)
on real bytes: tiny MTP targets from `tests/mtp_factory.py` written with chosen values, in
both modes, on both sides of every signature."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from draftfit.checker import check_path
from draftfit.cli.main import main
from draftfit.engines.launch import settings_from
from draftfit.report import Report
from draftfit.rule_ids import MTP_VALUE_RULE_IDS
from draftfit.values import mtp_scan
from tests.mtp_factory import LAYERS, mtp_target, trained, values

CODES = frozenset(r.code for r in MTP_VALUE_RULE_IDS)
MTP = f"model.layers.{LAYERS}."
BACKBONE = f"model.layers.{LAYERS - 1}."
OWN = ("enorm", "hnorm", "eh_proj", "shared_head", "embed_tokens")
LAUNCH = 'vllm serve T --speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\''
Fill = Callable[[str, str, tuple[int, ...]], "bytes | None"]


def codes(report: Report) -> set[str]:
    return {f.code for f in report.findings if f.code in CODES}


def with_(override: Callable[[str, str, tuple[int, ...]], bytes | None]) -> Fill:
    """`trained` values, except where `override` gives bytes for a tensor."""

    def fill(name: str, dtype: str, shape: tuple[int, ...]) -> bytes | None:
        mine = override(name, dtype, shape)
        return mine if mine is not None else trained(name, dtype, shape)

    return fill


def copied(name: str, dtype: str, shape: tuple[int, ...]) -> bytes | None:
    """The MTP decoder layer written as the last backbone layer's bytes."""
    if name.startswith(MTP) and not any(f".{own}" in name for own in OWN):
        return trained(name.replace(MTP, BACKBONE), dtype, shape)
    return None


MIMO = "model.mtp_layers.0."
MIMO_OWN = ("token_layernorm", "hidden_layernorm", "input_proj", "final_layernorm")


def copied_mimo(name: str, dtype: str, shape: tuple[int, ...]) -> bytes | None:
    """MiMo's MTP decoder layer (stored without vLLM's `mtp_block`) written as the last
    backbone layer's bytes."""
    if name.startswith(MIMO) and not any(f".{own}." in name for own in MIMO_OWN):
        return trained(name.replace(MIMO, BACKBONE), dtype, shape)
    return None


def mimo_norms_at_one(name: str, dtype: str, shape: tuple[int, ...]) -> bytes | None:
    norms = ("token_layernorm", "hidden_layernorm", "final_layernorm")
    own = tuple(f"{MIMO}{norm}.weight" for norm in norms)
    return values(dtype, np.ones(shape)) if name in own else None


def nan_in_o_proj(name: str, dtype: str, shape: tuple[int, ...]) -> bytes | None:
    if name == MTP + "self_attn.o_proj.weight":
        data = np.frombuffer(trained(name, dtype, shape), dtype="<u2").copy()
        data[::7] = 0x7FC0  # BF16 NaN
        return data.tobytes()
    return None


def constant_eh_proj(name: str, dtype: str, shape: tuple[int, ...]) -> bytes | None:
    return values(dtype, np.full(shape, 0.5)) if name == MTP + "eh_proj.weight" else None


def norms_at_one(name: str, dtype: str, shape: tuple[int, ...]) -> bytes | None:
    own = (MTP + "enorm.weight", MTP + "hnorm.weight", MTP + "shared_head.norm.weight")
    return values(dtype, np.ones(shape)) if name in own else None


def qwen_norms_at_zero(name: str, dtype: str, shape: tuple[int, ...]) -> bytes | None:
    own = ("mtp.norm.weight", "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight")
    return values(dtype, np.zeros(shape)) if name in own else None


def one_norm_at_one(name: str, dtype: str, shape: tuple[int, ...]) -> bytes | None:
    return values(dtype, np.ones(shape)) if name == MTP + "enorm.weight" else None


@dataclass(frozen=True)
class Case:
    id: str
    fires: frozenset[str]
    kw: dict[str, Any]


CASES = [
    Case("trained", frozenset(), {"fill": trained}),
    Case("trained-fp8", frozenset(), {"fill": trained, "quant": "fp8", "mtp_quantized": True}),
    Case("trained-glm", frozenset(), {"family": "glm4_moe", "fill": trained}),
    Case("trained-qwen3-next", frozenset(), {"family": "qwen3_next", "fill": trained}),
    Case("trained-qwen3-5", frozenset(), {"family": "qwen3_5", "fill": trained}),
    Case("trained-mimo", frozenset(), {"family": "mimo", "fill": trained}),
    Case("never-written-mimo", frozenset({"DF710"}), {"family": "mimo"}),
    Case(
        "mimo-norms-at-init",
        frozenset({"DF714"}),
        {"family": "mimo", "fill": with_(mimo_norms_at_one)},
    ),
    Case(
        "copy-of-decoder-layer-mimo",
        frozenset({"DF712"}),
        {"family": "mimo", "fill": with_(copied_mimo)},
    ),
    Case("never-written", frozenset({"DF710"}), {}),
    Case("never-written-unsharded", frozenset({"DF710"}), {"sharded": False}),
    Case("never-written-fp8", frozenset({"DF710"}), {"quant": "fp8", "mtp_quantized": True}),
    Case("nan", frozenset({"DF711"}), {"fill": with_(nan_in_o_proj)}),
    Case("copy-of-decoder-layer", frozenset({"DF712"}), {"fill": with_(copied)}),
    Case(
        "copy-of-decoder-layer-fp8",
        frozenset({"DF712"}),
        {"fill": with_(copied), "quant": "fp8", "mtp_quantized": True},
    ),
    Case(
        "copy-of-decoder-layer-one-file",
        frozenset({"DF712"}),
        {"fill": with_(copied), "sharded": False},
    ),
    Case("constant", frozenset({"DF713"}), {"fill": with_(constant_eh_proj)}),
    Case("norms-at-init", frozenset({"DF714"}), {"fill": with_(norms_at_one)}),
    Case("one-norm-at-one", frozenset(), {"fill": with_(one_norm_at_one)}),
    Case(
        "qwen3-next-norms-at-init",
        frozenset({"DF714"}),
        {"family": "qwen3_next", "fill": with_(qwen_norms_at_zero)},
    ),
    # zero projections (DF710), and its zero-centred norms at their initial value (DF714)
    Case("never-written-qwen3-5", frozenset({"DF710", "DF714"}), {"family": "qwen3_5"}),
    Case(
        "qwen3-5-norms-at-init",
        frozenset({"DF714"}),
        {"family": "qwen3_5", "fill": with_(qwen_norms_at_zero)},
    ),
]


@pytest.mark.parametrize("mode", ["sampled", "full"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, mode: str, tmp_path: Path) -> None:
    kw = dict(case.kw)
    family = kw.pop("family", "deepseek_v3")
    path = mtp_target(tmp_path / "t", family, **kw)
    report = check_path(path, method="mtp", values=mode, engines=["vllm==0.34.0"])
    assert codes(report) == case.fires
    # without --values nothing of this is read, and nothing fires
    plain = check_path(path, method="mtp", engines=["vllm==0.34.0"])
    assert not codes(plain)


def test_every_mtp_value_rule_has_a_firing_and_a_quiet_case() -> None:
    own = CODES - {"DF709"}  # DF709 (a value check that could not run): test_values.py
    assert own <= set().union(*(c.fires for c in CASES))
    assert all(any(code not in c.fires for c in CASES) for code in own)


def test_garbage_signatures_fail_the_gate_and_say_what_the_exporter_must_do(
    tmp_path: Path,
) -> None:
    report = check_path(mtp_target(tmp_path / "t"), method="mtp", values="sampled")
    (finding,) = [f for f in report.findings if f.code == "DF710"]
    assert finding.consequence.value == "drafts-garbage"
    assert finding.fix is not None and "exporter must write" in finding.fix
    assert "on samples of rows" in finding.message
    assert str(report.engines[0].verdict) != "compatible"


def test_an_mtp_launch_with_values(tmp_path: Path) -> None:
    path = mtp_target(tmp_path / "t", fill=with_(copied))
    report = check_path(
        path, engines=["vllm==0.34.0"], values="sampled", serve=settings_from(serve_args=LAUNCH)
    )
    assert codes(report) == {"DF712"}
    (finding,) = [f for f in report.findings if f.code == "DF712"]
    assert f"`{BACKBONE}*`" in finding.message and "every byte compared" in finding.message


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = mtp_target(tmp_path / "broken")
    good = mtp_target(tmp_path / "good", fill=trained)
    assert main(["check", str(broken), "--method", "mtp", "--values", "--quiet"]) == 1
    assert main(["check", str(good), "--method", "mtp", "--values=full", "--quiet"]) == 0
    capsys.readouterr()


def test_sampled_reads_are_bounded_and_full_reads_everything(tmp_path: Path) -> None:
    from draftfit.checkpoint.scoped import load_scoped
    from draftfit.draft.mtp import MtpSelection
    from draftfit.mtp_check import mtp_target as facts_of

    path = mtp_target(tmp_path / "t", fill=trained)
    scoped = load_scoped(path, MtpSelection())
    target = facts_of(scoped.checkpoint, scoped.names())
    sampled = mtp_scan.mtp_value_facts(scoped.checkpoint, target, "sampled")
    full = mtp_scan.mtp_value_facts(scoped.checkpoint, target, "full")
    assert sampled.mtp is not None and full.mtp is not None
    rows = [t.coverage.rows_read for t in sampled.mtp.tensors.values()]
    assert max(rows) == mtp_scan.MTP_SAMPLE_ROWS
    mtp_bytes = sum(
        i.byte_range[1] - i.byte_range[0]
        for n, i in scoped.checkpoint.tensors.items()
        if n.startswith(MTP) and i.byte_range is not None
    )
    assert sampled.bytes_read < mtp_bytes <= full.bytes_read
    assert all(t.coverage.complete for t in full.mtp.tensors.values())
    # the same checkpoint and mode: read once (a matrix checks every release with them)
    assert mtp_scan.mtp_value_facts(scoped.checkpoint, target, "sampled") is sampled


def test_a_sampled_match_is_confirmed_on_other_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tensor equal to the backbone's on the sampled rows but not on the rows between them
    is no copy: the confirmation reads other rows (here forced to a second sample)."""
    differs = MTP + "mlp.experts.0.gate_proj.weight"
    rows = 32  # MOE_INTER: more than a sample
    between = {r for a, b in mtp_scan.sample(rows, shift=True) for r in range(a, b)}
    between -= {r for a, b in mtp_scan.sample(rows) for r in range(a, b)}

    def near_copy(name: str, dtype: str, shape: tuple[int, ...]) -> bytes | None:
        data = copied(name, dtype, shape)
        if name == differs and data is not None:
            array = np.frombuffer(data, dtype="<u2").reshape(shape).copy()
            array[min(between)] ^= 1
            return array.tobytes()
        return data

    monkeypatch.setattr(mtp_scan, "CONFIRM_BYTES", 0)
    path = mtp_target(tmp_path / "t", fill=with_(near_copy))
    report = check_path(path, method="mtp", values="sampled")
    (finding,) = [f for f in report.findings if f.code == "DF712"]
    assert "18 of the 19" in finding.message


def test_the_sample_spans_the_tensor() -> None:
    assert mtp_scan.sample(10) == [(0, 10)]
    assert mtp_scan.sample(10, shift=True) == []
    runs = mtp_scan.sample(7168)
    assert len(runs) == mtp_scan.MTP_SAMPLE_RUNS and runs[0][0] == 0 and runs[-1][1] == 7168
    assert sum(b - a for a, b in runs) == mtp_scan.MTP_SAMPLE_ROWS
    second = mtp_scan.sample(7168, shift=True)
    assert not {r for a, b in runs for r in range(a, b)} & {
        r for a, b in second for r in range(a, b)
    }
