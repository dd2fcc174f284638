"""What an engine will build from a draft: the engine-neutral "view" that rules compare.

An engine's procedure (:mod:`draftfit.engines.procedure`, run with the engine's own steps
from its folder) turns a :class:`DraftDescription` plus a versioned :class:`Profile` into an
:class:`EngineView`:
the refusals it raises while parsing the config, the draft class it resolves, the
parameters it builds (with shapes as formulas of config fields), what it does with each
stored tensor, which aux layers it captures, and whether it borrows the embedding /
lm_head from the target. Generic rules then compare the view with the checkpoint, so they
serve every engine.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from draftfit.checkpoint.model import Checkpoint
from draftfit.draft.description import DraftDescription
from draftfit.draft.target import Target
from draftfit.draft.tensor_names import bounded_message
from draftfit.engines.mtp_view import MtpInputs, MtpView
from draftfit.engines.profile import Profile, Resolved
from draftfit.engines.shapes import Axis
from draftfit.location import Location
from draftfit.records import field, frozen, record
from draftfit.rule_ids import Consequence, RuleId
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.launch_judgement import ReleaseLaunch

# What happens to a parameter no stored tensor reaches.
UNINITIALISED = "uninitialised"  # torch.empty garbage, silently
ONES = "ones"  # RMSNorm weight stays 1.0, silently
SHARED = "shared"  # taken from the target
FAILS = "fails"  # the engine raises
# What an oversized stored tensor does: the loader narrows dim 0 / dim 1 silently.
TRUNCATE_ROWS = "truncate-rows"
TRUNCATE_COLS = "truncate-cols"


@frozen
class BuildInputs:
    """Everything an engine's procedure resolves a draft from, as one value.

    Attributes:
        checkpoint: the draft as read (tensors, config, source path).
        draft: draftfit's canonical description of the draft.
        target: the target's facts, or None when no target was given.
        profile: the engine's data at one version.
        method: the method the user serves with (`eagle3`, `eagle`, `auto`), or None.
        method_explicit: whether the method was given rather than read from the checkpoint.
        serve: the launch's settings for this engine (`--serve-config`, `--serve-args`),
            or None (a default launch).
        launch: what the engine's launch part decided about `serve` at this release
            (:meth:`draftfit.engines.interface.Engine.judge_launch`); given whenever `serve`
            is, and read by the launch checks.
        fit_dimensions: whether the procedure looks for a config dimension that explains the
            stored shapes it does not build (off when it builds a trial of such an edit).
        mtp: the target's own MTP layers and the launch as the MTP steps read them (an MTP
            build only, method `mtp`).
    """

    checkpoint: Checkpoint
    draft: DraftDescription
    target: Target | None
    profile: Profile
    method: str | None
    method_explicit: bool
    serve: ServeSettings | None = None
    fit_dimensions: bool = True
    launch: ReleaseLaunch | None = None
    mtp: MtpInputs | None = None


@frozen
class Event:
    """An engine behaviour worth a finding, tagged with the identity of the rule that
    reports it (an imported :class:`RuleId` constant, never a name string).
    `consequence`: where the engine data gives one for this version (see
    :meth:`Profile.consequence`), else None for the rule's own."""

    rule: RuleId
    message: str
    location: Location
    citations: tuple[str, ...] = ()
    fix: str | None = None
    consequence: Consequence | None = None


@frozen
class Expectation:
    """A parameter the engine builds and the stored tensor that should fill it.

    Attributes:
        canonical: draftfit's canonical tensor name (`layers.0.self_attn.q_proj.weight`).
        param: the engine's parameter name, for messages.
        shape: the expected stored shape; a None dimension is one the config does not
            give (it matches no stored tensor); None: no shape to check.
        formula: the shape as a formula of config fields, for messages.
        if_missing: UNINITIALISED / ONES / SHARED / FAILS / None (fine when absent).
        oversize: what a too-large tensor does: FAILS, or TRUNCATE_ROWS / TRUNCATE_COLS
            when the loader silently narrows that dimension to the parameter's size.
        citations: engine source lines.
        axes: each dimension of `shape` as the config fields it is computed from (None
            for a dimension that is not; empty when unknown).
    """

    canonical: str
    param: str
    shape: tuple[int | None, ...] | None
    formula: str
    if_missing: str | None
    oversize: str = FAILS
    citations: tuple[str, ...] = ()
    axes: tuple[Axis | None, ...] = ()


@frozen
class DimensionEdit:
    """One config value that, changed, makes the engine build the stored shapes.

    Attributes:
        key: the config key (`head_dim`).
        pointer: where it is (or would be written) in the draft's config.json.
        declared: the value written there, or None when the key is absent.
        used: the value the engine used (the declared one, its default or derivation).
        value: the value the stored tensors imply.
        evidence: one stored tensor and the formula that gives its dimension with `value`
            (```q_proj` [8192, 14336]: num_attention_heads·head_dim = 64·128 rows``).
    """

    key: str
    pointer: str
    declared: int | None
    used: int
    value: int
    evidence: str


