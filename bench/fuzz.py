"""Reproducible mutation fuzzing of draftfit's checkpoint readers and the commands built on them.

    PYTHONPATH=src:. python bench/fuzz.py -n 100000 --seed 42 [--save DIR] [--check-every 25]

Each iteration takes one clean input (a draft's `config.json`, its safetensors file, a
sharded draft's index, a PyTorch zip or legacy `.bin`), mutates it with a random generator
started from `--seed` (byte flips, truncation, spliced tokens: nesting bombs, 20,000-digit numbers,
non-UTF-8, quotes, duplicate keys; structure-aware edits of JSON values, of the safetensors
length prefix and header entries, and of pickle opcodes, including hostile globals and
deeply nested keys), writes it into a draft folder and reads the folder with
`load_checkpoint`. Every `--check-every`-th iteration also runs `check` (all engines),
recipes, `diff` against the clean draft, `inspect` and `convert` planning on it. Every
iteration also mutates one settings document (a `draftfit.toml`, a `--serve-config` JSON or
YAML file or inline JSON, a `--serve-args` command; alias bombs, nesting, long numbers,
surrogates, control characters) and reads it as draftfit does, from its own generator.
A third generator mutates the target's inputs every iteration: the target's `config.json`
(quantization exclusion lists of every producer: compressed-tensors `ignore`, ModelOpt
`exclude_modules`, Quark `exclude`, GPTQ `dynamic`; MTP fields), its shard index (100k+
shards, a huge `weight_map`, terminal escapes, `../` and absolute shard names) and a shard
header holding MTP layers (`model.layers.N.eh_proj`, `mtp.*`, `model.mtp_layers.*`); the
same exclusion lists go into the draft's config; and an installed engine's metadata
(`vllm-*.dist-info/METADATA`: huge and hostile versions). The target is read as a check reads
it, and every tenth `--check-every`-th iteration checks the clean draft against it, with
`--values` reading the target's weights through its index (and, in turn, checks in full a
draft with a hostile exclusion list). The work folders go to `$TMPDIR` (`/dev/shm` is
quicker where there is one).

A crash is any exception escaping those calls, or an iteration running past `--timeout`
seconds; its signature is the exception type and the innermost draftfit frame. The script
prints the iteration count, the distinct signatures and the time taken, and with `--save`
writes each signature's first crashing input to DIR. Exit status 1 when anything crashed.
Same `--seed` and `-n`: same inputs, so a crash reproduces.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import io
import json
import os
import random
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests import factory  # noqa: E402
from tests.torchbin_factory import legacy_bytes, simple  # noqa: E402

from draftfit.checker import check_checkpoint, resolve_engines  # noqa: E402
from draftfit.checkpoint import load_checkpoint  # noqa: E402
from draftfit.commands.comparison import diff_checkpoints  # noqa: E402
from draftfit.commands.inspection import inspect_path  # noqa: E402
from draftfit.commands.recipe import attach_recipes  # noqa: E402
from draftfit.conversion.planner import plan_conversion  # noqa: E402
from draftfit.draft.description import describe  # noqa: E402
from draftfit.draft.target import load_target  # noqa: E402
from draftfit.errors import DraftfitError  # noqa: E402

TOKENS: list[bytes] = [
    b"[" * 5000,
    b"{" * 3000,
    b'{"a":' * 2000,
    b"9" * 20_000,
    b"-" + b"1" * 45,
    b"1e999",
    b"NaN",
    b"-Infinity",
    b"\xff\xfe\xfd",
    b'"',
    b"\\",
    b"\\u0000",
    b"\x00",
    b"null",
    b"true",
    b"[]",
    b"{}",
    b",",
    b":",
    b'"__metadata__":',
    b'"dtype":"bf16"',
    b'"shape":[18446744073709551617]',
    b'"data_offsets":[5,1]',
    b"18446744073709551616",
    b"0.5",
    b'"../outside.safetensors"',
    b'"/etc/passwd"',
]
VALUES: list[Any] = [
    None,
    True,
    -1,
    0,
    2**31,
    2**31 - 1,
    2**64 + 1,
    10**39,
    1.5,
    float("inf"),
    "",
    "x" * 300,
    "bf16",
    "F4",
    "../x.safetensors",
    [],
    [1] * 70,
    [2**62, 2**62, 8],
    {},
    {"a": {"b": [1, {"c": None}]}},
]
# Opcode snippets that name or call globals, nest deeply or lie about lengths.
PICKLE_SNIPPETS: list[bytes] = [
    b"cos\nsystem\n",
    b"cbuiltins\neval\n",
    b"ctorch\nload\n",
    b"\x8c\x02os\x8c\x06system\x93",
    b"(X\x02\x00\x00\x00idios\nsystem\n",
    b"K\x01" + b"\x85" * 3000,
    b"(" * 2000 + b"K\x01" + b"\x91" * 2000,
    b"]" * 2000 + b"a" * 1999,
    b"r\xff\xff\xff\x7f",
    b"\x8d" + struct.pack("<Q", 2**60),
    b"\x82\x01",
    b"\x94",
    b"R",
    b"b",
    b"\x81",
    b"s",
    b"u",
    b".",
]


# Settings documents (a draftfit.toml, a launch's JSON/YAML settings, a launch command), each
# mutated with the byte mutators and these splices: alias bombs, nesting, long numbers,
# surrogate escapes, non-finite numbers, symlink-looking and control-character values.
SETTINGS_CLEAN: dict[str, bytes] = {
    "draftfit.toml": b'select = ["DF"]\nignore = ["DF903"]\n\n[per-checkpoint-ignores]\n'
    b'"drafts/*" = { DF3 = "trained before the fix" }\n',
    "serve.json": b'{"tensor-parallel-size": 2, "quantization": "fp8", "speculative_config": '
    b'{"method": "eagle3", "model": "draft", "num_speculative_tokens": 3}}',
    "serve.yaml": b"speculative_config:\n  decoding_type: Eagle3\n  max_draft_len: 3\n"
    b"  speculative_model_dir: draft\n  eagle3_layers_to_capture: [1, 2, -1]\ntp_size: 2\n",
    "args": b"VLLM_ATTENTION_BACKEND=FLASHMLA vllm serve T -tp 2 --quantization fp8 "
    b'--speculative-config \'{"method": "eagle3", "model": "draft"}\'',
}
SETTINGS_TOKENS: list[bytes] = [
    b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    b"e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
    b"r: &r [1, *r]\n",
    b"<<: *a\n",
    b"[" * 5000,
    b"{a = " * 3000,
    b"a." * 3000 + b"b = 1\n",
    b"9" * 20_000,
    b"1e999",
    b"-1",
    b".inf",
    b'"\\ud800"',
    b"\xff\xfe",
    b"\x1b[31m",
    b"\n::error::x\n",
    b"method: bogus\n",
    b"model: /dev/zero\n",
    b"--extra_llm_api_options spec.yaml ",
    b"--speculative-config '{\"method\": 1e999}' ",
]


# Quantization configs as each producer writes its exclusion list, and hostile lists for
# them (huge, deeply nested, wrong types, terminal escapes, patterns that do not compile or
# backtrack exponentially).
QUANT_CONFIGS: list[dict[str, Any]] = [
    {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"type": "float", "num_bits": 8, "symmetric": True},
            }
        },
        "ignore": ["lm_head", "re:.*mlp.gate$"],
    },
    {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]},
    {"quant_method": "quark", "global_quant_config": {}, "exclude": ["lm_head"]},
    {"quant_method": "gptq", "bits": 4, "dynamic": {"-:.*lm_head": {}, "+:.*mlp": {"bits": 8}}},
    {
        "quant_method": "gptq",
        "bits": 4,
        "group_size": 128,
        "sym": True,
        "desc_act": False,
        "dynamic": {"-:model\\.decoder\\..*": {}},
    },
    {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
    {"quant_method": "fp8", "ignored_layers": ["lm_head"], "modules_to_not_convert": ["fc"]},
]
EXCLUSION_KEYS = (
    "ignore",
    "exclude_modules",
    "exclude",
    "dynamic",
    "ignored_layers",
    "modules_to_not_convert",
)
EXCLUSION_VALUES: list[Any] = [
    ["re:("],
    ["re:(.*)*x$"],
    ["re:(a|a)*b"],
    ["re:" + "a" * 100_000],
    [f"re:.*layers\\.{i}\\..*" for i in range(300)],
    [f"model.layers.{i}.mlp.down_proj" for i in range(120_000)],
    ["lm_head\x1b[2J\x1b]8;;http://x\x07", "\n::error::x", "\u202e"],
    "lm_head",
    5,
    None,
    {"lm_head": 1},
    [[[[["lm_head"]]]]],
    [{"a": [1, 2]}],
    {"-:" + "x" * 5000: {"bits": "8"}},
    {"+:re:(": None},
]
MTP_NAMES = (
    "model.layers.{n}.eh_proj.weight",
    "model.layers.{n}.enorm.weight",
    "model.layers.{n}.hnorm.weight",
    "model.layers.{n}.shared_head.head.weight",
    "mtp.layers.0.eh_proj.weight",
    "mtp.fc.weight",
    "model.mtp_layers.0.input_proj.weight",
    "model.mtp_layers.0.final_layernorm.weight",
)
INDEX_SHARD_NAMES: list[str] = [
    "../outside.safetensors",
    "/etc/passwd",
    "sub/../../x.safetensors",
    "model-00002-of-00002.safetensors\x1b[2J",
    "model-00001-of-00002.safetensors",
    "link.safetensors",
    "",
]
METADATA_CLEAN = b"Metadata-Version: 2.1\nName: vllm\nVersion: 0.10.2\nSummary: x\n\nbody\n"
METADATA_TOKENS: list[bytes] = [
    b"Version: " + b"1" * 5_000 + b"\n",
    b"Version: " + b"9" * 100_000 + b"\n",
    b"Version: 0.10.2\x1b[2J\n",
    b"Version: \n",
    b"\n",
    b"\xff\xfe",
    b"\x00" * 70_000,
    b"Version: 1!2.3.post4.dev5+cu128\n",
    b"Version: " + b"." * 64 + b"\n",
]


class IterationTimeout(Exception):
    """An iteration ran past the time limit (a hang)."""


def _alarm(signum: int, frame: object) -> None:
    raise IterationTimeout()


# --------------------------------------------------------------------------- inputs


def build_inputs(root: Path) -> dict[str, Path]:
    """The clean drafts every mutation starts from (written once)."""
    drafts = {
        "st": factory.specforge().write(root / "clean-st"),
        "sharded": factory.specforge().write(root / "clean-sharded", shards=3),
        "bin": factory.eagle1().write(root / "clean-bin", fmt="bin"),
    }
    legacy = factory.eagle1().write(root / "clean-legacy", fmt="bin")
    pairs = [simple("fc.weight", "F32", (2, 2), bytes(16)), simple("d2t", "I64", (2,), bytes(16))]
    data, _ = legacy_bytes([p[0] for p in pairs], [p[1] for p in pairs])
    (legacy / "pytorch_model.bin").write_bytes(data)
    drafts["legacy"] = legacy
    factory.llama_target(root / "target")
    return drafts


def build_target(root: Path) -> Path:
    """A clean target with weights: config, two shards and their index (embedding in the
    second shard, so a value check reads the index), plus MTP layers as DeepSeek and MiMo
    store them."""
    import numpy as np

    embed = np.random.default_rng(7).standard_normal((256, 64)).astype("float32") * 0.02
    extra = {
        name.format(n=8): factory.Tensor("BF16", (64, 128) if "proj" in name else (64,))
        for name in MTP_NAMES
    }
    path = factory.values_target(
        root / "target-weights", embed, extra=extra, shards=2, num_nextn_predict_layers=1
    )
    index = json.loads((path / "model.safetensors.index.json").read_text())
    first, second = sorted({v for v in index["weight_map"].values()})
    for name in list(index["weight_map"]):
        index["weight_map"][name] = second if "embed" in name else first
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    return path


# --------------------------------------------------------------------------- mutators


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """Byte-level damage: flips, sets, splices of tokens, slices duplicated or cut."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if not out:
            out += rng.choice(TOKENS)
        elif choice < 0.3:
            out[rng.randrange(len(out))] = rng.randrange(256)
        elif choice < 0.55:
            at = rng.randrange(len(out) + 1)
            out[at:at] = rng.choice(TOKENS)
        elif choice < 0.7:
            at = rng.randrange(len(out))
            del out[at : at + rng.randint(1, 64)]
        elif choice < 0.85:
            at = rng.randrange(len(out))
            size = rng.randint(1, 256)
            out[at:at] = out[at : at + size]
        else:
            del out[rng.randrange(len(out)) :]
    return bytes(out)


