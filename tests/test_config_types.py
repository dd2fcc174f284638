"""Every config field draftfit reads, set to every JSON type and to values outside its domain
(zero for a positive count, `"7"` for a dtype or model type name): no crash, and a coded
finding.

The fields come from the code itself (an AST scan of the modules that read config) and
from the schema table; the scan fails the test when code reads a config key the table does
not know. Each field is written at its real place in a real checkpoint (speculators,
SpecForge, ModelOpt, MLA, EAGLE-1 and a target config) with each sample value, then
checked in-process; the heavier commands (check --recipe --engine all, diff, matrix,
convert) run on a fixed subset.
"""

from __future__ import annotations

import ast
import copy
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from draftfit.checker import check_checkpoint, resolve_engines
from draftfit.checkpoint import load_checkpoint
from draftfit.cli import main as cli
from draftfit.commands.inspection import inspect_path
from draftfit.draft.config_schema import (
    ANY,
    BOOL,
    DICT,
    DICT_LIST,
    DRAFT_SCHEMA,
    DTYPE_NAME,
    INT_LIST,
    LAYER_ID_LIST,
    LAYER_SCHEMA,
    MODEL_TYPE_NAME,
    NONNEG_INT,
    POS_INT,
    POS_NUMBER,
    STR,
    STR_LIST,
    TARGET_SCHEMA,
    TOKEN_IDS,
    Expect,
    schema_names,
)
from draftfit.draft.target import load_target
from tests import factory as f
from tests.factory import Draft
from tests.source_trees import parsed

SRC = Path(__file__).resolve().parents[1] / "src" / "draftfit"
CONFIG_READERS = [
    "draft/description.py",
    "draft/aux_counting.py",
    "draft/dialects.py",
    "draft/target.py",
    *sorted(str(p.relative_to(SRC)) for p in (SRC / "engines" / "procedure").glob("*.py")),
    *sorted(
        str(p.relative_to(SRC))
        for engine in ("vllm", "sglang", "trtllm")
        for p in (SRC / "engines" / engine).glob("*.py")
        if p.name
        not in (
            "__init__.py",
            "launch.py",
            "launch_checks.py",
            "launch_parallel.py",
            "kv.py",
            "head_share.py",
        )
    ),
    "engines/serve.py",
    "engines/vllm/engine.py",
    "engines/sglang/engine.py",
    "engines/trtllm/engine.py",
    "conversion/planner.py",
    "commands/recipe.py",
    "commands/diff_sides.py",
    "commands/diff_findings.py",
    "commands/inspection.py",
    "commands/release_matrix.py",
    *sorted(str(p.relative_to(SRC)) for p in (SRC / "rules").glob("*.py")),
]
READ_CALLS = {"get", "int_field", "field", "_int", "vint", "pointer", "setdefault", "pop"}
FIELD_TUPLES = {"LAYER_FIELDS", "EAGLE_FIELDS", "MOE_KEYS", "NORM_FLAGS", "MODELOPT_EAGLE_KEYS"}
# Keys those modules read from mappings that are not config.json: engine data facts,
# report and inspect output, tensor-role tables.
NOT_CONFIG = {
    "archs",
    "keys",  # the `mtp_fp8_exclusion_keys` fact's exclusion keys, in the order read
    "pick",  # ... and which of them the config class takes
    "rule",  # the `mtp_depth_rule` fact's rule (`divisible`, `exactly-one`)
    "d2t",
    "dense_only",
    "eagle3_one_model",
    "layer",  # the `mtp_missing_weights` fact's per-family outcome of a wholly missing layer
    "layer_module",
    "layers_remap",
    "below_read",  # a version's basis, merged into a matrix range's
    "fact",
    "read",
    "or_dense",
    "previews",  # the recipes' shared store (KeptCheck.shared): planned outputs
    "settings",  # the recipes' shared store: each recipe launch's settings
    "t2d",
    "unquantized_only",
}