@frozen
class DimensionFit:
    """Stored shapes the engine does not build, explained by one config dimension.

    `edits` holds the edit that makes every tensor of `explains` (canonical names) load
    whole, verified by building the draft again with it; several edits when each of them
    explains the shapes (the shapes cannot tell which dimension is wrong)."""

    edits: tuple[DimensionEdit, ...]
    explains: tuple[str, ...]

    @property
    def ambiguous(self) -> bool:
        return len(self.edits) > 1


class FateCause(enum.Enum):
    """Why the engine's loader does what it does with a stored tensor, so rules can tell
    fates apart without reading their messages."""

    MATCHED = "matched"  # the name reaches a parameter the draft builds
    SKIPPED_BY_LOADER = "skipped-by-loader"  # a name the loader always skips on purpose
    PREFIX_ADDED = "prefix-added"  # the loader prepends `model.`, so a prefixed name is doubled
    RENAMED = "renamed"  # the loader's own renaming leads the name nowhere
    NOT_BUILT = "not-built"  # its parameter exists only with a setting that is off
    STRAY_BIAS = "stray-bias"  # a bias the draft class does not build
    EXTRA_LAYER = "extra-layer"  # a decoder layer beyond those the draft builds
    TARGET_HEAD = "target-head"  # the head comes from the target; the stored one is unused
    UNKNOWN_NAME = "unknown-name"  # no parameter of the draft class has this name


@frozen
class TensorFate:
    """What the engine does with one stored tensor, and why (`cause`)."""

    raw: str
    canonical: str
    # "loaded"; "skipped" (silently ignored); "rejected" (load error); "unbound" (meant for
    # a parameter the draft builds, but the engine's naming does not reach it, so that
    # parameter silently keeps its initial value).
    status: str
    param: str | None = None
    reason: str = ""
    citations: tuple[str, ...] = ()
    cause: FateCause = field(kw_only=True)
    fix: str | None = field(default=None, kw_only=True)  # a fix specific to this fate

    def __post_init__(self) -> None:
        # Each release's view holds one fate per stored tensor: the names are shared, not
        # copied per release, and an absurd name is quoted short (a `matrix` of a draft
        # with a megabyte-long name stays within a few hundred MB).
        object.__setattr__(self, "raw", sys.intern(self.raw))
        object.__setattr__(self, "canonical", sys.intern(self.canonical))
        object.__setattr__(self, "reason", bounded_message(self.reason))


@record
class AuxCapture:
    """The aux layers the engine will capture and the count its `fc` is built for.

    Attributes:
        used: capture-before ids the engine captures, or None when unknown (no target).
        read_from: the config pointer the ids come from, or None when the default is used.
        keys_read: the config pointers this version consults, in order.
        expected_count: N, the number of aux states `fc` is built for.
        count_from: what decided N (a pointer, or "fixed").
        valid_range: inclusive (low, high) capture-before ids that can be captured.
        read_convention: how the engine reads the ids it finds ("capture-before",
            "output-of": it adds 1, or a target-specific rule).
        write_pointer: where to write ids so this version reads them (None: nowhere).
        user_setting: a serve-time setting that chooses the layers instead of the config
            (TensorRT-LLM's `eagle3_layers_to_capture`), or None.
        encode: capture-before ids -> the ids to write at `write_pointer` / pass in
            `user_setting` so the engine captures exactly those layers; None when the
            engine cannot express them.
        range_note: why `valid_range` is narrower than usual for this target ("" if not).
        launch_setting: the launch setting that chose `used`, as the launch wrote it
            (TensorRT-LLM: "`speculative_config.eagle3_layers_to_capture: [1, 15, 28]`"),
            "" when the ids come from the config or the default.
        launch_location: where that setting is (in the serving settings), or None.
        launch_unused: why a launch setting for the layers does not choose them at this
            version ("" when the launch gives none, or it is used).
        concat_order: the order in which the engine concatenates the captured states into
            `fc`'s input at this version (the data's `aux_concat_order`: "ascending" where
            it sorts them by layer), with its citations; None where it was not resolved.
    """

    used: tuple[int, ...] | None
    read_from: str | None
    keys_read: tuple[str, ...]
    expected_count: int | None
    count_from: str
    valid_range: tuple[int, int] | None
    citations: tuple[str, ...] = ()
    dedupes: bool = False
    runner_note: str = ""
    read_convention: str = "capture-before"
    write_pointer: str | None = None
    user_setting: str | None = None
    encode: Callable[[tuple[int, ...]], tuple[int, ...] | None] | None = None
    range_note: str = ""  # why `valid_range` is narrower for this target's backbone
    launch_setting: str = ""
    launch_location: Location | None = None
    launch_unused: str = ""
    concat_order: Resolved | None = None


