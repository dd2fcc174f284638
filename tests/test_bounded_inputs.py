"""The readers of this round's inputs, on their own: quantization module lists and their
`re:` patterns, an installed engine's metadata, and a launch file's path. Property tests
with a short, deterministic budget (the long campaign is `bench/fuzz.py`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draftfit.engines.draft_quant import read_draft_quant
from draftfit.engines.installed import MAX_VERSION_CHARS, find_installed
from draftfit.engines.name_patterns import MAX_NAME_CHARS, NameList, bounded_pattern
from draftfit.errors import UsageError
from draftfit.output.notices import notices_to
from draftfit.serve.reading import refuse_linked_path

FAST = settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
NAMES = (
    "model.layers.0.self_attn.q_proj",
    "model.layers.12.mlp.gate",
    "model.fc",
    "lm_head",
    "model.layers.0.mlp.down_proj",
)
# Patterns as producers write them: each is read, and matches as `re.match` does.
PRODUCER_PATTERNS = (
    ".*lm_head",
    ".*mlp.gate$",
    r"model\.layers\.\d+\.mlp\..*",
    r".*\.(q|k|v)_proj$",
    "model.layers.[0-9]+.self_attn.*",
    ".*fc",
)
# Patterns whose backtracking time explodes with the name's length, or that do not compile.
REFUSED_PATTERNS = (
    "(.*)*x$",
    "(a|a)*b",
    r"(\w+\s?)*$",
    "(a+)+b",
    ".*.*.*x",
    r"(x)\1",
    "(?=.*x).*y",
    "(",
    "[z-a]",
    "a" * 300,
)


@pytest.mark.parametrize("text", PRODUCER_PATTERNS)
def test_producer_patterns_match_as_the_engines_match_them(text: str) -> None:
    compiled = bounded_pattern(text)
    assert compiled is not None
    for name in NAMES:
        assert (compiled.match(name) is not None) == (re.match(text, name) is not None)


@pytest.mark.parametrize("text", REFUSED_PATTERNS)
def test_patterns_that_backtrack_or_do_not_compile_are_not_used(text: str) -> None:
    assert bounded_pattern(text) is None
    names = NameList([f"re:{text}"], "ignore")
    assert names.unreadable is not None and not names.matches("x" * 40)


def test_a_long_name_matches_no_pattern_but_an_exact_entry() -> None:
    long = "model." + "x" * MAX_NAME_CHARS
    names = NameList(["re:model.*", long], "ignore")
    assert names.unreadable is None and names.matches(long)
    assert not NameList(["re:model.*"], "ignore").matches(long)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
PATTERN_TEXT = st.text(alphabet="re:.*+?()[]{}|\\^$ab01,-", max_size=24)


@FAST
@given(
    ignore=JSON | st.lists(PATTERN_TEXT, max_size=6),
    targets=JSON | st.lists(PATTERN_TEXT | st.just("Linear"), max_size=6),
)
def test_any_module_list_is_read_without_error(ignore: Any, targets: Any) -> None:
    """Whatever `ignore` and `targets` hold, reading and matching them never raises; a list
    draftfit cannot use leaves the quantization unmodelled (no scheme, nothing covered)."""
    quant = read_draft_quant(
        {
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "ignore": ignore,
                "config_groups": {
                    "g": {"targets": targets, "weights": {"type": "float", "num_bits": 8}}
                },
            }
        }
    )
    assert quant is not None
    covered = [quant.covers(name.removeprefix("model.")) for name in NAMES]
    if quant.unreadable is not None:
        assert quant.scheme is None and not any(covered)


@FAST
@given(head=st.binary(max_size=400), version=st.text(max_size=80))
def test_any_metadata_gives_a_short_version_or_none(
    tmp_path: Path, head: bytes, version: str
) -> None:
    info = tmp_path / "site" / "vllm-1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    body = head + b"\nVersion: " + version.encode("utf-8", "surrogatepass") + b"\n"
    (info / "METADATA").write_bytes(body)
    said: list[str] = []
    with notices_to(said.append):
        found = find_installed([str(tmp_path / "site")])
    for item in found:
        assert 0 < len(item.version) <= MAX_VERSION_CHARS and item.version.isascii()
        assert item.version.isprintable()
    assert len(said) == (0 if found else 1)


def test_a_launch_file_named_through_no_link_passes(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "launch.yaml").write_text("a: 1\n")
    refuse_linked_path(tmp_path / "sub" / "launch.yaml", "--serve-config")
    (tmp_path / "linked").symlink_to(tmp_path / "sub")
    with pytest.raises(UsageError, match="symbolic link to a folder"):
        refuse_linked_path(tmp_path / "linked" / "launch.yaml", "--serve-config")
    (tmp_path / "sub" / "alias.yaml").symlink_to("launch.yaml")
    with pytest.raises(UsageError, match="it is a symbolic link"):
        refuse_linked_path(tmp_path / "sub" / "alias.yaml", "--serve-config")