def keys_read_by_code() -> set[str]:
    """String keys the config-reading modules look up (tensor names and flags left out)."""
    found: set[str] = set()
    for rel in CONFIG_READERS:
        tree = parsed(SRC / rel)
        for node in ast.walk(tree):
            key = None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in READ_CALLS
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                key = node.args[0].value
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in FIELD_TUPLES for t in node.targets
            ):
                found |= {
                    c.value
                    for c in ast.walk(node.value)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
            if isinstance(key, str):
                found.add(key)
    return {k for k in found if k and "." not in k and not k.startswith(("-", "*"))}


def test_schema_covers_every_key_the_code_reads() -> None:
    read = keys_read_by_code()
    assert len(read) > 60  # the scan really found the readers
    known = schema_names(DRAFT_SCHEMA) | schema_names(TARGET_SCHEMA)
    missing = read - known - NOT_CONFIG
    assert not missing, f"config keys read without a schema entry: {sorted(missing)}"
    stale = NOT_CONFIG - read
    assert not stale, f"NOT_CONFIG names keys no longer read: {sorted(stale)}"


# ------------------------------------------------------------------ samples and oracle

SAMPLES: list[tuple[str, object]] = [
    ("null", None),
    ("string", "7"),
    ("bool", True),
    ("float", 64.0),
    ("negative", -3),
    ("huge", 10**30),
    ("int-list", [1, 2]),
    ("dict", {"a": 1}),
    ("dict-list", [{"a": 1}]),
    # Value domains, not only JSON types: zero, and names engines know.
    ("zero", 0),
    ("dtype-name", "float16"),
    ("type-name", "qwen2_moe"),
]
# Which samples each kind accepts, written out by hand (not computed by draftfit).
ACCEPTS: dict[str, set[str]] = {
    POS_INT: set(),
    NONNEG_INT: {"zero"},
    POS_NUMBER: {"float", "huge"},  # 1e30 is odd but a number every engine reads
    BOOL: {"bool"},
    STR: {"string", "dtype-name", "type-name"},
    DTYPE_NAME: {"dtype-name"},  # "7" names no dtype
    MODEL_TYPE_NAME: {"dtype-name", "type-name"},  # "float16" is a name; "7" is not
    STR_LIST: set(),
    INT_LIST: {"int-list"},
    LAYER_ID_LIST: {"int-list"},
    TOKEN_IDS: {"int-list", "zero"},
    DICT: {"dict"},
    DICT_LIST: {"dict-list"},
    ANY: {label for label, _ in SAMPLES},
}


def accepted(expect: Expect, label: str) -> bool:
    return label in ACCEPTS[expect.kind] or (label == "null" and expect.nullable)


def _llama_target(tmp: Path) -> Path:
    return f.llama_target(tmp / "target")


def _legacy_eagle1() -> Draft:
    """vLLM's legacy EAGLE-1 layout: the decoder config nested under `model`."""
    config = {
        "model_type": "eagle",
        "architectures": ["EAGLEModel"],
        "model": {"model_type": "llama", **f.llama_layer_config()},
    }
    return Draft(config, f.eagle1().tensors)


# Each base: a checkpoint builder and the places (pointer prefix, schema) it exercises.
Base = tuple[Callable[[], Draft], list[tuple[str, Mapping[str, Expect]]]]
LAYER = {k: v for k, v in DRAFT_SCHEMA.items() if v.children is None or k == "model"}
BASES: dict[str, Base] = {
    "specforge": (
        lambda: f.specforge(nested_aux=[1, 3, 4]),
        [("", LAYER), ("/eagle_config", DRAFT_SCHEMA["eagle_config"].children or {})],
    ),
    "speculators": (
        lambda: f.speculators(aux=[2, 4, 5], variant="converted"),
        [
            ("", {k: v for k, v in DRAFT_SCHEMA.items() if k != "model"}),
            (
                "/transformer_layer_config",
                DRAFT_SCHEMA["transformer_layer_config"].children or {},
            ),
            ("/speculators_config", DRAFT_SCHEMA["speculators_config"].children or {}),
            (
                "/speculators_config/proposal_methods/0",
                {"speculative_tokens": Expect(POS_INT, crash=False)},
            ),
            (
                "/speculators_config/verifier",
                (DRAFT_SCHEMA["speculators_config"].children or {})["verifier"].children or {},
            ),
        ],
    ),
    "mla": (
        f.mla_draft,
        [("", {k: LAYER[k] for k in LAYER if "lora" in k or k.endswith("head_dim")})],
    ),
    "legacy": (_legacy_eagle1, [("/model", LAYER_SCHEMA)]),
    "eagle1": (
        f.eagle1,
        [("", {k: LAYER[k] for k in ("hidden_size", "bias", "num_hidden_layers")})],
    ),
}


def combos() -> Iterator[tuple[str, str, Expect, str, object]]:
    for base, (_, places) in BASES.items():
        for prefix, schema in places:
            for name, expect in schema.items():
                for label, value in SAMPLES:
                    yield base, f"{prefix}/{name}", expect, label, value


def set_at(config: dict, pointer: str, value: object) -> None:
    *parents, key = pointer.strip("/").split("/")
    node = config
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[key] = value


def _codes_at(report, pointer: str) -> set[str]:
    return {
        f.code
        for f in report.findings
        if f.code in ("DF118", "DF119") and f.location.pointer == pointer
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    root = tmp_path_factory.mktemp("bases")
    out = {}
    for base, (build, _) in BASES.items():
        draft = build()
        out[base] = (draft.write(root / base), draft.config)
    _llama_target(root)
    return out


PROFILES = resolve_engines(["vllm", "sglang", "trtllm"])


# The sweeps below take one combination in SAMPLE_EVERY in the quick run ("sample") and
# the others in the full run ("rest", marked `slow`).
SAMPLE_EVERY = 25
PARTS = ("sample", pytest.param("rest", marks=pytest.mark.slow))


def _in_part(index: int, part: str) -> bool:
    return (index % SAMPLE_EVERY == 0) == (part == "sample")


@pytest.mark.parametrize("part", PARTS)
def test_every_field_and_type_in_check_and_inspect(written, tmp_path: Path, part: str) -> None:
    """check (three engines, with a target) and inspect: never a crash; the wrong type is
    reported at its pointer with the code its schema entry names, and only then."""
    target = load_target(_llama_target(tmp_path))
    failures = []
    count = 0
    chosen = [c for n, c in enumerate(combos()) if _in_part(n, part)]
    for base, pointer, expect, label, value in chosen:
        path, config = written[base]
        mutated = copy.deepcopy(config)
        set_at(mutated, pointer, value)
        (path / "config.json").write_text(json.dumps(mutated))
        checkpoint = load_checkpoint(path)
        report = check_checkpoint(checkpoint, target, PROFILES)
        inspect_path(path)
        count += 1
        codes = _codes_at(report, pointer)
        want = set() if accepted(expect, label) else {"DF119" if not expect.crash else "DF118"}
        if codes != want:
            failures.append(f"{base} {pointer}={label}: {sorted(codes)} != {sorted(want)}")
        if want and any(e.verdict == "compatible" for e in report.engines):
            failures.append(f"{base} {pointer}={label}: called compatible")
    for path, config in written.values():
        (path / "config.json").write_text(json.dumps(config))
    assert count > (20 if part == "sample" else 500)
    assert not failures, "\n".join(failures[:40])


@pytest.mark.parametrize("part", PARTS)
def test_every_target_field_and_type(written, tmp_path: Path, part: str) -> None:
    draft = load_checkpoint(written["specforge"][0])
    fields = [
        (prefix, name, expect, label, value)
        for prefix, schema in (
            ("", TARGET_SCHEMA),
            ("/text_config", TARGET_SCHEMA["text_config"].children),
        )
        for name, expect in (schema or {}).items()
        for label, value in SAMPLES
    ]
    chosen = [field for n, field in enumerate(fields) if _in_part(n, part)]
    assert chosen
    for prefix, name, expect, label, value in chosen:
        target_dir = f.llama_target(tmp_path / "t")
        config = json.loads((target_dir / "config.json").read_text())
        if prefix:
            config = {"architectures": ["X"], "text_config": config}
        set_at(config, f"{prefix}/{name}", value)
        (target_dir / "config.json").write_text(json.dumps(config))
        report = check_checkpoint(draft, load_target(target_dir), PROFILES)
        codes = _codes_at(report, f"{prefix}/{name}")
        want = set() if accepted(expect, label) else {"DF118" if expect.crash else "DF119"}
        assert codes == want, f"target {prefix}/{name}={label}"


# A fixed subset for the commands that cost more: every sample of the fields that shape
# the layer, the aux ids and the speculators structure.
HEAVY = [
    ("speculators", "/eagle_aux_hidden_state_layer_ids"),
    ("speculators", "/transformer_layer_config/hidden_size"),
    ("speculators", "/transformer_layer_config/model_type"),
    ("speculators", "/speculators_config/proposal_methods"),
    ("speculators", "/target_hidden_size"),
    ("specforge", "/eagle_config"),
    ("specforge", "/eagle_config/eagle_aux_hidden_state_layer_ids"),
    ("specforge", "/num_hidden_layers"),
    ("specforge", "/head_dim"),
    ("mla", "/kv_lora_rank"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("base", "pointer"), HEAVY)
def test_every_command_survives(
    written, tmp_path: Path, base: str, pointer: str, capsys: pytest.CaptureFixture
) -> None:
    _every_command(written, tmp_path, base, pointer, SAMPLES, capsys)


def test_every_command_survives_a_sample(
    written, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The quick run's share of the sweep above: every command, one value in one field."""
    samples = [s for s in SAMPLES if s[0] == "huge"]
    _every_command(written, tmp_path, "specforge", "/num_hidden_layers", samples, capsys)


def _every_command(
    written,
    tmp_path: Path,
    base: str,
    pointer: str,
    samples: list[tuple[str, object]],
    capsys: pytest.CaptureFixture,
) -> None:
    """Every command on the draft with each of `samples` at `pointer`: never a crash."""
    source, config = written[base]
    target = str(_llama_target(tmp_path))
    for label, value in samples:
        draft = tmp_path / f"draft-{label}"
        mutated = copy.deepcopy(config)
        set_at(mutated, pointer, value)
        Draft(mutated, {}).write(draft)
        (draft / "model.safetensors").write_bytes((source / "model.safetensors").read_bytes())
        runs = [
            ["check", str(draft), "--target", target, "--engine", "all", "--recipe"],
            ["check", str(draft), "--format", "json"],
            ["inspect", str(draft)],
            ["diff", str(draft), str(source), "--target", target, "--engine", "all"],
            ["matrix", str(draft), "--target", target],
            ["convert", str(draft), "--to", "vllm", "--dry-run", "--target", target],
            ["convert", str(draft), "--to", "sglang", "-o", str(tmp_path / f"s-{label}")],
            [
                "convert",
                str(draft),
                "--to",
                "vllm",
                "-o",
                str(tmp_path / f"v-{label}"),
                "--unsafe-fixes",
            ],
            [
                "convert",
                str(draft),
                "--to",
                "speculators",
                "-o",
                str(tmp_path / f"u-{label}"),
                "--unsafe-fixes",
                "--target",
                target,
            ],
        ]
        for argv in runs:
            status = cli.main(argv)
            err = capsys.readouterr().err
            assert "internal error" not in err, f"{argv[0]} {pointer}={label}: {err}"
            assert status in (0, 1, 2), argv
            if status == 2:  # a usage refusal is one line, never a crash
                assert len(err.strip().splitlines()) == 1, err


def test_null_aux_ids_convert(tmp_path: Path) -> None:
    """A speculators config with `eagle_aux_hidden_state_layer_ids: null` (as published
    converted drafts have) converts, and the null is not reported as a wrong type."""
    draft = f.speculators(variant="converted")
    draft.config["eagle_aux_hidden_state_layer_ids"] = None
    path = draft.write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    out = tmp_path / "out"
    argv = ["convert", str(path), "--to", "vllm", "-o", str(out), "--unsafe-fixes", "--anyway"]
    assert cli.main([*argv, "--target", str(target)]) in (0, 1)
    written_config = json.loads((out / "config.json").read_text())
    assert written_config["eagle_aux_hidden_state_layer_ids"] == [2, 4, 5]
    report = check_checkpoint(load_checkpoint(path), load_target(target), PROFILES)
    assert not {f.code for f in report.findings} & {"DF118", "DF119"}


def test_convert_lists_a_wrong_typed_value_it_leaves_out(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The plan says which value is not carried over; the output never holds it."""
    draft = f.specforge(nested_aux=[1, 3, 4])
    draft.config["rope_theta"] = "1e4"
    path = draft.write(tmp_path / "d")
    argv = ["convert", str(path), "--to", "vllm", "--dry-run", "--format", "json"]
    assert cli.main(argv) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    edits = [e for e in plan["edits"] if e["target"] == "/rope_theta"]
    assert edits and edits[0]["safety"] == "display-only" and not edits[0]["applied"]
    assert "rope_theta" not in plan["config"]
    assert json.loads((path / "config.json").read_text())["rope_theta"] == "1e4"