@frozen
class Dims:
    """A decoder layer's widths: hidden, heads, KV heads, head_dim, intermediate."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int


@record
class Dimensions:
    """The widths and depth the engine builds the draft with; None where a refusal stopped
    the build before they were settled (or the draft class builds none)."""

    layer: Dims | None = None  # settled once `fc`'s input width is
    num_layers: int | None = None  # decoder layers built

    @property
    def head_dim(self) -> int | None:
        """`head_dim` as the engine uses it (declared, else hidden_size / heads)."""
        return self.layer.head_dim if self.layer is not None else None


@record
class Vocabulary:
    """The draft vocabulary as the engine builds it (None: not settled).

    Attributes:
        vocab_size: the config's `vocab_size` (the embedding's rows).
        draft_vocab_size: the rows of the head the engine builds.
        head_from_target: whether the engine takes the head from the target instead.
        reduced: whether the head covers fewer tokens than the vocabulary (set once the
            head and `d2t` are built).
        d2t_parameter: whether the draft builds a `d2t` map (None: not settled).
        embedding_shared: whether a missing embedding is the target's (None: the engine
            always shares it).
    """

    vocab_size: int | None = None
    draft_vocab_size: int | None = None
    head_from_target: bool = False
    reduced: bool | None = None
    d2t_parameter: bool | None = None
    embedding_shared: bool | None = None


@frozen
class Norms:
    """The norm flags the engine runs the draft with (on *and* honoured)."""

    norm_before_fc: bool
    fc_norm: bool
    norm_output: bool
    norm_before_residual: bool = False

    def flags(self) -> dict[str, bool]:
        """The flags by their config names."""
        return {
            "norm_before_residual": self.norm_before_residual,
            "norm_before_fc": self.norm_before_fc,
            "fc_norm": self.fc_norm,
            "norm_output": self.norm_output,
        }


@record
class Capture:
    """What `fc` reads: the target states' width, the aux states and the norms before it
    (None: not settled).

    Attributes:
        target_hidden_size: the width of each target state `fc` reads.
        aux_states: N, the number of aux states `fc` is built for, and `count_from`, what
            decided it.
        use_aux_hidden_state: whether the draft reads aux states at all (None where the
            engine always does and reads no switch).
        num_aux_states: the aux states `fc` reads (0 when they are switched off).
        norms: the norm flags run.
        norm_before_residual_default: the value an engine gives `norm_before_residual`
            when the config does not write it (vLLM's speculators adaptor); None when
            written, or not defaulted.
    """

    target_hidden_size: int | None = None
    aux_states: int = 0
    count_from: str = ""
    use_aux_hidden_state: bool | None = None
    num_aux_states: int | None = None
    norms: Norms | None = None
    norm_before_residual_default: bool | None = None


@record
class Resolution:
    """How the engine got to the draft it builds, for messages and launch checks.

    Attributes:
        method_from_path: the method vLLM would pick from the draft path (None: not asked).
        architecture_rewrite: how the engine rewrote `architectures[0]` ("" if it did not).
        runner: the model runner that serves the draft ("mrv1", "mrv2"; None: unknown or
            not asked) and `runner_reason`, why.
        draft_quantization: the draft's own `quant_method` and, where the engine builds
            its parameters, `draft_quantization_scheme`.
    """

    method_from_path: str | None = None
    architecture_rewrite: str = ""
    runner: str | None = None
    runner_reason: str = ""
    draft_quantization: str | None = None
    draft_quantization_scheme: str | None = None


@record
class EngineView:
    """The engine's resolution of a draft at one version."""

    engine: str
    version: str
    title: str
    method: str | None
    refusals: list[Event] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    draft_class: str | None = None
    expectations: dict[str, Expectation] = field(default_factory=dict)
    fates: list[TensorFate] = field(default_factory=list)
    aux: AuxCapture | None = None
    built: bool = False  # False when a refusal stops the engine before building the draft
    dimensions: Dimensions = field(default_factory=Dimensions)
    vocabulary: Vocabulary | None = None
    capture: Capture = field(default_factory=Capture)
    resolution: Resolution = field(default_factory=Resolution)
    # Whether the engine sizes the draft's positions from the target's (None: not settled).
    max_position_raised: bool | None = None
    # The config as the draft class reads it (after the engine's config route): `diff`
    # compares the values two drafts give the same key there. Raw JSON by nature, so a
    # mapping of any value; rules read the typed parts above instead.
    visible_config: Mapping[str, Any] = field(default_factory=dict)
    # Config dimensions that explain stored shapes the draft class does not build.
    dimension_fits: list[DimensionFit] = field(default_factory=list)
    # Why the launch's settings were not all judged at this version (a setting whose
    # acceptance the data does not record here): the verdict is then not `compatible`.
    unjudged: list[str] = field(default_factory=list)
    # What the release makes of a target's own MTP layers (an MTP check only).
    mtp: MtpView | None = None

    def add(self, event: Event) -> None:
        self.events.append(event)

    def refuse(self, event: Event) -> None:
        self.refusals.append(event)

    @property
    def label(self) -> str:
        return f"{self.engine}=={self.version}"
