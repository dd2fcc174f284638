"""Property tests: the readers, check, recipes, diff and convert planning never crash on
mutated bytes, headers, configs and pickles.

A short, deterministic budget (`derandomize=True`, no example database): the properties
that run whole commands take a few examples in the quick run (`-m "not slow"`) and their
full budget in the full run; `bench/fuzz.py` runs the long reproducible campaign.
"""

from __future__ import annotations

import contextlib
import io
import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draftfit.checker import check_checkpoint, resolve_engines
from draftfit.checkpoint import load_checkpoint
from draftfit.checkpoint.jsonread import JsonLimitError, JsonSyntaxError, parse_json
from draftfit.checkpoint.safetensors import parse_header
from draftfit.checkpoint.torchbin import read_torch_bin
from draftfit.commands.comparison import diff_checkpoints
from draftfit.commands.recipe import attach_recipes
from draftfit.conversion.planner import plan_conversion
from draftfit.draft.description import describe
from draftfit.draft.target import load_target
from draftfit.errors import DraftfitError
from draftfit.rule_ids import RuleId
from draftfit.rules import all_rules
from tests import factory as f
from tests.sampling import two_budgets as sampled_twice
from tests.torchbin_factory import write_torch_zip

FAST = settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SLOW = settings(FAST, max_examples=25)
# The quick run's share of the SLOW properties (each also runs at SLOW, marked `slow`).
FEW = settings(FAST, max_examples=3)
# The quick run's share of the FAST (reader) properties.
SOME = settings(FAST, max_examples=20)


def two_budgets(*strategies: st.SearchStrategy[Any]) -> Any:
    """The property `body` twice: at the FAST budget (marked `slow`) and at SOME examples
    (the quick run)."""
    return sampled_twice(FAST, SOME, *strategies)


KNOWN_RULES = {r.name for r in all_rules()}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([2**31 - 1, 2**63 - 1])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
tokens = st.sampled_from(
    [b"[" * 200, b"{", b"}", b'"', b"\\", b"\xff", b"9" * 60, b"1e999", b",", b":", b"NaN"]
)


def _json_reader_raises_only_its_own_errors(data: bytes) -> None:
    try:
        document = parse_json(data)
    except (JsonLimitError, JsonSyntaxError):
        return
    assert isinstance(document.duplicate_keys, tuple)


test_json_reader_raises_only_its_own_errors, test_json_reader_raises_only_its_own_errors_few = (
    two_budgets(st.binary(max_size=300) | st.lists(tokens, max_size=8).map(b"".join))(
        _json_reader_raises_only_its_own_errors
    )
)


def _json_reader_agrees_with_json_within_caps(value: Any) -> None:
    text = json.dumps(value).encode()
    # Compared as text: NaN never equals itself.
    assert json.dumps(parse_json(text).value) == json.dumps(json.loads(text))


test_json_reader_agrees_with_json_within_caps, test_json_reader_agrees_with_json_few = two_budgets(
    json_values
)(_json_reader_agrees_with_json_within_caps)


def _known(damage: list[Any]) -> None:
    for item in damage:
        assert isinstance(item.rule, RuleId) and item.kind in KNOWN_RULES, item


entries = st.dictionaries(
    st.text(max_size=6),
    st.fixed_dictionaries(
        {},
        optional={
            "dtype": st.sampled_from(["F32", "BF16", "bf16", "F4", "I64", "X"]) | json_values,
            "shape": st.lists(st.integers(min_value=-2, max_value=2**70), max_size=70)
            | json_values,
            "data_offsets": st.lists(st.integers(min_value=-2, max_value=2**70), max_size=3)
            | json_values,
        },
    )
    | json_values,
    max_size=6,
)


def _safetensors_header_never_raises(header: dict[str, Any], data_size: int) -> None:
    raw = json.dumps(header).encode()
    result = parse_header(raw, data_size, "model.safetensors", len(raw))
    _known(result.damage)


test_safetensors_header_never_raises, test_safetensors_header_never_raises_few = two_budgets(
    entries, st.integers(min_value=0, max_value=4096)
)(_safetensors_header_never_raises)


def _safetensors_header_bytes_never_raise(raw: bytes) -> None:
    _known(parse_header(raw, 64, "model.safetensors", len(raw)).damage)


test_safetensors_header_bytes_never_raise, test_safetensors_header_bytes_never_raise_few = (
    two_budgets(st.binary(max_size=200))(_safetensors_header_bytes_never_raise)
)


SNIPPETS = [
    b"cos\nsystem\n",
    b"cbuiltins\neval\n",
    b"\x8c\x02os\x8c\x06system\x93",
    b"(X\x02\x00\x00\x00idios\nsystem\n",
    b"K\x01" + b"\x85" * 500,
    b"(" * 300 + b"K\x01" + b"\x91" * 300,
    b"r\xff\xff\xff\x7f",
    b"\x8d" + struct.pack("<Q", 2**60),
    b"\x82\x01",
    b"R",
    b"b",
    b"\x81",
    b".",
]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("clean")
    bin_draft = f.eagle1().write(root / "bin", fmt="bin")
    with zipfile.ZipFile(bin_draft / "pytorch_model.bin") as archive:
        name = next(n for n in archive.namelist() if n.endswith("data.pkl"))
        (root / "data.pkl").write_bytes(archive.read(name))
    return {
        "root": root,
        "draft": f.specforge().write(root / "draft"),
        "target": f.llama_target(root / "target"),
        "data.pkl": root / "data.pkl",
    }


