"""DF0xx — file structure: damage the reader found in weight files, indexes and config.

Each rule here turns one kind of :class:`~draftfit.checkpoint.model.Damage` into findings;
they run once per checkpoint, whatever the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from draftfit.rule_ids import (
    DATA_OFFSETS_OUT_OF_RANGE,
    DATA_OFFSETS_OVERLAP,
    DATA_SECTION_NOT_COVERED,
    DUPLICATE_JSON_KEY,
    DUPLICATE_TENSOR,
    HEADER_LENGTH_OUT_OF_RANGE,
    HEADER_NOT_JSON_OBJECT,
    INDEX_MISSING_SHARD,
    INDEX_TENSOR_NOT_IN_SHARD,
    INVALID_CONFIG,
    INVALID_INDEX,
    INVALID_TENSOR_ENTRY,
    INVALID_TORCH_BIN,
    MISSING_CONFIG,
    MIXED_WEIGHT_FORMATS,
    NO_WEIGHTS,
    READER_LIMIT_EXCEEDED,
    TENSOR_BYTE_SIZE_MISMATCH,
    TENSOR_NOT_IN_INDEX,
    TRUNCATED_FILE,
    UNKNOWN_DTYPE,
    UNREADABLE_FILE,
    UNSAFE_PICKLE_GLOBAL,
    RuleId,
)
from draftfit.rules.base import (
    Check,
    Context,
    DocHolder,
    Location,
    Scope,
    Violation,
    documented_rule,
    names_rule,
)


def _damage(ctx: Context, rule_id: RuleId, fix: str | None = None) -> Iterator[Violation]:
    for item in ctx.checkpoint.damage:
        if names_rule(item.kind, rule_id):
            yield Violation(item.message, Location(item.file, item.pointer, item.tensor), fix)


def _structure_rule(rule_id: RuleId, summary: str, fix: str | None) -> Callable[[DocHolder], Check]:
    """Declare a rule that reports the reader's damage of kind `rule_id`."""
    return documented_rule(
        rule_id, summary, lambda ctx: _damage(ctx, rule_id, fix), scope=Scope.CHECKPOINT
    )


@_structure_rule(
    UNREADABLE_FILE,
    "a file cannot be read",
    "check file permissions and that the download completed",
)
def unreadable_file() -> None:
    """## What it checks
    Every file draftfit must read (config, index, weight files) can be opened and read.

    ## Why it matters
    An engine that cannot read a weight file fails while loading the draft.

    ## Example
    `model.safetensors` is a dangling symlink left by an interrupted download.

    ## Fix
    Re-download the file or fix its permissions.
    """


@_structure_rule(
    TRUNCATED_FILE,
    "a weight file is shorter than its header promises",
    "re-download or re-export the file; its tail is missing",
)
def truncated_file() -> None:
    """## What it checks
    A safetensors file holds at least the 8-byte header length and every byte its tensors'
    `data_offsets` point to; a `.bin` archive is complete.

    ## Why it matters
    A truncated file (interrupted upload or copy) makes the engine's loader fail or read
    past the end.

    ## Example
    The header declares tensors up to byte 1,048,576 of the data section, but the file holds
    only 524,288 data bytes.

    ## Fix
    Re-download or re-export the file.
    """


@_structure_rule(
    HEADER_LENGTH_OUT_OF_RANGE,
    "the safetensors header length points beyond the file",
    "the file is not a safetensors file or is corrupted; re-export it",
)
def header_length_out_of_range() -> None:
    """## What it checks
    The little-endian u64 at the start of a safetensors file (the header length) fits inside
    the file and under the format's 100 MB header limit.

    ## Why it matters
    A wrong length means the file is not safetensors (e.g. a pickle renamed `.safetensors`)
    or is corrupted; every loader refuses it.

    ## Example
    The length prefix says 8 GB for a 3 MB file.

    ## Fix
    Re-export the weights with `save_file` / `save_pretrained(safe_serialization=True)`.
    """


