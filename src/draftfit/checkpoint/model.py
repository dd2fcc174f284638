"""What the reader knows about a checkpoint on disk, without any tensor data loaded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint.memo import ValueMemo
from draftfit.records import field, frozen, record
from draftfit.rule_ids import RuleId

if TYPE_CHECKING:
    from typing import Any

    from draftfit.checkpoint.access import FileAccess
    from draftfit.checkpoint.hub_cache import HubOrigin


# Damage after which the tensor inventory is incomplete.
UNREADABLE_WEIGHTS = frozenset(
    {
        rule_ids.UNREADABLE_FILE,
        rule_ids.TRUNCATED_FILE,
        rule_ids.HEADER_LENGTH_OUT_OF_RANGE,
        rule_ids.HEADER_NOT_JSON_OBJECT,
        rule_ids.INVALID_TORCH_BIN,
        rule_ids.UNSAFE_PICKLE_GLOBAL,
        rule_ids.INDEX_MISSING_SHARD,
        rule_ids.NO_WEIGHTS,
        rule_ids.READER_LIMIT_EXCEEDED,
    }
)


@frozen
class TensorInfo:
    """One tensor as a weight file declares it.

    Attributes:
        name: the name stored in the file (no renaming applied).
        dtype: the safetensors dtype name (`BF16`, `I64`, ...).
        shape: the declared shape.
        file: the file holding it, relative to the checkpoint root.
        byte_range: absolute `[start, end)` offsets of its bytes inside `file`, when the
            bytes are stored contiguously there (always for safetensors; for `.bin` when
            the archive stores the storage uncompressed and the tensor is contiguous).
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str
    byte_range: tuple[int, int] | None = None

    @property
    def numel(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count


@frozen
class Damage:
    """A structural problem found while reading; the checker turns it into a finding.

    Attributes:
        rule: the rule it maps to (an imported :mod:`draftfit.rule_ids` constant).
        file: the file concerned, relative to the checkpoint root.
        message: what was observed and what was expected.
        tensor: the tensor concerned, when there is one.
        pointer: a JSON pointer inside `file`, when there is one.
    """

    rule: RuleId
    file: str
    message: str
    tensor: str | None = None
    pointer: str | None = None

    @property
    def kind(self) -> str:
        """The rule's name (e.g. `header-not-json-object`)."""
        return self.rule.name


@record
class Checkpoint:
    """A checkpoint directory as read from disk (or from a Hub repository's headers).

    Attributes:
        root: the local directory holding (copies of) its files.
        origin: how the user named it (a path, or `hf://owner/name@rev`).
        config: the parsed `config.json`, or None when missing or unreadable.
        tensors: every tensor of the weight files an engine would load, by name.
        weight_format: `safetensors`, `bin`, or None when there are no weights.
        weight_files: the files `tensors` came from, relative to `root`.
        ignored_weight_files: weight files present that an engine would not load
            (e.g. `.bin` next to `.safetensors`).
        damage: structural problems, in the order found.
        files: every file name in the directory (relative), for copying and reports.
        access: how to read the files (local directory or remote repository).
        memo: values read from its small tensors and results computed from them, kept
            so that each is read once (see :mod:`draftfit.checkpoint.memo`).
        hub_origin: the Hub repository and revision a local folder's layout names (a
            cache snapshot or a `--local-dir` download), or None.
        planned: a conversion's output as planned, held in memory (a serve recipe checks it
            before its `draftfit convert` step writes it): it has no folder of its own yet.
    """

    root: Path
    origin: str
    config: dict[str, Any] | None = None
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    weight_format: str | None = None
    weight_files: list[str] = field(default_factory=list)
    ignored_weight_files: list[str] = field(default_factory=list)
    damage: list[Damage] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    access: FileAccess | None = field(default=None, repr=False)
    memo: ValueMemo = field(default_factory=ValueMemo, repr=False, compare=False)
    hub_origin: HubOrigin | None = None
    planned: bool = field(default=False, compare=False)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        """Bytes `[start, end)` of file `rel` (raises OSError)."""
        if self.access is None:
            with (self.root / rel).open("rb") as handle:
                handle.seek(start)
                return handle.read(end - start)
        return self.access.read_range(rel, start, end)

    @property
    def weights_complete(self) -> bool:
        """False when a weight file (or shard) could not be read at all: then which tensors
        are missing is unknown, and checks for missing tensors stay quiet."""
        return not any(d.rule in UNREADABLE_WEIGHTS for d in self.damage)

    @property
    def name(self) -> str:
        """The directory name (what vLLM's method auto-detection looks at)."""
        return self.root.name if self.origin == str(self.root) else self.origin.rstrip("/")

    def parameter_count_by_dtype(self) -> dict[str, int]:
        """Number of elements per dtype over every tensor."""
        counts: dict[str, int] = {}
        for tensor in self.tensors.values():
            counts[tensor.dtype] = counts.get(tensor.dtype, 0) + tensor.numel
        return counts
