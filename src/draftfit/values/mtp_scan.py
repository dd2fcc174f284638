"""Read the values of a target's MTP layers: the signatures of an MTP block an exporter never
trained or never wrote (zeros, one constant value, NaN/Inf, a copy of a decoder layer).

`draftfit check T --method mtp --values[=full]` reads every floating-point tensor of the MTP
layers (a few rows each, or every byte) through the same access as the MTP check's headers:
locally or from the Hub, the MTP shards only. The decoder-layer tensors of each MTP layer
are also compared with the same tensors of the last backbone decoder layer (`model.layers.
{L-1}.*`, the layer an exporter copies when it fabricates an MTP layer): the digests of the
same sampled rows first, then, where they agree, a confirmation (the whole tensor when small,
else a second sample of other rows; in full mode every byte). The backbone side costs the
header of the shard holding that layer and the rows compared. Nothing here raises for a bad
checkpoint: what cannot be read or decoded is recorded as skipped, and the rules report it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from draftfit.checkpoint.dtypes import FLOAT_DTYPES
from draftfit.checkpoint.jsonread import CONFIG_LIMITS, parse_json
from draftfit.checkpoint.limits import MAX_JSON_FILE_BYTES, MAX_WEIGHT_FILES
from draftfit.checkpoint.local import SAFETENSORS_INDEX
from draftfit.checkpoint.model import Checkpoint, TensorInfo
from draftfit.checkpoint.safetensors import read_header_via
from draftfit.draft.mtp import LAYER_INDEX, MTP_LAYERS, MTP_PREFIX, MtpTarget
from draftfit.errors import DraftfitError, UsageError
from draftfit.values import FULL, MODES
from draftfit.values.decode import FLOAT_DECODABLE
from draftfit.values.facts import (
    Coverage,
    LayerCopy,
    MtpTensorFacts,
    MtpValues,
    Skipped,
    ValueFacts,
)
from draftfit.values.plan import count_rows, full_rows, row_bytes, rows_and_width

if TYPE_CHECKING:
    from draftfit.checkpoint.access import FileAccess
    from draftfit.draft.mtp import MtpFamily, MtpLayer

# Sampled mode reads MTP_SAMPLE_ROWS rows of each MTP tensor, in MTP_SAMPLE_RUNS evenly spaced
# runs: an exact signature (every value 0, one value, NaN everywhere, a copy) shows on any
# row, and a MoE MTP layer holds ~1,500 tensors (DeepSeek-V3: 256 experts), so a few rows
# each keep a sampled check of a 671B target's MTP layer to tens of MB.
MTP_SAMPLE_ROWS = 16
MTP_SAMPLE_RUNS = 4
# A copy found on the sampled rows is confirmed on the whole tensor up to this size, else
# on a second sample of other rows.
CONFIRM_BYTES = 4 * 1024 * 1024
# Families whose RMSNorm scales by `1 + weight`, so a norm's weight starts at 0.0, not 1.0:
# transformers/models/qwen3_next/modeling_qwen3_next.py (Qwen3NextRMSNorm: `torch.zeros(dim)`,
# `output * (1.0 + self.weight.float())`), and Qwen3.5's the same
# (transformers/models/qwen3_5/modeling_qwen3_5.py:828-841@v5.22.2, Qwen3_5RMSNorm).
ZERO_CENTRED_NORMS = frozenset({"qwen3_next", "qwen3_5"})
SCALE_SUFFIXES = (".weight_scale_inv", ".weight_scale")


def mtp_value_facts(checkpoint: Checkpoint, target: MtpTarget, mode: str) -> ValueFacts:
    """The value facts of `checkpoint`'s MTP layers, read once per checkpoint and mode (kept
    by its memo: `matrix` checks every release with them). Raises UsageError for an unknown
    mode."""
    if mode not in MODES:
        raise UsageError(f"unknown value mode {mode!r}; choose from {', '.join(MODES)}")
    return checkpoint.memo.own(("mtp value facts", mode), lambda: _scan(checkpoint, target, mode))


def _scan(checkpoint: Checkpoint, target: MtpTarget, mode: str) -> ValueFacts:
    facts = ValueFacts(mode)
    family = target.family
    if family is None:
        return facts
    mtp = facts.mtp = MtpValues(
        family.title, norm_init=0.0 if family.name in ZERO_CENTRED_NORMS else 1.0
    )
    if checkpoint.weight_format == "bin":
        facts.skipped.append(
            Skipped(
                "value checks",
                checkpoint.weight_files[0] if checkpoint.weight_files else None,
                "value checks read safetensors weights only (PyTorch .bin storages are not "
                "decoded)",
            )
        )
        return facts
    reader = _Reader(checkpoint.read_range)
    digests: dict[str, str] = {}
    for index in target.shipped():
        layer = target.layers[index]
        for sub, info in sorted(layer.tensors.items()):
            name = _full_name(family, layer, sub)
            if info is None or info.dtype not in FLOAT_DTYPES:
                continue
            plan = _plan(info, mode)
            if plan is None:
                facts.skipped.append(_undecodable(name, info))
                continue
            rows, _ = rows_and_width(info.shape)
            t = MtpTensorFacts(
                name, info.file, info.dtype, info.shape, Coverage(count_rows(plan), rows), index
            )
            t.norm = _is_norm(sub, info)
            t.decoder = _decoder_part(family, sub)
            t.scale = _scale_of(name, checkpoint.tensors)
            try:
                digests[name] = _read_facts(reader, info, plan, t)
            except OSError as exc:
                reason = f"cannot read: {exc.strerror or exc}"
                facts.skipped.append(Skipped("tensor", info.file, reason, name))
                continue
            mtp.tensors[name] = t
    if target.num_hidden_layers:
        mtp.backbone = f"model.layers.{target.num_hidden_layers - 1}."
        _find_copies(checkpoint, facts, mtp, mtp.backbone, reader, digests, mode)
    facts.bytes_read = reader.bytes_read
    return facts


def _full_name(family: MtpFamily, layer: MtpLayer, sub: str) -> str:
    """The checkpoint name of `sub` of `layer` (Qwen3-Next's own modules sit under `mtp.`)."""
    if family.naming == MTP_PREFIX and sub.rsplit(".", 1)[0] in family.own:
        return "mtp." + sub
    return layer.prefix + sub


def _decoder_part(family: MtpFamily, sub: str) -> str | None:
    """The name under the decoder layer of an MTP layer's tensor `sub`, or None for the MTP
    layer's own modules (`enorm`, `eh_proj`, `shared_head.*`, `embed_tokens`, ...)."""
    module = sub.rsplit(".", 1)[0]
    if module in family.own or any(sub.startswith(o + ".") for o in family.own):
        return None
    if family.naming == MTP_LAYERS:
        # MiMo's checkpoint stores the decoder layer without the `mtp_block` the engines
        # build it under (vllm/model_executor/models/mimo_mtp.py:165-173@v0.34.0)
        return sub.removeprefix("mtp_block.")
    if family.naming in (LAYER_INDEX, MTP_PREFIX):
        return sub
    return None


def _is_norm(sub: str, info: TensorInfo) -> bool:
    module, _, part = sub.rpartition(".")
    return part == "weight" and len(info.shape) == 1 and "norm" in module.rsplit(".", 1)[-1]


def _scale_of(name: str, tensors: Mapping[str, TensorInfo]) -> str | None:
    if not name.endswith(".weight"):
        return None
    base = name.removesuffix(".weight")
    return next((base + s for s in SCALE_SUFFIXES if base + s in tensors), None)


def _plan(info: TensorInfo, mode: str) -> list[tuple[int, int]] | None:
    per_row = row_bytes(info.dtype, info.shape)
    if info.dtype not in FLOAT_DECODABLE or info.byte_range is None or per_row is None:
        return None
    rows, _ = rows_and_width(info.shape)
    if info.byte_range[1] - info.byte_range[0] != rows * per_row:
        return None  # damaged (DF010): the bytes do not hold the declared shape
    if mode == FULL:
        return full_rows(rows, per_row)
    return sample(rows)


def sample(rows: int, shift: bool = False) -> list[tuple[int, int]]:
    """Row ranges `[start, end)` of a sample: every row when few, else MTP_SAMPLE_RUNS evenly
    spaced runs; `shift`: the runs halfway between those (a second sample of other rows)."""
    if rows <= MTP_SAMPLE_ROWS:
        return [] if shift or not rows else [(0, rows)]
    size = MTP_SAMPLE_ROWS // MTP_SAMPLE_RUNS
    step = (rows - size) / (MTP_SAMPLE_RUNS - 1)
    starts = (
        [int((k + 0.5) * step) for k in range(MTP_SAMPLE_RUNS - 1)]
        if shift
        else [int(k * step) for k in range(MTP_SAMPLE_RUNS)]
    )
    out: list[tuple[int, int]] = []
    for start in starts:
        start = max(start, out[-1][1]) if out else start
        if start + size <= rows:
            out.append((start, start + size))
    return out


def _undecodable(name: str, info: TensorInfo) -> Skipped:
    if info.byte_range is None:
        reason = "its bytes are not stored contiguously"
    elif info.dtype not in FLOAT_DECODABLE:
        reason = f"draftfit cannot decode {info.dtype} values"
    else:
        reason = "its byte span does not match its dtype and shape"
    return Skipped("tensor", info.file, reason, name)


class _Reader:
    """Ranged reads of whole rows, counted."""

    def __init__(self, read: Callable[[str, int, int], bytes]) -> None:
        self.read = read
        self.bytes_read = 0

    def rows(self, info: TensorInfo, plan: list[tuple[int, int]]) -> Iterator[bytes]:
        """The stored bytes of each range of `plan` (raises OSError on a short read)."""
        assert info.byte_range is not None
        per_row = row_bytes(info.dtype, info.shape) or 0
        for start, end in plan:
            lo, hi = info.byte_range[0] + start * per_row, info.byte_range[0] + end * per_row
            data = self.read(info.file, lo, hi)
            if len(data) != hi - lo:
                raise OSError(f"short read of {info.file} at {lo}")
            self.bytes_read += len(data)
            yield data


def _read_facts(
    reader: _Reader, info: TensorInfo, plan: list[tuple[int, int]], facts: MtpTensorFacts
) -> str:
    """Fold the rows of `plan` into `facts`; the digest of the bytes read."""
    from draftfit.values.mtp_stats import add_block

    digest = hashlib.blake2b(digest_size=16)
    for data in reader.rows(info, plan):
        add_block(facts, data)
        digest.update(data)
    return digest.hexdigest()


def _find_copies(
    checkpoint: Checkpoint,
    facts: ValueFacts,
    mtp: MtpValues,
    backbone: str,
    reader: _Reader,
    digests: dict[str, str],
    mode: str,
) -> None:
    """Compare each decoder-layer tensor of the MTP layers with the backbone's same tensor."""
    wanted = {
        name: backbone + t.decoder
        for name, t in mtp.tensors.items()
        if t.decoder is not None and t.values and not t.constant and not t.nan
    }
    if not wanted:
        return
    sources = _backbone_infos(checkpoint, facts, set(wanted.values()))
    for name, source_name in wanted.items():
        t = mtp.tensors[name]
        mine = checkpoint.tensors.get(name)
        theirs = sources.get(source_name)
        if mine is None or theirs is None or (theirs.dtype, theirs.shape) != (t.dtype, t.shape):
            continue
        if theirs.byte_range is None or _plan(theirs, mode) is None:
            continue
        try:
            confirmed = _same(reader, mine, theirs, digests[name], mode)
        except OSError as exc:
            reason = f"cannot read: {exc.strerror or exc}"
            facts.skipped.append(Skipped("tensor", theirs.file, reason, source_name))
            continue
        if confirmed is not None:
            mtp.copies.append(LayerCopy(name, t.file, source_name, t.coverage, confirmed))


def _same(
    reader: _Reader, mine: TensorInfo, theirs: TensorInfo, digest: str, mode: str
) -> str | None:
    """How `mine` was found to hold `theirs`' bytes, or None when they differ."""
    rows, _ = rows_and_width(mine.shape)
    if mode == FULL:
        plan = full_rows(rows, _per_row(mine))
        for a, b in zip(reader.rows(mine, plan), reader.rows(theirs, plan), strict=True):
            if a != b:
                return None
        return "every byte compared"
    plan = sample(rows)
    other = hashlib.blake2b(digest_size=16)
    for data in reader.rows(theirs, plan):
        other.update(data)
    if other.hexdigest() != digest:
        return None
    if count_rows(plan) >= rows:
        return "every byte compared"
    size = rows * _per_row(mine)
    if size <= CONFIRM_BYTES:
        whole = [(0, rows)]
        if b"".join(reader.rows(mine, whole)) != b"".join(reader.rows(theirs, whole)):
            return None
        return "confirmed on every byte"
    second = sample(rows, shift=True)
    for a, b in zip(reader.rows(mine, second), reader.rows(theirs, second), strict=True):
        if a != b:
            return None
    return f"confirmed on a second sample of {count_rows(second)} other rows"


def _per_row(info: TensorInfo) -> int:
    return row_bytes(info.dtype, info.shape) or 0


def _weight_map(access: FileAccess) -> object:
    """The index's `weight_map`, read within the reader's caps (the MTP check has read it
    once already and reported its damage), or None."""
    try:
        if access.size(SAFETENSORS_INDEX) > MAX_JSON_FILE_BYTES:
            return None
        document = parse_json(access.read_all(SAFETENSORS_INDEX), CONFIG_LIMITS).value
    except (OSError, ValueError, DraftfitError):
        return None
    return document.get("weight_map") if isinstance(document, dict) else None


def _backbone_infos(
    checkpoint: Checkpoint, facts: ValueFacts, names: set[str]
) -> dict[str, TensorInfo]:
    """The header entries of the backbone tensors `names`: those of the shards already read,
    then, from the index, the headers of the shards holding the rest (one layer's shards)."""
    found = {n: checkpoint.tensors[n] for n in names if n in checkpoint.tensors}
    missing = names - set(found)
    access = checkpoint.access
    if not missing or access is None or SAFETENSORS_INDEX not in checkpoint.files:
        return found
    weight_map = _weight_map(access)
    if not isinstance(weight_map, dict):
        facts.skipped.append(
            Skipped("decoder-layer comparison", SAFETENSORS_INDEX, "the index cannot be read")
        )
        return found
    shards = sorted(
        {s for n in missing if isinstance(s := weight_map.get(n), str) and s in checkpoint.files}
    )
    for shard in shards[:MAX_WEIGHT_FILES]:
        try:
            result = read_header_via(access, shard)
        except (OSError, DraftfitError) as exc:
            facts.skipped.append(
                Skipped("decoder-layer comparison", shard, f"cannot read its header: {exc}")
            )
            continue
        if result.damage:
            facts.skipped.append(
                Skipped("decoder-layer comparison", shard, "its header is damaged")
            )
            continue
        found.update((n, result.tensors[n]) for n in missing if n in result.tensors)
    return found


__all__ = ["CONFIRM_BYTES", "MTP_SAMPLE_ROWS", "MTP_SAMPLE_RUNS", "mtp_value_facts", "sample"]
