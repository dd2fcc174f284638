"""Value checks (`--values`, DF7xx) on real bytes: tensors generated with numpy from fixed
random streams, written as safetensors by the factory, on both sides of every threshold."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from draftfit.checker import check_path
from draftfit.cli.main import main
from draftfit.commands.comparison import diff_paths
from draftfit.commands.release_matrix import build_matrix
from draftfit.origins.reference import open_checkpoint, open_target
from draftfit.rule_ids import MTP_VALUE_RULE_IDS, VALUES_NOT_CHECKED
from draftfit.rules import all_rules
from draftfit.rules import values as value_rules
from draftfit.values import plan
from draftfit.values.decode import decode
from tests import factory as f
from tests.factory import VOCAB, Draft, H, Tensor
from tests.timeouts import scaled

# The draft's value codes (those of a target's MTP layers are tested in test_mtp_values.py).
VALUE_CODES = frozenset(r.code for r in all_rules() if r.family == "values") - frozenset(
    r.code for r in MTP_VALUE_RULE_IDS if r is not VALUES_NOT_CHECKED
)
ROOT = Path(__file__).resolve().parent.parent


def value_codes(report) -> set[str]:
    return {x.code for x in report.findings if x.code in VALUE_CODES}


def embed_of(draft: Draft) -> np.ndarray:
    t = draft.tensors["embed_tokens.weight"]
    return f.from_bf16(t.data).reshape(t.shape)


def trained_speculators(stream: int = 0, **kw) -> Draft:
    return f.fill(f.speculators(aux=[2, 4, 5], **kw), stream=stream)


# ------------------------------------------------------------------ cases


@dataclass(frozen=True)
class ValueCase:
    id: str
    build: Callable[[Path], tuple[Path, Path | None]]
    fires: frozenset[str]
    quiet: frozenset[str] = VALUE_CODES
    mode: str = "sampled"


CASES: list[ValueCase] = []


def case(id: str, fires: set[str], quiet: set[str] | None = None, modes=("sampled", "full")):
    def register(build):
        for mode in modes:
            q = frozenset(quiet) if quiet is not None else VALUE_CODES - frozenset(fires)
            CASES.append(ValueCase(f"{id}-{mode}", build, frozenset(fires), q, mode))
        return build

    return register


def _pair(draft: Draft, target_embed: np.ndarray | None = None, **target_kw):
    def build(tmp: Path) -> tuple[Path, Path | None]:
        path = draft.write(tmp / "draft")
        if target_embed is not None:
            embed = target_embed
        elif "embed_tokens.weight" in draft.tensors:
            embed = embed_of(draft)
        else:
            embed = f.weights("trained", (VOCAB, H), 98)
        head = f.weights("trained", (VOCAB, H), 99)
        return path, f.values_target(tmp / "target", embed, head, **target_kw)

    return build


# Trained-like drafts from every producer stay quiet, next to their own target.
for _name, _draft in [
    ("speculators", lambda: trained_speculators()),
    ("specforge-with-embed", lambda: f.fill(f.specforge(embed=True), stream=3)),
    ("specforge-no-embed", lambda: f.fill(f.specforge(), stream=4)),
    ("modelopt", lambda: f.fill(f.modelopt(aux=[1, 3, 4]), stream=5)),
    ("eagle-official", lambda: f.fill(f.eagle_official(embed=True), stream=6)),
    ("normal-but-wider", lambda: f.fill(f.speculators(aux=[2, 4, 5]), "normal", 7, 0.021 * 1.1)),
]:
    case(f"trained-{_name}", set())(_pair(_draft()))

_sibling = trained_speculators(stream=1)
case("embedding-from-sibling-target", {"DF701"})(
    _pair(_sibling, f.weights("trained", (VOCAB, H), 42))
)

_one_row = trained_speculators(stream=2)
_one_row_target = embed_of(_one_row).copy()
_one_row_target[17] += 0.5
case("embedding-one-row-differs", {"DF701"})(_pair(_one_row, _one_row_target))

# The match tolerance, from both sides: a float32 target whose values the bf16 draft
# rounds (truncates) to is the same weight; 2^-6 relative off is another weight.
_f32 = trained_speculators(stream=8)
_exact = embed_of(_f32)
_within = _exact * np.float32(1 + 2.0**-9)  # a float32 original the bf16 copy truncates
case("embedding-f32-target-within-rounding", set())(_pair(_f32, _within, dtype="F32"))
_beyond = trained_speculators(stream=8)
case("embedding-f32-target-beyond-rounding", {"DF701"})(
    _pair(_beyond, _exact * np.float32(1 + 2.0**-6), dtype="F32")
)

_trained_embed = trained_speculators(stream=9)
_trained_embed.config["embed_requires_grad"] = True
case("embedding-trained-similarity", {"DF702"})(
    _pair(_trained_embed, embed_of(_trained_embed) + f.weights("trained", (VOCAB, H), 10, 0.005))
)

_zeros = trained_speculators(stream=11)
_zeros.tensors["layers.0.mlp.down_proj.weight"].data = None
case("untrained-zeros", {"DF703"})(_pair(_zeros))


def _with(name: str, values: np.ndarray, stream: int = 12) -> Draft:
    draft = trained_speculators(stream=stream)
    draft.tensors[name].data = f.bf16_bytes(values)
    return draft


_shape = (2 * 64, H)  # gate_proj: 128 rows
_const = f.weights("trained", _shape, 13)
_const[:64] = 0.25  # 64 of 128 rows constant: the threshold
case("untrained-constant-rows-at-threshold", {"DF703"})(
    _pair(_with("layers.0.mlp.gate_proj.weight", _const))
)
_few = f.weights("trained", _shape, 13)
_few[:63] = 0.25  # one row fewer
case("untrained-constant-rows-below-threshold", set())(
    _pair(_with("layers.0.mlp.gate_proj.weight", _few))
)
_copy = trained_speculators(stream=14)
_copy.tensors["layers.0.self_attn.v_proj.weight"].data = _copy.tensors[
    "layers.0.self_attn.k_proj.weight"
].data
case("untrained-identical-tensors", {"DF703"})(_pair(_copy))
_ones = trained_speculators(stream=15)
_ones.tensors["norm.weight"].data = f.norm_bytes(H, 1.0)
case("untrained-final-norm-ones", {"DF703"})(_pair(_ones))

case("init-like-normal", {"DF704"})(
    _pair(f.fill(f.speculators(aux=[2, 4, 5]), "normal", 16, 0.02), None)
)
_narrow = f.fill(f.speculators(aux=[2, 4, 5]), "normal", 26, 0.01)
_narrow_declared = f.fill(f.speculators(aux=[2, 4, 5]), "normal", 26, 0.01)
_narrow_declared.config["transformer_layer_config"]["initializer_range"] = 0.01
case("init-like-declared-range", {"DF704"})(_pair(_narrow_declared))
case("init-like-other-range", set())(_pair(_narrow))
case("init-like-uniform", {"DF704"})(_pair(f.fill(f.speculators(aux=[2, 4, 5]), "uniform", 17)))

_nan = f.weights("trained", (H, 3 * H), 18)
_nan[5, 7] = np.nan
case("non-finite-nan", {"DF705"})(_pair(_with("fc.weight", _nan)))
_inf = f.weights("trained", (H, 3 * H), 18)
_inf[9, 1] = -np.inf
case("non-finite-inf", {"DF705"})(_pair(_with("fc.weight", _inf)))


def _f32_fc(peak: float) -> Draft:
    draft = trained_speculators(stream=19)
    values = f.weights("trained", (H, 3 * H), 19)
    values[3, 3] = peak
    draft.tensors["fc.weight"] = Tensor("F32", (H, 3 * H), values.astype("<f4").tobytes())
    return draft


case("f16-overflow", {"DF706"})(_pair(_f32_fc(1.2e5), torch_dtype="float16"))
case("f16-fits", set())(_pair(_f32_fc(6.0e4), torch_dtype="float16"))
case("f16-overflow-served-bf16", set())(_pair(_f32_fc(1.2e5)))

_fc_zero = f.weights("trained", (H, 3 * H), 20)
_fc_zero[:, 2 * H :] = 0
case("fc-chunk-zero", {"DF707"})(_pair(_with("fc.weight", _fc_zero)))
_fc_same = f.weights("trained", (H, 3 * H), 21)
_fc_same[:, H : 2 * H] = _fc_same[:, :H]
case("fc-chunk-identical", {"DF707"})(_pair(_with("fc.weight", _fc_same)))


_fc_init = f.weights("trained", (H, 3 * H), 27)
_fc_init[:, 2 * H :] = f.weights("uniform", (H, 3 * H), 28)[:, 2 * H :]  # fan_in = 3H
case("fc-chunk-init-like", {"DF704"}, quiet=VALUE_CODES - {"DF704"} - {"DF707"})(
    _pair(_with("fc.weight", _fc_init))
)
_fc_all_init = f.weights("uniform", (H, 3 * H), 29)
case("fc-all-blocks-init-like-reported-once", {"DF704"})(_pair(_with("fc.weight", _fc_all_init)))


def _head_copy(tmp: Path) -> tuple[Path, Path | None]:
    draft = f.fill(f.speculators(aux=[2, 4, 5], draft_vocab=VOCAB), stream=22)
    draft.config["draft_vocab_size"] = VOCAB
    path = draft.write(tmp / "draft")
    head = f.from_bf16(draft.tensors["lm_head.weight"].data).reshape(VOCAB, H)
    return path, f.values_target(tmp / "target", embed_of(draft), head)


case("lm-head-copied", {"DF708"})(_head_copy)


def _config_only(tmp: Path) -> tuple[Path, Path | None]:
    return trained_speculators(stream=23).write(tmp / "draft"), f.llama_target(tmp / "target")


case("target-config-only", {"DF709"})(_config_only)


def _bin(tmp: Path) -> tuple[Path, Path | None]:
    return f.eagle1().write(tmp / "draft", fmt="bin"), None


case("bin-draft", {"DF709"})(_bin)


def _undecodable(tmp: Path) -> tuple[Path, Path | None]:
    draft = trained_speculators(stream=24).add("layers.0.mlp.scale", "F6_E2M3", (64, 64))
    return _pair(draft)(tmp)


case("undecodable-dtype", {"DF709"})(_undecodable)


def _quantized_target(tmp: Path) -> tuple[Path, Path | None]:
    draft = trained_speculators(stream=25)
    path = draft.write(tmp / "draft")
    target = f.values_target(
        tmp / "target",
        embed_of(draft),
        extra={
            "model.embed_tokens.weight_scale_inv": Tensor("F32", (2, 1), bytes(8)),
        },
    )
    return path, target


case("quantized-target-embedding", {"DF709"})(_quantized_target)


@pytest.mark.parametrize("vc", CASES, ids=[c.id for c in CASES])
def test_value_case(vc: ValueCase, tmp_path: Path) -> None:
    draft, target = vc.build(tmp_path)
    report = check_path(draft, target=target, values=vc.mode)
    codes = value_codes(report)
    detail = "\n".join(f"{x.code} {x.severity} {x.message}" for x in report.findings)
    assert vc.fires <= codes, f"expected {sorted(vc.fires)}; got:\n{detail}"
    assert not (vc.quiet & codes), f"expected {sorted(vc.quiet & codes)} quiet; got:\n{detail}"
    for finding in report.findings:
        if finding.code in VALUE_CODES - {"DF709"}:
            assert "sample" in finding.message or "in full" in finding.message, finding.message
    # Without --values nothing of the family runs.
    assert not value_codes(check_path(draft, target=target))


def test_every_value_rule_has_a_firing_and_a_quiet_case() -> None:
    assert {f"DF70{k}" for k in range(1, 10)} == VALUE_CODES
    fired = set().union(*(c.fires for c in CASES))
    quiet = set().union(*(c.quiet for c in CASES))
    assert VALUE_CODES - fired == set()
    assert VALUE_CODES - quiet == set()


# ------------------------------------------------------------------ Kimi-K2 vs Kimi-K2.5


def _kimi_pair(tmp: Path) -> tuple[Path, Path, Path]:
    """A speculators draft trained for "K2" (its embedding is K2's), the K2 target, and the
    sibling "K2.5": same shapes, multimodal layout, another embedding."""
    return f.kimi_sibling_pair(tmp)


def test_kimi_draft_next_to_its_target_and_its_sibling(tmp_path: Path) -> None:
    draft, k2, k25 = _kimi_pair(tmp_path)
    assert not value_codes(check_path(draft, target=k2, values="sampled"))
    report = check_path(draft, target=k25, values="sampled")
    found = [x for x in report.findings if x.code == "DF701"]
    assert len(found) == 1 and str(found[0].severity) == "error"
    message = found[0].message
    assert "on a sample of 256 of 4096 rows" in message
    assert "0 match exactly" in message and "embed_requires_grad: false" in message
    assert "`language_model.model.embed_tokens.weight`" in message
    assert report.engines[0].verdict == "drafts-garbage"  # it loads, and drafts wrong
    full = check_path(draft, target=k25, values="full")
    assert "read in full, 4096 rows" in next(x for x in full.findings if x.code == "DF701").message


def test_diff_and_matrix_carry_value_findings(tmp_path: Path) -> None:
    draft, _k2, k25 = _kimi_pair(tmp_path)
    diff = diff_paths(draft, draft, target=k25, values="sampled")
    assert diff.engines[0].verdict == "equivalent"  # the same draft: no difference
    matrix = build_matrix(open_checkpoint(draft), open_target(k25), values="sampled")
    assert {row.verdict for row in matrix.rows} <= {"incompatible", "drafts-garbage"}
    assert all(any(x.code == "DF701" for x in row.deciding) for row in matrix.rows)


# ------------------------------------------------------------------ CLI and import cost


def test_cli_values_flag(tmp_path: Path, capsys) -> None:
    draft, _, k25 = _kimi_pair(tmp_path)
    code = main(["check", str(draft), "--target", str(k25), "--values=full", "--format", "json"])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 1 and "DF701" in {x["code"] for x in out["findings"]}
    assert captured.err == ""  # no progress bar when stderr is not a terminal
    assert main(["check", str(draft), "--values=bogus"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_plain_check_does_not_import_numpy(tmp_path: Path) -> None:
    draft, _k2, _ = _kimi_pair(tmp_path)
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "draftfit", "check", str(draft)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=scaled(),
    )
    assert run.returncode in (0, 1), run.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()}
    assert "numpy" not in imported and "draftfit.checker" in imported
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "draftfit", "check", str(draft), "--values"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=scaled(),
    )
    assert "numpy" in {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()}


# ------------------------------------------------------------------ decoding and sampling


def test_decode_every_dtype() -> None:
    values = np.array([0.0, -1.5, 3.25, 65504.0, 1e-3], dtype=np.float32)
    assert np.array_equal(decode(values.astype("<f2").tobytes(), "F16"), values.astype("<f2"))
    assert np.array_equal(decode(values.tobytes(), "F32"), values)
    assert np.array_equal(decode(values.astype("<f8").tobytes(), "F64"), values.astype("<f8"))
    truncated = f.from_bf16(f.bf16_bytes(values))
    assert np.array_equal(decode(f.bf16_bytes(values), "BF16"), truncated)
    e4m3 = decode(bytes([0x00, 0x38, 0xB8, 0x7E, 0x7F, 0x01, 0x08]), "F8_E4M3")
    assert list(e4m3[:4]) == [0.0, 1.0, -1.0, 448.0]
    assert np.isnan(e4m3[4]) and e4m3[5] == 2.0**-9 and e4m3[6] == 2.0**-6
    e5m2 = decode(bytes([0x3C, 0x7B, 0x7C, 0xFC, 0x7D, 0x01]), "F8_E5M2")
    assert list(e5m2[:4]) == [1.0, 57344.0, np.inf, -np.inf]
    assert np.isnan(e5m2[4]) and e5m2[5] == 2.0**-16
    for dtype, np_type in [
        ("I64", "<i8"),
        ("I32", "<i4"),
        ("I16", "<i2"),
        ("I8", "i1"),
        ("U8", "u1"),
    ]:
        ints = np.array([0, 1, -1 if np_type[-2] != "u" else 7, 100], dtype=np_type)
        assert np.array_equal(decode(ints.tobytes(), dtype), ints)
    with pytest.raises(ValueError):
        decode(b"\x00", "F4")


def test_sample_rows_are_fixed_bounded_and_spread() -> None:
    ranges = plan.sampled_rows(163840, 7168 * 2, plan.EMBED_SAMPLE_ROWS)
    assert plan.count_rows(ranges) == plan.EMBED_SAMPLE_ROWS == 256
    assert len(ranges) == plan.SAMPLE_GROUPS
    assert ranges[0][0] == 0 and ranges[-1][1] == 163840
    assert ranges == plan.sampled_rows(163840, 7168 * 2, plan.EMBED_SAMPLE_ROWS)
    wide = plan.sampled_rows(7168, 21504 * 2)  # fc: rows of 42 KB
    assert plan.count_rows(wide) == plan.MIN_SAMPLE_ROWS
    assert plan.sampled_rows(10, 128) == [(0, 10)]
    chunks = plan.full_rows(163840, 14336)
    assert all((b - a) * 14336 <= plan.FULL_CHUNK_BYTES for a, b in chunks)
    assert plan.count_rows(chunks) == 163840


def test_thresholds_are_named() -> None:
    assert value_rules.CONSTANT_ROWS_FRACTION == 0.5
    assert value_rules.FLOAT16_MAX == 65504.0


# ------------------------------------------------------------------ target on the Hub


def test_target_embedding_rows_from_the_hub(tmp_path: Path, monkeypatch) -> None:
    from tests.fake_hub import FakeHub, configure_hf_env

    draft, k2, k25 = _kimi_pair(tmp_path)
    with FakeHub() as hub:
        hub.add_repo("moonshotai/Kimi-K2", k2)
        hub.add_repo("moonshotai/Kimi-K2.5", k25)
        configure_hf_env(monkeypatch, hub.endpoint, tmp_path / "hf-home")
        assert not value_codes(
            check_path(draft, target="hf://moonshotai/Kimi-K2", values="sampled")
        )
        before = hub.bytes_sent
        report = check_path(draft, target="hf://moonshotai/Kimi-K2.5", values="full")
        sent = hub.bytes_sent - before
        ranged = [r for r in hub.requests if r.range is not None]
    assert "DF701" in value_codes(report)
    message = next(x.message for x in report.findings if x.code == "DF701")
    # Full mode reads every byte of the draft, but only the sampled rows of a remote target.
    assert "on a sample of 256 of 4096 rows" in message
    embed_bytes = 4096 * H * 2
    assert sent < embed_bytes / 4, (sent, embed_bytes)
    assert ranged, "rows are read with range requests"


def test_a_hub_target_is_listed_only_when_its_weights_are_read(tmp_path: Path, monkeypatch) -> None:
    """A Hub target keeps the repository it was read from: a plain check asks the Hub for
    its config alone; the value checks list the repository once, through the same access."""
    from draftfit.origins.hub import ListedLaterAccess
    from tests.fake_hub import FakeHub, configure_hf_env

    draft, _k2, k25 = _kimi_pair(tmp_path)
    with FakeHub() as hub:
        hub.add_repo("moonshotai/Kimi-K2.5", k25)
        configure_hf_env(monkeypatch, hub.endpoint, tmp_path / "hf-home")
        target = open_target("hf://moonshotai/Kimi-K2.5")
        assert isinstance(target.access, ListedLaterAccess)
        check_path(draft, target="hf://moonshotai/Kimi-K2.5")
        listings = [r for r in hub.requests if r.path.startswith("/api/models/")]
        assert listings == [], listings
        report = check_path(draft, target="hf://moonshotai/Kimi-K2.5", values="sampled")
        listings = [r for r in hub.requests if r.path.startswith("/api/models/")]
    assert "DF701" in value_codes(report)
    assert len(listings) == 1, listings


def test_a_target_in_the_hub_cache_is_compared_through_its_snapshot(tmp_path: Path) -> None:
    """A target named by its Hugging Face cache snapshot is read as the draft reader reads
    one: its weights are symlinks into the repository's `blobs/`, and are compared."""
    from tests.hub_layouts import cache_snapshot

    draft, _k2, k25 = _kimi_pair(tmp_path)
    snapshot = cache_snapshot(k25, tmp_path / "hub", "moonshotai/Kimi-K2.5")
    target = open_target(snapshot)
    assert target.access is not None and target.access.local_path("config.json") is not None
    report = check_path(draft, target=snapshot, values="sampled")
    assert "DF701" in value_codes(report)
    assert not [x.message for x in report.findings if x.code == "DF709"]


def test_a_target_made_from_its_config_alone_has_no_weights_to_compare(tmp_path: Path) -> None:
    from draftfit.draft.target import target_from_config
    from draftfit.values.target_weights import TargetWeightsMissing, open_target_weights

    _draft, _k2, k25 = _kimi_pair(tmp_path)
    target = target_from_config(json.loads((k25 / "config.json").read_text()), "k25")
    with pytest.raises(TargetWeightsMissing, match="config alone"):
        open_target_weights(target)
    assert open_target_weights(open_target(k25)).embedding is not None


def _stats(values: np.ndarray, dtype: str):
    from draftfit.values.facts import TensorFacts
    from draftfit.values.stats import TensorAccumulator

    if dtype == "BF16":
        raw = f.bf16_bytes(values)
    else:
        raw = values.astype({"F16": "<f2", "F32": "<f4", "F64": "<f8"}[dtype]).tobytes()
    facts = TensorFacts("t", "t", "f", dtype, values.shape, plan_coverage(values.shape[0]))
    acc = TensorAccumulator(facts)
    acc.add(raw, values.shape[0], values.shape[1])
    return acc.finish(), decode(raw, dtype).reshape(values.shape)


def plan_coverage(rows: int):
    from draftfit.values.facts import Coverage

    return Coverage(rows, rows)


@pytest.mark.parametrize("dtype", ["BF16", "F16", "F32", "F64"])
@pytest.mark.parametrize("stream", [0, 1, 2])
def test_bit_pattern_statistics_match_decoded_values(dtype: str, stream: int) -> None:
    rng = np.random.default_rng(stream)
    values = rng.laplace(0, 2.0, (32, 48)).astype(np.float32)
    if stream == 1:
        values = -np.abs(values)  # negatives only: the largest magnitude is negative
        values[3, 4], values[5, 6], values[7, 8] = np.nan, -np.inf, np.inf
    if stream == 2:
        values[:] = 0.0
        values[::2] = -0.0
    facts, decoded = _stats(values, dtype)
    finite = decoded[np.isfinite(decoded)]
    assert facts.max_abs == (float(np.abs(finite).max()) if finite.size else 0.0)
    assert facts.nan == int(np.isnan(decoded).sum())
    assert facts.inf == int(np.isinf(decoded).sum())
    assert facts.all_zero == bool((decoded == 0).all())
    assert not facts.all_one
    ones, _ = _stats(np.ones((4, 8), np.float32), dtype)
    assert ones.all_one and not ones.all_zero and ones.constant_rows == 4


def test_constant_rows_are_exact_beyond_the_first_columns() -> None:
    values = f.weights("trained", (6, 40), 50)
    values[0] = 0.5  # constant
    values[1] = 0.5
    values[1, 39] = 0.25  # equal for 39 columns, not constant
    values[2, :8] = 0.125  # equal prefix only
    for dtype in ("BF16", "F32"):
        facts, _ = _stats(values, dtype)
        assert facts.constant_rows == 1


def test_damaged_tensor_is_a_finding_not_a_traceback(tmp_path: Path) -> None:
    draft = trained_speculators(stream=60)
    path = draft.write(tmp_path / "draft")
    weights = path / "model.safetensors"
    length = int.from_bytes(weights.read_bytes()[:8], "little")
    header = json.loads(weights.read_bytes()[8 : 8 + length])
    header["fc.weight"]["shape"] = [H, 2 * H]  # the bytes hold [H, 3H]
    encoded = json.dumps(header, separators=(",", ":")).encode().ljust(length)
    weights.write_bytes(weights.read_bytes()[:8] + encoded + weights.read_bytes()[8 + length :])
    for mode in ("sampled", "full"):
        report = check_path(path, values=mode)
        skipped = [x.message for x in report.findings if x.code == "DF709"]
        assert any("`fc.weight` not checked" in m for m in skipped), skipped
    truncated = tmp_path / "truncated"
    truncated.mkdir()
    (truncated / "config.json").write_text((path / "config.json").read_text())
    data = weights.read_bytes()
    (truncated / "model.safetensors").write_bytes(data[: len(data) - 1000])
    assert check_path(truncated, values="full").findings  # no exception


@pytest.mark.parametrize("kind", ["fifo", "dangling-link"])
def test_a_target_shard_that_is_not_a_regular_file_is_named(tmp_path: Path, kind: str) -> None:
    """A target shard that is a FIFO or a dangling link is not passed over: the skipped
    comparison (DF709) names that shard and why it was not read."""
    import os

    draft = f.fill(f.specforge(embed=True), stream=3)
    path = draft.write(tmp_path / "draft")
    target = f.values_target(tmp_path / "target", embed_of(draft), shards=2)
    shard = target / "model-00001-of-00002.safetensors"
    shard.unlink()
    if kind == "fifo":
        os.mkfifo(shard)
    else:
        shard.symlink_to(tmp_path / "nowhere.safetensors")
    report = check_path(path, target=target, values="sampled")
    skipped = [x.message for x in report.findings if x.code == "DF709"]
    assert any("model-00001-of-00002.safetensors" in m for m in skipped), skipped


def test_one_layer_norm_at_one_is_reported_when_df901_is_not(tmp_path: Path) -> None:
    draft = trained_speculators(stream=61)
    draft.tensors["layers.0.hidden_norm.weight"].data = f.norm_bytes(H, 1.0)
    path = draft.write(tmp_path / "draft")
    report = check_path(path, values="sampled")
    codes = {x.code for x in report.findings}
    assert "DF901" not in codes and "DF703" in codes
    every = trained_speculators(stream=61)
    for norm in ("hidden_norm", "input_layernorm", "post_attention_layernorm"):
        every.tensors[f"layers.0.{norm}.weight"].data = f.norm_bytes(H, 1.0)
    report = check_path(every.write(tmp_path / "every"), values="sampled")
    codes = {x.code for x in report.findings}
    assert "DF901" in codes and "DF703" not in codes


@pytest.mark.slow
def test_full_mode_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    from tests.terminal import stderr_on_a_terminal

    draft = trained_speculators(stream=62).write(tmp_path / "draft")
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "TERM": "xterm"}
    argv = [sys.executable, "-m", "draftfit", "check", str(draft), "--values=full"]
    returncode, seen = stderr_on_a_terminal(argv, env)
    assert returncode in (0, 1)
    assert b"reading weights" in seen
    piped = subprocess.run(argv, capture_output=True, env=env, check=False, timeout=scaled())
    assert b"reading weights" not in piped.stderr