@_structure_rule(
    HEADER_NOT_JSON_OBJECT,
    "the safetensors header is not a JSON object",
    "re-export the file",
)
def header_not_json_object() -> None:
    """## What it checks
    The header bytes decode as UTF-8 JSON and hold an object.

    ## Why it matters
    Loaders parse the header to find every tensor; anything else is a corrupt file.

    ## Example
    The header is a JSON list, or binary garbage.

    ## Fix
    Re-export the weights.
    """


@_structure_rule(
    INVALID_TENSOR_ENTRY,
    "a header entry lacks a valid dtype, shape or data_offsets",
    "re-export the file",
)
def invalid_tensor_entry() -> None:
    """## What it checks
    Every header entry has a string `dtype`, a list of non-negative integers as `shape`, and
    `data_offsets` `[begin, end]`; `__metadata__` maps strings to strings.

    ## Why it matters
    Loaders reject malformed entries.

    ## Example
    `"shape": [4096, -1]`.

    ## Fix
    Re-export the weights.
    """


@_structure_rule(
    UNKNOWN_DTYPE,
    "a tensor's dtype is not a safetensors dtype",
    "re-export the tensor in a standard dtype (BF16, F16, F32, I64, BOOL)",
)
def unknown_dtype() -> None:
    """## What it checks
    Every tensor's `dtype` is one the safetensors format defines.

    ## Why it matters
    The engine's safetensors reader refuses the whole file.

    ## Example
    `"dtype": "BFLOAT16"` instead of `"BF16"`.

    ## Fix
    Re-export with a standard dtype.
    """


@_structure_rule(
    DATA_OFFSETS_OUT_OF_RANGE,
    "tensor data offsets are inverted or point outside the data section",
    "re-export the file",
)
def data_offsets_out_of_range() -> None:
    """## What it checks
    Each tensor's `data_offsets` satisfy `begin <= end` and lie inside the data section.

    ## Why it matters
    The loader would read bytes that are not the tensor's.

    ## Example
    `"data_offsets": [4096, 1024]`.

    ## Fix
    Re-export the weights.
    """


@_structure_rule(
    DATA_OFFSETS_OVERLAP,
    "two tensors' bytes overlap",
    "re-export the file",
)
def data_offsets_overlap() -> None:
    """## What it checks
    No two tensors share bytes of the data section.

    ## Why it matters
    The safetensors reference reader refuses overlapping tensors; hand-written writers
    produce them by mistake.

    ## Example
    `fc.weight` spans bytes 0..2048 and `norm.weight` 1024..1536.

    ## Fix
    Re-export the weights with a standard writer.
    """


@_structure_rule(
    DATA_SECTION_NOT_COVERED,
    "bytes of the data section belong to no tensor",
    "re-export the file",
)
def data_section_not_covered() -> None:
    """## What it checks
    The tensors tile the data section exactly: no gaps and no trailing bytes.

    ## Why it matters
    The safetensors reference reader rejects such files ("metadata incomplete buffer").

    ## Example
    A tensor was deleted from the header by hand, leaving its bytes behind.

    ## Fix
    Re-export the weights (`draftfit convert` writes valid files).
    """


@_structure_rule(
    TENSOR_BYTE_SIZE_MISMATCH,
    "a tensor's byte span does not match its dtype and shape",
    "re-export the file",
)
def tensor_byte_size_mismatch() -> None:
    """## What it checks
    `end - begin` equals the number of elements times the dtype's size.

    ## Why it matters
    The loader cannot view the bytes as the declared tensor.

    ## Example
    `BF16 [4096, 4096]` spanning 16 MiB instead of 32 MiB.

    ## Fix
    Re-export the weights.
    """


@_structure_rule(
    INDEX_MISSING_SHARD,
    "the shard index names a file that does not exist",
    "download the missing shard or regenerate the index",
)
def index_missing_shard() -> None:
    """## What it checks
    Every shard file named in `model.safetensors.index.json` (or the `.bin` index) exists.

    ## Why it matters
    The tensors mapped to it are missing, and the engine refuses to load the draft: vLLM
    raises `FileNotFoundError: Weight files referenced in index but missing` while it lists
    the weight files (confirmed by running vLLM 0.34.0).

    ## Example
    `model-00002-of-00002.safetensors` was not uploaded.

    ## Fix
    Download the missing shard, or rewrite the index.
    """