def _torch_bin_reader_never_raises(
    clean: dict[str, Path], inserts: list[tuple[float, bytes]], cut: int
) -> None:
    data = bytearray(clean["data.pkl"].read_bytes())
    for where, snippet in inserts:
        at = int(where * len(data))
        data[at:at] = snippet
    if cut < len(data) and cut % 3 == 0:
        del data[cut:]
    path = clean["root"] / "mutated.bin"
    write_torch_zip(path, [], data_pkl=bytes(data))
    tensors, damage = read_torch_bin(path, "pytorch_model.bin")
    assert isinstance(tensors, dict)
    _known(damage)


test_torch_bin_reader_never_raises, test_torch_bin_reader_never_raises_few = two_budgets(
    st.lists(st.tuples(st.floats(min_value=0, max_value=1), st.sampled_from(SNIPPETS)), max_size=4),
    st.integers(min_value=0, max_value=10_000),
)(_torch_bin_reader_never_raises)


def _run_commands(draft: Path, clean_draft: Path, target_dir: Path) -> None:
    checkpoint = load_checkpoint(draft)
    target = load_target(target_dir)
    profiles = resolve_engines(["all"])
    report = check_checkpoint(checkpoint, target, profiles)
    attach_recipes(report)
    json.dumps(report.to_dict())
    diff_checkpoints(checkpoint, load_checkpoint(clean_draft), profiles[:1], target).to_dict()
    described = describe(checkpoint)
    for to in ("vllm", "sglang", "speculators"):
        profile = next(p for p in profiles if p.engine == ("sglang" if to == "sglang" else "vllm"))
        with contextlib.suppress(DraftfitError):  # a one-line refusal (exit 2), not a crash
            plan_conversion(checkpoint, described, to, profile, target, unsafe=True)


config_keys = st.sampled_from(
    [
        "hidden_size",
        "num_hidden_layers",
        "architectures",
        "eagle_config",
        "draft_vocab_size",
        "vocab_size",
        "head_dim",
        "rope_scaling",
        "eagle_aux_hidden_state_layer_ids",
        "speculators_config",
        "transformer_layer_config",
        "torch_dtype",
        "model_type",
    ]
)


config_edits = st.lists(st.tuples(config_keys, json_values), min_size=1, max_size=3)


@pytest.mark.slow
@SLOW
@given(config_edits)
def test_commands_never_crash_on_mutated_configs(
    clean: dict[str, Path], edits: list[tuple[str, Any]]
) -> None:
    _mutated_config(clean, edits)


@FEW
@given(config_edits)
def test_commands_never_crash_on_a_few_mutated_configs(
    clean: dict[str, Path], edits: list[tuple[str, Any]]
) -> None:
    _mutated_config(clean, edits)


def _mutated_config(clean: dict[str, Path], edits: list[tuple[str, Any]]) -> None:
    draft = clean["root"] / "config-mutant"
    if not draft.exists():
        f.specforge().write(draft)
    config = json.loads((clean["draft"] / "config.json").read_text())
    for key, value in edits:
        config[key] = value
    (draft / "config.json").write_text(json.dumps(config))
    _run_commands(draft, clean["draft"], clean["target"])


@pytest.mark.slow
@SLOW
@given(entries)
def test_commands_never_crash_on_mutated_headers(
    clean: dict[str, Path], extra: dict[str, Any]
) -> None:
    _mutated_header(clean, extra)


@FEW
@given(entries)
def test_commands_never_crash_on_a_few_mutated_headers(
    clean: dict[str, Path], extra: dict[str, Any]
) -> None:
    _mutated_header(clean, extra)


def _mutated_header(clean: dict[str, Path], extra: dict[str, Any]) -> None:
    draft = clean["root"] / "header-mutant"
    if not draft.exists():
        f.specforge().write(draft)
    data = (clean["draft"] / "model.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    header.update(extra)
    raw = json.dumps(header).encode()
    (draft / "model.safetensors").write_bytes(
        struct.pack("<Q", len(raw)) + raw + data[8 + length :]
    )
    _run_commands(draft, clean["draft"], clean["target"])


def test_zip_writer_round_trips(clean: dict[str, Path]) -> None:
    """The mutation above really reaches the reader: a clean data.pkl reads clean."""
    path = clean["root"] / "roundtrip.bin"
    with zipfile.ZipFile(clean["root"] / "bin" / "pytorch_model.bin") as archive:
        assert any(n.endswith("data.pkl") for n in archive.namelist())
    buffer = io.BytesIO(clean["data.pkl"].read_bytes())
    write_torch_zip(path, [], data_pkl=buffer.getvalue())
    _, damage = read_torch_bin(path, "pytorch_model.bin")
    assert all(d.kind != "unsafe-pickle-global" for d in damage)