def test_fc_block_at_initialisation_is_named(tmp_path: Path) -> None:
    draft, target = _pair(_with("fc.weight", _fc_init))(tmp_path)
    report = check_path(draft, target=target, values="full")
    message = next(x.message for x in report.findings if x.code == "DF704")
    assert "block 2 of `fc.weight`" in message and "while other blocks are not" in message
    assert "block 0" not in message and "block 1" not in message
    assert not any(x.code == "DF707" for x in report.findings)  # no exact signature


def test_one_differing_row_is_named(tmp_path: Path) -> None:
    draft, target = _pair(_one_row, _one_row_target)(tmp_path)
    message = next(
        x.message
        for x in check_path(draft, target=target, values="sampled").findings
        if x.code == "DF701"
    )
    assert "on 1 of 256 rows compared" in message and "first differing row 17" in message
    assert "255 match exactly" in message and "largest difference 0.5" in message


def test_draft_on_the_hub_is_sampled_with_range_requests(tmp_path: Path, monkeypatch) -> None:
    from tests.fake_hub import FakeHub, configure_hf_env

    draft, k2, _ = _kimi_pair(tmp_path)
    local = check_path(draft, target=k2, values="sampled")
    with FakeHub() as hub:
        hub.add_repo("org/kimi-k2-draft", draft)
        configure_hf_env(monkeypatch, hub.endpoint, tmp_path / "hf-home")
        remote = check_path("hf://org/kimi-k2-draft", target=k2, values="sampled")
        ranges = [r.range for r in hub.requests if r.range is not None]
    assert value_codes(remote) == value_codes(local) == set()
    assert len(ranges) > 16  # headers plus the sampled runs of rows
    from draftfit.errors import UsageError

    with pytest.raises(UsageError, match="value mode"):
        check_path(draft, values="everything")