@_structure_rule(
    INDEX_TENSOR_NOT_IN_SHARD,
    "the shard index maps a tensor to a shard that does not hold it",
    "regenerate the index from the shards",
)
def index_tensor_not_in_shard() -> None:
    """## What it checks
    Every tensor listed in the index is stored in the shard the index names.

    ## Why it matters
    vLLM loads every shard the index lists, so it still finds the tensor (confirmed by
    running vLLM 0.34.0); loaders that trust the index per tensor (transformers, the Hub's
    metadata) look in the wrong file.

    ## Example
    The index maps `fc.weight` to shard 1, but it is stored in shard 2.

    ## Fix
    Regenerate the index from the shards' headers.
    """


@_structure_rule(
    DUPLICATE_TENSOR,
    "the same tensor is stored twice with different (or uncomparable) values",
    "remove the duplicate copy",
)
def duplicate_tensor() -> None:
    """## What it checks
    A tensor name appears in only one weight file, or its copies are byte-identical
    (copies up to 64 MB are compared).

    ## Why it matters
    vLLM loads every copy and keeps the last one it reads, without complaint (confirmed by
    running vLLM 0.34.0): with different values, which weights run depends on file order.

    ## Example
    `lm_head.weight` is in both shards after a botched merge.

    ## Fix
    Remove one copy (rewrite the shard without it).
    """


@_structure_rule(
    TENSOR_NOT_IN_INDEX,
    "a shard stores a tensor the index does not list",
    "regenerate the index from the shards",
)
def tensor_not_in_index() -> None:
    """## What it checks
    Every tensor stored in a shard is listed in the shard index.

    ## Why it matters
    vLLM loads every tensor of the listed shards (confirmed by running vLLM 0.34.0), but
    tools that trust the index (the Hub, transformers) miss it; the checkpoint means
    different things to different loaders.

    ## Example
    A `d2t` tensor was appended to shard 1 without updating the index.

    ## Fix
    Regenerate the index.
    """


@_structure_rule(
    INVALID_INDEX,
    "the shard index is not valid JSON or has no weight_map",
    "regenerate the index from the shards",
)
def invalid_index() -> None:
    """## What it checks
    `*.index.json` is a JSON object with a `weight_map` from tensor names to file names.

    ## Why it matters
    Loaders use it to find shards; a broken index stops the load.

    ## Example
    The index file is empty.

    ## Fix
    Regenerate the index.
    """


@_structure_rule(
    MISSING_CONFIG,
    "the checkpoint has no config.json",
    "add the config.json written by the training tool",
)
def missing_config() -> None:
    """## What it checks
    The checkpoint directory holds a `config.json`.

    ## Why it matters
    Engines build the draft model from it; without it nothing loads, and draftfit cannot
    check anything else about the draft.

    ## Example
    Only `model.safetensors` was copied out of a training run.

    ## Fix
    Copy the training run's `config.json` next to the weights.
    """


@_structure_rule(
    INVALID_CONFIG,
    "config.json is not valid JSON or not an object",
    "fix the JSON syntax",
)
def invalid_config() -> None:
    """## What it checks
    `config.json` is UTF-8 JSON holding an object.

    ## Why it matters
    Engines cannot parse the draft's configuration.

    ## Example
    A trailing comma after the last key.

    ## Fix
    Fix the JSON (e.g. `python -m json.tool config.json`).
    """


@_structure_rule(
    MIXED_WEIGHT_FORMATS,
    "both .safetensors and .bin weights are present",
    "delete the format you do not ship",
)
def mixed_weight_formats() -> None:
    """## What it checks
    The directory holds either `.safetensors` or PyTorch `.bin` weights, not both.

    ## Why it matters
    Engines load the `.safetensors` files and ignore the `.bin` ones; if the two differ,
    what you tested may not be what is served.

    ## Example
    `model.safetensors` and an older `pytorch_model.bin` side by side.

    ## Fix
    Remove the stale format.
    """


