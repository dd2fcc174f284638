"""What the value checks observed, as plain data the value rules read (no numpy here)."""

from __future__ import annotations

from draftfit.records import field, frozen, record


@frozen
class Coverage:
    """How much of a tensor was read: `rows_read` of `rows` rows."""

    rows_read: int
    rows: int

    @property
    def complete(self) -> bool:
        return self.rows_read >= self.rows

    def describe(self) -> str:
        """`read in full, 12 rows` or `on a sample of 256 of 163840 rows`."""
        if self.complete:
            return f"read in full, {self.rows} row{'s' if self.rows != 1 else ''}"
        return f"on a sample of {self.rows_read} of {self.rows} rows"


@record
class ChunkFacts:
    """One aux chunk of `fc.weight` (the columns fed by one target layer)."""

    index: int
    values: int = 0
    all_zero: bool = True
    constant_rows: int = 0
    rows: int = 0
    same_as: int | None = None  # index of an earlier chunk with identical values
    mean: float = 0.0
    std: float = 0.0
    kurtosis: float | None = None


@record
class TensorFacts:
    """Statistics of one floating-point tensor over the rows read."""

    canonical: str
    raw: str
    file: str
    dtype: str
    shape: tuple[int, ...]
    coverage: Coverage
    values: int = 0
    nan: int = 0
    inf: int = 0
    all_zero: bool = True  # every value read is exactly 0 (meaningful once `values` > 0)
    all_one: bool = True  # every value read is exactly 1.0
    constant_rows: int = 0
    rows: int = 0
    max_abs: float = 0.0
    mean: float = 0.0
    std: float = 0.0
    kurtosis: float | None = None
    digest: str = ""  # checksum of the first rows of every block read: spots identical tensors
    chunks: list[ChunkFacts] = field(default_factory=list)

    @property
    def is_matrix(self) -> bool:
        return len(self.shape) >= 2


@record
class Comparison:
    """The draft's embedding (or head) next to the target's, over the same rows."""

    what: str  # "embedding" or "lm_head"
    draft_tensor: str
    target_tensor: str
    target_file: str
    coverage: Coverage
    rows_matched: int = 0
    max_diff: float = 0.0
    mean_cosine: float = 0.0
    first_mismatch: int | None = None

    @property
    def rows_compared(self) -> int:
        return self.coverage.rows_read

    @property
    def all_match(self) -> bool:
        return self.rows_compared > 0 and self.rows_matched == self.rows_compared


@frozen
class Skipped:
    """Something the value checks could not read or decode, and why."""

    what: str
    file: str | None
    reason: str
    tensor: str | None = None


@record
class MtpTensorFacts:
    """What was read of one tensor of a target's MTP layer.

    Attributes:
        name: its name in the checkpoint; `layer`: the MTP layer it belongs to (0-based).
        constant: every value read is the same finite value, `first`.
        scale: the block-scale tensor stored beside a quantized weight (its name), else None.
        norm: a norm's weight (a 1-D `weight` under a module named `*norm*`).
        decoder: the name under the decoder layer when it belongs to the MTP layer's decoder
            layer (`self_attn.q_a_proj.weight`), else None (`eh_proj`, `enorm`, ...).
    """

    name: str
    file: str
    dtype: str
    shape: tuple[int, ...]
    coverage: Coverage
    layer: int
    values: int = 0
    nan: int = 0
    inf: int = 0
    all_zero: bool = True
    constant: bool = True
    first: float | None = None
    scale: str | None = None
    norm: bool = False
    decoder: str | None = None


@record
class LayerCopy:
    """An MTP tensor that holds the same bytes as a backbone decoder layer's tensor."""

    tensor: str
    file: str
    source: str
    coverage: Coverage
    confirmed: str  # how the match of the sampled rows was confirmed


@record
class MtpValues:
    """What the value checks read of a target's MTP layers (`check T --method mtp --values`).

    Attributes:
        family: the MTP family's title.
        norm_init: the value a norm's weight starts at in this family (1.0; 0.0 where the
            norm scales by `1 + weight`).
        tensors: the MTP tensors read, by name.
        copies: MTP tensors whose bytes are a backbone decoder layer's.
        backbone: the prefix of the decoder layer they were compared with, or None.
    """

    family: str
    norm_init: float = 1.0
    tensors: dict[str, MtpTensorFacts] = field(default_factory=dict)
    copies: list[LayerCopy] = field(default_factory=list)
    backbone: str | None = None


@record
class ValueFacts:
    """Everything the value rules need, computed once per draft (and target) and mode."""

    mode: str
    tensors: dict[str, TensorFacts] = field(default_factory=dict)
    embedding: Comparison | None = None
    head: Comparison | None = None
    skipped: list[Skipped] = field(default_factory=list)
    serving_dtype: str | None = None
    serving_dtype_source: str | None = None
    initializer_range: float | None = None  # the draft config's, when a positive number
    embed_frozen: bool | None = None
    frozen_evidence: str = ""
    bytes_read: int = 0
    mtp: MtpValues | None = None  # the MTP check's: what was read of the MTP layers