# Known E4M3 codes and their values (OCP FP8 E4M3): 0x00 0, 0x30 0.5, 0x38 1.0, 0x40 2.0,
# 0xB8 -1.0, 0x7F NaN.
_E4M3 = {0x00: 0.0, 0x30: 0.5, 0x38: 1.0, 0x40: 2.0, 0xB8: -1.0}


def _e4m3(shape: tuple[int, int], stream: int) -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(stream)
    codes = rng.choice(np.array(list(_E4M3), dtype=np.uint8), size=shape)
    values = np.vectorize(_E4M3.get)(codes).astype(np.float32)
    return codes.tobytes(), values


@pytest.mark.parametrize("mode", ["sampled", "full"])
def test_f8_target_embedding_is_read_as_stored(tmp_path: Path, mode: str) -> None:
    codes, values = _e4m3((VOCAB, H), 70)
    draft = trained_speculators(stream=70)
    draft.tensors["embed_tokens.weight"].data = f.bf16_bytes(values)
    path = draft.write(tmp_path / "draft")
    same = f.llama_target(tmp_path / "same")
    f.write_checkpoint(
        same, None, {"model.embed_tokens.weight": Tensor("F8_E4M3", (VOCAB, H), codes)}
    )
    assert not value_codes(check_path(path, target=same, values=mode))
    other_codes, _ = _e4m3((VOCAB, H), 71)
    other = f.llama_target(tmp_path / "other")
    f.write_checkpoint(
        other, None, {"model.embed_tokens.weight": Tensor("F8_E4M3", (VOCAB, H), other_codes)}
    )
    assert "DF701" in value_codes(check_path(path, target=other, values=mode))