@_structure_rule(
    UNSAFE_PICKLE_GLOBAL,
    "a .bin file references code other than tensor rebuilding",
    "do not load this file; re-export the weights as safetensors",
)
def unsafe_pickle_global() -> None:
    """## What it checks
    A PyTorch `.bin` pickle references only torch's tensor-rebuild functions, storage types
    and `OrderedDict`. draftfit reads it with a restricted reader that never calls anything.

    ## Why it matters
    Any other global (e.g. `os.system`) executes code when the file is loaded with
    `torch.load`; vLLM refuses it with `weights_only=True`, older tools run it.

    ## Example
    A pickle whose reduce call is `posix.system`.

    ## Fix
    Do not load the file. Re-export the weights as safetensors from a trusted source.
    """


@_structure_rule(
    INVALID_TORCH_BIN,
    "a .bin file is not a readable PyTorch checkpoint",
    "re-export the weights (prefer safetensors)",
)
def invalid_torch_bin() -> None:
    """## What it checks
    A `.bin` file is a PyTorch checkpoint (zip or legacy format) holding a dict of tensors
    whose storages are present and large enough.

    ## Why it matters
    The engine's loader fails on it.

    ## Example
    A zip archive without `data.pkl`, or a storage smaller than the tensor viewing it.

    ## Fix
    Re-export the weights, preferably as safetensors.
    """


@_structure_rule(
    NO_WEIGHTS,
    "the checkpoint has no weight files",
    "add the weight files",
)
def no_weights() -> None:
    """## What it checks
    The directory holds `*.safetensors` or `pytorch_model*.bin` weights.

    ## Why it matters
    There is nothing for the engine to load.

    ## Example
    Only `config.json` and a tokenizer were uploaded.

    ## Fix
    Upload the weights.
    """


@_structure_rule(
    READER_LIMIT_EXCEEDED,
    "a file exceeds one of draftfit's reader limits and was not read",
    "the file is corrupted or hostile; re-export it with a standard writer",
)
def reader_limit_exceeded() -> None:
    """## What it checks
    Every JSON document (config, index, safetensors header) and weight file stays within the
    reader's caps: JSON nesting 64 levels, 40 digits per number, 100,000 values and 32 MiB
    per JSON file, 16 MiB per safetensors header, 20,000 tensors per file, 64 dimensions per
    tensor, 4,096 weight files, 100,000 zip members, 2,000,000 pickle opcodes and pickle
    objects nested 100 deep (`src/draftfit/checkpoint/limits.py`). A file over a cap is not
    read further.

    ## Why it matters
    No real checkpoint comes near these limits; a file that exceeds one is corrupted or
    built to exhaust the loader (a nesting bomb, a 20,000-digit dimension, a header claiming
    a million tensors, a zip bomb). Engines' loaders crash, hang or run out of memory on
    such files.

    ## Example
    `config.json` holds 100,000 nested `[`, or a safetensors header declares a dimension of
    20,000 digits.

    ## Fix
    Do not load the file; re-export the weights and config with standard tools.
    """


@_structure_rule(
    DUPLICATE_JSON_KEY,
    "a JSON object in the checkpoint names the same key twice",
    "keep one of the values and delete the other",
)
def duplicate_json_key() -> None:
    """## What it checks
    No object in `config.json`, a shard index or a safetensors header writes the same key
    twice.

    ## Why it matters
    Python's `json` (and so every engine) keeps the last value; other tools (and people
    reading the file) see the first. Which `hidden_size` or tensor entry is meant is
    ambiguous, and a hand edit may not have taken effect.

    ## Example
    `config.json` has `"num_hidden_layers": 1` near the top and `"num_hidden_layers": 2`
    further down.

    ## Fix
    Delete the stale key so each appears once.
    """