def mutate_json_value(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """Replace, add or remove one value somewhere in a parsed JSON document."""
    if isinstance(value, dict) and value and depth < 6 and rng.random() < 0.7:
        key = rng.choice(list(value))
        if rng.random() < 0.1:
            del value[key]
        else:
            value[key] = mutate_json_value(rng, value[key], depth + 1)
        return value
    if isinstance(value, list) and value and depth < 6 and rng.random() < 0.7:
        at = rng.randrange(len(value))
        value[at] = mutate_json_value(rng, value[at], depth + 1)
        return value
    return copy.deepcopy(rng.choice(VALUES))  # a copy: a later edit must not change VALUES


def mutate_json_text(rng: random.Random, data: bytes) -> bytes:
    try:
        value = json.loads(data)
    except ValueError:
        return mutate_bytes(rng, data)
    value = mutate_json_value(rng, value)
    text = json.dumps(value).encode()
    if rng.random() < 0.2 and text.startswith(b"{") and len(text) > 2:
        first_key_end = text.find(b",")
        if first_key_end > 0:
            text = b"{" + text[1:first_key_end] + b"," + text[1:]  # a duplicate key
    return text


def mutate_safetensors(rng: random.Random, data: bytes) -> bytes:
    (length,) = struct.unpack("<Q", data[:8])
    header, rest = data[8 : 8 + length], data[8 + length :]
    choice = rng.random()
    if choice < 0.15:
        lie = rng.choice([0, 1, length - 1, length + 1, 2**63, 2**64 - 1, rng.getrandbits(40)])
        return struct.pack("<Q", max(lie, 0) % 2**64) + header + rest
    if choice < 0.6:
        header = mutate_json_text(rng, header)
    elif choice < 0.85:
        header = mutate_bytes(rng, header)
    else:
        rest = mutate_bytes(rng, rest) if rest else rest
    return struct.pack("<Q", len(header)) + header + rest


def mutate_pickle(rng: random.Random, data_pkl: bytes) -> bytes:
    out = bytearray(data_pkl)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(out) + 1)
        if rng.random() < 0.6:
            out[at:at] = rng.choice(PICKLE_SNIPPETS)
        elif out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def mutate_zip(rng: random.Random, data: bytes) -> bytes:
    if rng.random() < 0.4:
        return mutate_bytes(rng, data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for info, content in members:
            if info.filename.endswith("data.pkl"):
                content = mutate_pickle(rng, content)
            archive.writestr(info, content)
    return buffer.getvalue()


def mutate_legacy(rng: random.Random, data: bytes) -> bytes:
    if rng.random() < 0.5:
        return mutate_bytes(rng, data)
    at = rng.randrange(40, len(data))
    return data[:at] + rng.choice(PICKLE_SNIPPETS) + data[at:]


# (draft kind, file name, mutator)
TARGETS: list[tuple[str, str, Callable[[random.Random, bytes], bytes]]] = [
    ("st", "config.json", mutate_json_text),
    ("st", "config.json", mutate_bytes),
    ("st", "model.safetensors", mutate_safetensors),
    ("sharded", "model.safetensors.index.json", mutate_json_text),
    ("sharded", "model.safetensors.index.json", mutate_bytes),
    ("sharded", "model-00002-of-00003.safetensors", mutate_safetensors),
    ("bin", "pytorch_model.bin", mutate_zip),
    ("legacy", "pytorch_model.bin", mutate_legacy),
]


# --------------------------------------------------------------------------- running


def exercise(draft: Path, clean: Path, target_dir: Path, full: bool) -> None:
    """Read the draft, and with `full` run every command's code path on it in memory."""
    checkpoint = load_checkpoint(draft)
    if not full:
        return
    target = load_target(target_dir)
    profiles = resolve_engines(["all"])
    report = check_checkpoint(checkpoint, target, profiles)
    attach_recipes(report)
    report.to_dict()
    diff_checkpoints(checkpoint, load_checkpoint(clean), profiles[:1], target).to_dict()
    inspect_path(draft).to_dict()
    described = describe(checkpoint)
    for to in ("vllm", "sglang", "speculators"):
        engine = "sglang" if to == "sglang" else "vllm"
        profile = next(p for p in profiles if p.engine == engine)
        try:
            plan = plan_conversion(checkpoint, described, to, profile, target, unsafe=True)
        except DraftfitError:
            continue  # a refusal the CLI reports in one line (exit 2), not a crash
        plan.to_dict()


def with_exclusions(rng: random.Random, config: dict[str, Any]) -> dict[str, Any]:
    """`config` with a producer's quantization config, its exclusion list hostile."""
    qc = json.loads(json.dumps(rng.choice(QUANT_CONFIGS)))
    key = rng.choice(EXCLUSION_KEYS)
    qc[key] = copy.deepcopy(rng.choice(EXCLUSION_VALUES))
    if rng.random() < 0.3:
        qc = mutate_json_value(rng, qc)
    where = config
    if rng.random() < 0.2 and isinstance(config.get("text_config"), dict):
        where = config["text_config"]
    where["quantization_config"] = qc
    return config


def mutate_target_config(rng: random.Random, data: bytes) -> bytes:
    """The target's config.json with a hostile exclusion list, MTP fields or other edits."""
    config = json.loads(data)
    choice = rng.random()
    if choice < 0.5:
        config = with_exclusions(rng, config)
    elif choice < 0.7:
        config["num_nextn_predict_layers"] = rng.choice([1, 0, -1, 2**31, "1", None, [1]])
        config["first_k_dense_replace"] = rng.choice([0, 3, -1, 2**40, "3", None, [3]])
        config["model_type"] = rng.choice(["deepseek_v3", "mimo", "glm4_moe", "qwen3_next"])
    else:
        return mutate_json_text(rng, data)
    return json.dumps(config).encode()


def mutate_target_index(rng: random.Random, data: bytes) -> bytes:
    """A target index: 100k+ shards, a huge weight map, hostile shard names, or damage."""
    index = json.loads(data)
    weight_map = index["weight_map"]
    choice = rng.random()
    if choice < 0.05:
        text = json.dumps(index).encode()
        at = text.index(b'"weight_map": {') + len(b'"weight_map": {')
        return text[:at] + _huge_weight_map() + b", " + text[at:]
    elif choice < 0.5:
        name = rng.choice(sorted(weight_map))
        weight_map[name] = rng.choice(INDEX_SHARD_NAMES)
    elif choice < 0.6:
        weight_map["model.embed\x1b[2J_tokens.weight\n::error::x"] = rng.choice(INDEX_SHARD_NAMES)
    elif choice < 0.7:
        for pattern in MTP_NAMES:
            weight_map[pattern.format(n=rng.choice([8, 61, 2**31]))] = rng.choice(INDEX_SHARD_NAMES)
    else:
        return mutate_json_text(rng, data) if rng.random() < 0.5 else mutate_bytes(rng, data)
    return json.dumps(index).encode()


@functools.cache
def _huge_weight_map() -> bytes:
    """The entries of a 1 TB MoE target's weight map: 120,000 tensors in as many shards."""
    return b", ".join(
        f'"model.layers.{i % 61}.mlp.experts.{i}.w{i % 3}.weight": '
        f'"model-{i:06d}-of-120000.safetensors"'.encode()
        for i in range(120_000)
    )


def mutate_metadata(rng: random.Random, data: bytes) -> bytes:
    if rng.random() < 0.5:
        return mutate_bytes(rng, data)
    at = data.index(b"Version")
    return data[:at] + rng.choice(METADATA_TOKENS) + data[at:]


TARGET_FILES: list[tuple[str, Callable[[random.Random, bytes], bytes]]] = [
    ("config.json", mutate_target_config),
    ("model.safetensors.index.json", mutate_target_index),
    ("model-00001-of-00002.safetensors", mutate_safetensors),
]


def exercise_target(target_dir: Path, draft: Path, full: bool) -> None:
    """Read the target as a check does; with `full`, check the clean draft against it, its
    weights' values included (the index is read for the embedding's shard)."""
    try:
        target = load_target(target_dir)
    except DraftfitError:
        return  # a target draftfit refuses in one line (exit 2), not a crash
    if not full:
        return
    checkpoint = load_checkpoint(draft)
    profiles = resolve_engines(["vllm", "sglang", "trtllm"])
    report = check_checkpoint(checkpoint, target, profiles, values="sampled")
    report.to_dict()


def exercise_draft_exclusions(rng: random.Random, work: Path, clean: Path, target: Path) -> None:
    """The clean draft with a hostile exclusion list in its config, checked in full."""
    config = json.loads((clean / "config.json").read_text())
    (work / "config.json").write_text(json.dumps(with_exclusions(rng, config)))
    checkpoint = load_checkpoint(work)
    profiles = resolve_engines(["all"])
    report = check_checkpoint(checkpoint, load_target(target), profiles)
    attach_recipes(report)
    report.to_dict()
    with contextlib.suppress(DraftfitError):  # a refusal (one line, exit 2), not a crash
        plan_conversion(checkpoint, describe(checkpoint), "vllm", profiles[0], None, unsafe=True)


def exercise_metadata(site: Path, data: bytes) -> None:
    """Find the installed engines with a mutated `vllm-*.dist-info/METADATA` on the path."""
    from draftfit.engines.installed import find_installed, installed_profile
    from draftfit.output.notices import notices_to

    (site / "vllm-1.dist-info" / "METADATA").write_bytes(data)
    with notices_to(lambda message: None):
        for item in find_installed([str(site)]):
            installed_profile(item)


def mutate_settings(rng: random.Random, data: bytes) -> bytes:
    """Byte mutations of a settings document, with settings splices."""
    if rng.random() < 0.5:
        return mutate_bytes(rng, data)
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice(SETTINGS_TOKENS) + data[at:]


def exercise_settings(folder: Path, name: str, data: bytes) -> None:
    """Read one mutated settings document as draftfit does; a refusal (one line, exit 2)
    is not a crash."""
    from draftfit.engines.launch import parse_serve_args, parse_serve_config
    from draftfit.settings.config_file import load

    path = folder / name
    path.write_bytes(data)
    try:
        if name == "draftfit.toml":
            load(path).ignores_for(folder)
            return
        if name == "args":
            settings = parse_serve_args(data.decode("utf-8", "surrogateescape"))
        elif name == "serve.json" and data[:1] == b"{" and rng_inline(data):
            settings = parse_serve_config(data.decode("utf-8", "surrogateescape"))
        else:
            settings = parse_serve_config(str(path))
        settings.summary().encode("utf-8")
        json.dumps(settings.to_dict()).encode("utf-8")
    except DraftfitError:
        pass


def rng_inline(data: bytes) -> bool:
    """Whether a JSON settings document is also given inline (every other length)."""
    return len(data) % 2 == 0


def _target_stream(rng: random.Random, iteration: int, check_every: int) -> list[tuple[str, bytes]]:
    """This iteration's target-side inputs: one mutated target file, and (in turn) a
    mutated engine metadata file or a draft with a hostile exclusion list."""
    name, mutator = rng.choice(TARGET_FILES)
    original = (TARGET_CLEAN[0] / name).read_bytes()
    inputs = [(name, mutator(rng, original))]
    if iteration % 2 == 0:
        inputs.append(("metadata", mutate_metadata(rng, METADATA_CLEAN)))
    elif check_every > 0 and iteration % (10 * check_every) == 1:
        inputs.append(("draft-exclusions", b""))
    return inputs


TARGET_CLEAN: list[Path] = []


def signature(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "draftfit" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{type(exc).__name__} at {where}"


def run(
    iterations: int,
    start: int,
    save: Path | None,
    check_every: int,
    timeout: int,
    progress: int = 10_000,
) -> int:
    rng = random.Random(start)
    crashes: dict[str, tuple[int, str]] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="draftfit-fuzz-") as tmp:
        root = Path(tmp)
        clean = build_inputs(root)
        target_dir = root / "target"
        work = root / "work"
        previous_kind = None
        settings_rng = random.Random(start + 1)  # the checkpoint stream stays as it was
        settings_dir = root / "settings"
        settings_dir.mkdir()
        target_rng = random.Random(start + 2)
        clean_target = build_target(root)
        TARGET_CLEAN[:] = [clean_target]
        target_work = root / "target-work"
        shutil.copytree(clean_target, target_work)
        exclusions_work = root / "exclusions-work"
        shutil.copytree(clean["st"], exclusions_work)
        site = root / "site"
        (site / "vllm-1.dist-info").mkdir(parents=True)
        signal.signal(signal.SIGALRM, _alarm)
        for iteration in range(iterations):
            name = settings_rng.choice(sorted(SETTINGS_CLEAN))
            mutated_settings = mutate_settings(settings_rng, SETTINGS_CLEAN[name])
            signal.alarm(timeout)
            try:
                exercise_settings(settings_dir, name, mutated_settings)
            except (Exception, IterationTimeout, RecursionError, MemoryError) as exc:
                key = signature(exc)
                if key not in crashes:
                    crashes[key] = (iteration, f"settings/{name}")
                    print(f"crash at iteration {iteration} (settings/{name}): {key}", flush=True)
                    if save is not None:
                        save.mkdir(parents=True, exist_ok=True)
                        (save / f"{len(crashes):03d}-settings-{name}").write_bytes(mutated_settings)
            finally:
                signal.alarm(0)
            for label, work_inputs in _target_stream(target_rng, iteration, check_every):
                signal.alarm(timeout)
                try:
                    if label == "metadata":
                        exercise_metadata(site, work_inputs)
                    elif label == "draft-exclusions":
                        exercise_draft_exclusions(
                            target_rng, exclusions_work, clean["st"], clean_target
                        )
                    else:
                        (target_work / label).write_bytes(work_inputs)
                        full = check_every > 0 and iteration % (10 * check_every) == 0
                        exercise_target(target_work, clean["st"], full)
                except (Exception, IterationTimeout, RecursionError, MemoryError) as exc:
                    key = signature(exc)
                    if key not in crashes:
                        crashes[key] = (iteration, f"target/{label}")
                        print(f"crash at iteration {iteration} (target/{label}): {key}", flush=True)
                        if save is not None:
                            save.mkdir(parents=True, exist_ok=True)
                            stem = f"{len(crashes):03d}-target-{label}"
                            if isinstance(work_inputs, bytes):
                                (save / stem).write_bytes(work_inputs)
                            (save / (stem + ".txt")).write_text(
                                f"{key}\niteration {iteration}, --seed {start}\n"
                                + "".join(traceback.format_exception(exc))
                            )
                finally:
                    signal.alarm(0)
                    if label in ("config.json", "model.safetensors.index.json") or label.endswith(
                        ".safetensors"
                    ):
                        shutil.copy(clean_target / label, target_work / label)
            kind, name, mutator = rng.choice(TARGETS)
            if kind != previous_kind:
                shutil.rmtree(work, ignore_errors=True)
                shutil.copytree(clean[kind], work)
                previous_kind = kind
            original = (clean[kind] / name).read_bytes()
            mutated = mutator(rng, original)
            (work / name).write_bytes(mutated)
            full = check_every > 0 and iteration % check_every == 0
            signal.alarm(timeout)
            try:
                exercise(work, clean["st"], target_dir, full)
            except (Exception, IterationTimeout, RecursionError, MemoryError) as exc:
                key = signature(exc)
                if key not in crashes:
                    crashes[key] = (iteration, f"{kind}/{name}")
                    print(f"crash at iteration {iteration} ({kind}/{name}): {key}", flush=True)
                    if save is not None:
                        save.mkdir(parents=True, exist_ok=True)
                        stem = f"{len(crashes):03d}-{kind}-{name}"
                        (save / stem).write_bytes(mutated)
                        (save / (stem + ".txt")).write_text(
                            f"{key}\niteration {iteration}, --seed {start}\n"
                            + "".join(traceback.format_exception(exc))
                        )
            finally:
                signal.alarm(0)
            (work / name).write_bytes(original)
            if progress > 0 and (iteration + 1) % progress == 0:
                rate = (iteration + 1) / (time.monotonic() - started)
                print(
                    f"{iteration + 1} iterations, {len(crashes)} crash signature(s), {rate:.0f}/s",
                    flush=True,
                )
    elapsed = time.monotonic() - started
    print(f"iterations: {iterations}")
    print(f"--seed: {start}")
    print(f"distinct crash signatures: {len(crashes)}")
    for key, (iteration, where) in sorted(crashes.items(), key=lambda item: item[1]):
        print(f"  {key} (first at iteration {iteration}, {where})")
    print(f"time: {elapsed:.1f} s")
    return 1 if crashes else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--iterations", type=int, default=10_000)
    parser.add_argument("--seed", dest="start", type=int, default=42)
    parser.add_argument("--save", type=Path, help="write each crash's first input here")
    parser.add_argument(
        "--check-every",
        type=int,
        default=25,
        help="run check, recipes, diff, inspect and convert planning every N iterations",
    )
    parser.add_argument("--timeout", type=int, default=20, help="seconds per iteration")
    parser.add_argument(
        "--progress", type=int, default=10_000, help="print a progress line every N iterations"
    )
    args = parser.parse_args(argv)
    return run(
        args.iterations, args.start, args.save, args.check_every, args.timeout, args.progress
    )


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