@pytest.mark.parametrize("mode", ["sampled", "full"])
def test_f8_draft_tensors_are_checked(tmp_path: Path, mode: str) -> None:
    draft = trained_speculators(stream=72)
    codes, _ = _e4m3((H, 3 * H), 72)
    nan = bytearray(codes)
    nan[100] = 0x7F
    draft.tensors["fc.weight"] = Tensor("F8_E4M3", (H, 3 * H), bytes(nan))
    draft.tensors["layers.0.mlp.down_proj.weight"] = Tensor("F8_E5M2", (H, 2 * H), None)
    report = check_path(draft.write(tmp_path / "draft"), values=mode)
    codes_found = {x.code: x.message for x in report.findings if x.code in VALUE_CODES}
    assert "1 NaN" in codes_found["DF705"] and "fc.weight" in codes_found["DF705"]
    assert "down_proj" in codes_found["DF703"]


def test_recipes_do_not_claim_convert_fixes_value_findings(tmp_path: Path) -> None:
    from draftfit.render.matrix_markdown import render_markdown

    draft, _, k25 = _kimi_pair(tmp_path)
    matrix = build_matrix(open_checkpoint(draft), open_target(k25), values="sampled")
    for row in matrix.rows:
        assert row.verdict in ("incompatible", "drafts-garbage")
        if row.recipe is not None:
            # the recipe never claims to fix it; it lists it as what still applies
            claims = [n for n in row.recipe.notes if "fixes" in n]
            assert "DF701" not in " ".join(claims), row.recipe.notes
            assert "DF701" in row.recipe.remaining
    text = render_markdown(matrix)
    assert "reading a sample of the weights" in text and "without loading" not in text
    plain = render_markdown(build_matrix(open_checkpoint(draft), open_target(k25)))
    assert "without loading weights" in plain


def _stored(values: np.ndarray, dtype: str) -> bytes:
    if dtype == "BF16":
        return f.bf16_bytes(values)
    return values.astype({"F16": "<f2", "F32": "<f4", "F64": "<f8"}[dtype]).tobytes()


def _compared(draft: bytes, draft_dtype: str, target: bytes, target_dtype: str, shape):
    """The comparison of stored rows (`add_raw`) and of the same rows decoded (`add`)."""
    from draftfit.values.facts import Comparison
    from draftfit.values.stats import ComparisonAccumulator

    rows, width = shape
    results = []
    for raw in (True, False):
        acc = ComparisonAccumulator(Comparison("embedding", "e", "e", "f", plan_coverage(rows)))
        if raw:
            acc.add_raw(0, rows, width, draft, draft_dtype, target, target_dtype)
        else:
            acc.add(
                0,
                decode(draft, draft_dtype).reshape(shape),
                decode(target, target_dtype).reshape(shape),
            )
        results.append(acc.finish())
    return results


@pytest.mark.parametrize("dtype", ["BF16", "F16", "F32", "F64"])
def test_stored_rows_compare_like_decoded_rows(dtype: str) -> None:
    values = f.weights("trained", (12, 40), 70)
    nan_row = values.copy()
    nan_row[5, 7] = np.nan  # identical bytes, but a NaN row is not an exact match
    signed_zero = values.copy()
    signed_zero[2, 3] = 0.0
    negative_zero = signed_zero.copy()
    negative_zero[2, 3] = -0.0  # different bytes, equal values
    moved = values.copy()
    moved[9, 1] += 1.0
    pairs = [(values, values), (nan_row, nan_row), (signed_zero, negative_zero), (values, moved)]
    for mine, theirs in pairs:
        raw, decoded = _compared(
            _stored(mine, dtype), dtype, _stored(theirs, dtype), dtype, values.shape
        )
        assert raw == decoded
    raw, decoded = _compared(_stored(values, "F32"), "F32", _stored(values, dtype), dtype, (12, 40))
    assert raw == decoded  # two dtypes: compared on decoded values


def test_all_zero_blocks_have_the_facts_of_their_values() -> None:
    from draftfit.values.facts import TensorFacts
    from draftfit.values.stats import Moments, TensorAccumulator

    zeros = np.zeros((8, 24), np.float32)
    for dtype in ("BF16", "F16", "F32", "F64"):
        facts = TensorFacts("fc", "fc", "f", dtype, zeros.shape, plan_coverage(8))
        acc = TensorAccumulator(facts, chunk_width=8)
        acc.add(_stored(zeros, dtype), 8, 24)
        acc.finish()
        reference = Moments()
        reference.add(zeros.ravel())
        assert (facts.mean, facts.std, facts.kurtosis) == reference.result()
        assert facts.all_zero and not facts.all_one and facts.constant_rows == 8
        assert [c.constant_rows for c in facts.chunks] == [8, 8, 8]
        assert all(c.all_zero and c.kurtosis is None for c in facts.chunks)
        assert [c.same_as for c in facts.chunks] == [None, 0, 0]
        mixed, _ = _stats(np.where(np.arange(24) % 2, -0.0, 0.0) * np.ones((8, 1)), dtype)
        assert mixed.all_zero and mixed.constant_rows == 0  # -0.0 and +0.0 are stored apart


@pytest.mark.parametrize("dtype", ["BF16", "F32"])
def test_signatures_of_a_block_larger_than_one_piece(dtype: str) -> None:
    values = f.weights("trained", (512, 1024), 71)  # 1-2 MB stored: several pieces
    values[500, 1000] = -96.0  # the largest magnitude, in the last piece
    facts, _ = _stats(values, dtype)
    assert facts.max_abs == 96.0 and facts.nan == 0
    values[510, 3] = np.nan
    facts, _ = _stats(values, dtype)
    assert facts.nan == 1 and facts.max_abs == 96.0
