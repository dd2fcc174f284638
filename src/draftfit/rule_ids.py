"""Every rule's identity: its stable code, name, consequence and family, as one typed object.

The consequence (what a finding does to serving) decides the severity: a rule never states
a severity of its own.

Everything that reports a finding — the reader's damage records, the engine modules'
events, the diff, convert's refusals — names the rule by one of these imported constants,
never by a string, so a typo is an import error and a test can tell which rules are
emitted. The rule modules in :mod:`draftfit.rules` attach each identity's documentation
and check. This module sits below every other draftfit module and imports none of them.

Codes are stable and never reused: DF0xx file structure, DF1xx config route and
architecture, DF2xx tensors, DF3xx aux layers, DF4xx vocabulary, DF5xx target, DF6xx norm
flags, DF7xx weight values (`--values`; DF901 also reads values, always), DF8xx differences
from a reference, DF9xx hygiene.
"""

from __future__ import annotations

import enum

from draftfit.records import frozen


class Severity(enum.IntEnum):
    """How a finding counts, as it follows from its :class:`Consequence`: `error` (the
    engine refuses, fails at the first request or drafts garbage), `warning` (it drafts
    worse, or fails, under a named condition), `info` (slower, nothing changes, only a
    launch the fix avoids is affected, or draftfit cannot tell)."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        return cls[text.upper()]


class Consequence(enum.Enum):
    """What a finding does to serving, in a small fixed vocabulary; its severity and the
    engine verdict follow from it, so a draft that loads and drafts garbage fails the gate
    as surely as one the engine refuses."""

    REFUSES_TO_START = "refuses-to-start"
    FAILS_AT_FIRST_REQUEST = "fails-at-first-request"
    DRAFTS_GARBAGE = "drafts-garbage"
    # the launch serves no draft, or another one: the checked draft is not what runs
    DRAFT_NOT_SERVED = "draft-not-served"
    DEGRADES = "degrades"  # under a condition the rule names
    SLOWER = "slower"  # slower or wasted memory only; drafts are unaffected
    COSMETIC = "cosmetic"  # cosmetic or provenance: serving is unaffected
    # only some launches are affected (the condition names which, and what they do); a
    # launch that follows the fix is not
    LAUNCH_DEPENDENT = "launch-dependent"
    # draftfit's data does not settle what it does to serving: the verdict is unverified
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, text: str) -> Consequence:
        """`"drafts-garbage"` -> Consequence.DRAFTS_GARBAGE (the JSON and data spelling)."""
        return cls(text)

    @property
    def severity(self) -> Severity:
        """The first three are errors; conditional degradation is a warning; the rest info."""
        if self in _ERRORS:
            return Severity.ERROR
        return Severity.WARNING if self is Consequence.DEGRADES else Severity.INFO

    @property
    def runs(self) -> bool:
        """Whether the engine starts and serves the checked draft at all (the draft may
        still be wrong)."""
        return self not in (
            Consequence.REFUSES_TO_START,
            Consequence.FAILS_AT_FIRST_REQUEST,
            Consequence.DRAFT_NOT_SERVED,
        )

    def describe(self, condition: str | None = None, effect: str | None = None) -> str:
        """The consequence as a user reads it, e.g. "loads, but drafts garbage: acceptance
        ≈ 0". `condition` completes a degradation ("drafts worse past the draft's context"),
        whose `effect` is "drafts worse" unless the rule names another ("start-up fails on
        GPUs where ..."), and says which launch a launch-dependent finding affects."""
        if self is Consequence.DEGRADES and condition:
            return f"{effect or 'drafts worse'} {condition}"
        if self is Consequence.LAUNCH_DEPENDENT and condition:
            return f"depends on the launch: {condition}"
        return _TEXT[self]


_ERRORS = frozenset(
    {
        Consequence.REFUSES_TO_START,
        Consequence.FAILS_AT_FIRST_REQUEST,
        Consequence.DRAFTS_GARBAGE,
        Consequence.DRAFT_NOT_SERVED,
    }
)
_TEXT = {
    Consequence.REFUSES_TO_START: "the engine refuses to start",
    Consequence.FAILS_AT_FIRST_REQUEST: "the engine starts, then fails at the first request",
    Consequence.DRAFTS_GARBAGE: "loads, but drafts garbage: acceptance ≈ 0",
    Consequence.DRAFT_NOT_SERVED: "the launch does not serve the checked draft: what runs was "
    "not checked",
    Consequence.DEGRADES: "drafts worse under some conditions",
    Consequence.SLOWER: "slower or more memory only; drafts are unaffected",
    Consequence.COSMETIC: "no effect on serving (cosmetic or provenance)",
    Consequence.LAUNCH_DEPENDENT: "depends on the launch: one that follows the fix is unaffected",
    Consequence.UNKNOWN: "draftfit cannot tell what it does to serving (the verdict is unverified)",
}


@frozen
class RuleId:
    """A rule's identity: what a finding is stamped with.

    `consequence` is what the rule's findings do to serving unless a finding states its
    own (where the engine version or the case decides it); the severity follows from it.
    `condition` names when a `degrades` rule degrades (e.g. "past the draft's context
    length"), and `effect` what happens then where it is not that drafts get worse
    ("start-up fails"); for a `launch-dependent` rule, `condition` says which launch is
    affected and how."""

    code: str
    name: str
    consequence: Consequence
    family: str
    condition: str | None = None
    effect: str | None = None

    @property
    def severity(self) -> Severity:
        return self.consequence.severity

    def __str__(self) -> str:
        return f"{self.code} {self.name}"

    @property
    def consequence_text(self) -> str:
        """The rule's own consequence as a user reads it (its condition and effect included)."""
        return self.consequence.describe(self.condition, self.effect)


_REFUSES = Consequence.REFUSES_TO_START
_FAILS = Consequence.FAILS_AT_FIRST_REQUEST
_GARBAGE = Consequence.DRAFTS_GARBAGE
_DEGRADES = Consequence.DEGRADES
_SLOWER = Consequence.SLOWER
_COSMETIC = Consequence.COSMETIC
_LAUNCH = Consequence.LAUNCH_DEPENDENT
_UNKNOWN = Consequence.UNKNOWN
_START_UP_FAILS = "start-up fails"

UNREADABLE_FILE = RuleId("DF001", "unreadable-file", _REFUSES, "structure")
TRUNCATED_FILE = RuleId("DF002", "truncated-file", _REFUSES, "structure")
HEADER_LENGTH_OUT_OF_RANGE = RuleId("DF003", "header-length-out-of-range", _REFUSES, "structure")
HEADER_NOT_JSON_OBJECT = RuleId("DF004", "header-not-json-object", _REFUSES, "structure")
INVALID_TENSOR_ENTRY = RuleId("DF005", "invalid-tensor-entry", _REFUSES, "structure")
UNKNOWN_DTYPE = RuleId("DF006", "unknown-dtype", _REFUSES, "structure")
DATA_OFFSETS_OUT_OF_RANGE = RuleId("DF007", "data-offsets-out-of-range", _REFUSES, "structure")
DATA_OFFSETS_OVERLAP = RuleId("DF008", "data-offsets-overlap", _REFUSES, "structure")
DATA_SECTION_NOT_COVERED = RuleId("DF009", "data-section-not-covered", _REFUSES, "structure")
TENSOR_BYTE_SIZE_MISMATCH = RuleId("DF010", "tensor-byte-size-mismatch", _REFUSES, "structure")
INDEX_MISSING_SHARD = RuleId("DF011", "index-missing-shard", _REFUSES, "structure")
INDEX_TENSOR_NOT_IN_SHARD = RuleId("DF012", "index-tensor-not-in-shard", _COSMETIC, "structure")
DUPLICATE_TENSOR = RuleId(
    "DF013",
    "duplicate-tensor",
    _DEGRADES,
    "structure",
    "when the engine keeps the copy the draft was not trained with (the last shard it reads wins)",
)
TENSOR_NOT_IN_INDEX = RuleId("DF014", "tensor-not-in-index", _COSMETIC, "structure")
INVALID_INDEX = RuleId("DF015", "invalid-index", _REFUSES, "structure")
MISSING_CONFIG = RuleId("DF016", "missing-config", _REFUSES, "structure")
INVALID_CONFIG = RuleId("DF017", "invalid-config", _REFUSES, "structure")
MIXED_WEIGHT_FORMATS = RuleId("DF018", "mixed-weight-formats", _COSMETIC, "structure")
UNSAFE_PICKLE_GLOBAL = RuleId("DF019", "unsafe-pickle-global", _REFUSES, "structure")
INVALID_TORCH_BIN = RuleId("DF020", "invalid-torch-bin", _REFUSES, "structure")
NO_WEIGHTS = RuleId("DF021", "no-weights", _REFUSES, "structure")
READER_LIMIT_EXCEEDED = RuleId("DF022", "reader-limit-exceeded", _REFUSES, "structure")
DUPLICATE_JSON_KEY = RuleId(
    "DF023",
    "duplicate-json-key",
    _DEGRADES,
    "structure",
    "if the copy the engine keeps (the last one written) is not the value the draft was "
    "trained with",
)
UNSUPPORTED_DRAFT_ARCHITECTURE = RuleId(
    "DF101", "unsupported-draft-architecture", _REFUSES, "config"
)
MISSING_ARCHITECTURES = RuleId("DF102", "missing-architectures", _REFUSES, "config")
UNSUPPORTED_SPECULATORS_TYPE = RuleId("DF103", "unsupported-speculators-type", _REFUSES, "config")
INVALID_SPECULATORS_CONFIG = RuleId(
    "DF104",
    "invalid-speculators-config",
    _LAUNCH,
    "config",
    "`vllm serve DRAFT` (which reads the verifier and the speculative tokens from the draft's "
    "config) refuses the checkpoint; `--model TARGET --speculative-config` is unaffected",
)
SPECULATORS_FORMAT_UNSUPPORTED = RuleId(
    "DF105", "speculators-format-unsupported", _REFUSES, "config"
)
UNSUPPORTED_LAYER_MODEL_TYPE = RuleId("DF106", "unsupported-layer-model-type", _REFUSES, "config")
METHOD_MISMATCH = RuleId("DF107", "method-mismatch", _REFUSES, "config")
METHOD_NOT_DETECTED_FROM_PATH = RuleId(
    "DF108",
    "method-not-detected-from-path",
    _LAUNCH,
    "config",
    "a launch that leaves `method` out of --speculative-config runs another method (vLLM "
    "refuses the draft, or drafts garbage with it); one that passes it is unaffected",
)
METHOD_UNSUPPORTED = RuleId("DF109", "method-unsupported", _REFUSES, "config")
MISSING_DRAFT_VOCAB_SIZE = RuleId("DF110", "missing-draft-vocab-size", _REFUSES, "config")
SPECULATORS_CONFIG_WITH_MODEL_TYPE = RuleId(
    "DF111", "speculators-config-with-model-type", _REFUSES, "config"
)
MISSING_CONFIG_FIELD = RuleId("DF112", "missing-config-field", _REFUSES, "config")
UNKNOWN_DRAFT_METHOD = RuleId("DF113", "unknown-draft-method", _REFUSES, "config")
METHOD_GUESSED_AS_DRAFT_MODEL = RuleId("DF114", "method-guessed-as-draft-model", _GARBAGE, "config")
UNSUPPORTED_ACTIVATION = RuleId("DF115", "unsupported-activation", _REFUSES, "config")
MULTI_LAYER_DRAFT_UNSUPPORTED = RuleId("DF116", "multi-layer-draft-unsupported", _REFUSES, "config")
DRAFT_KV_LAYER_COUNT = RuleId("DF117", "draft-kv-layer-count", _REFUSES, "config")
CONFIG_FIELD_WRONG_TYPE = RuleId("DF118", "config-field-wrong-type", _REFUSES, "field_types")
CONFIG_FIELD_MISREAD = RuleId("DF119", "config-field-misread", _GARBAGE, "field_types")
NOT_AN_EAGLE_DRAFT = RuleId("DF125", "not-an-eagle-draft", _UNKNOWN, "config")
DRAFT_SLIDING_WINDOW_IGNORED = RuleId(
    "DF130",
    "draft-sliding-window-ignored",
    _DEGRADES,
    "config",
    "on prompts longer than the draft's sliding window",
)
UNKNOWN_TENSOR_NAME = RuleId("DF201", "unknown-tensor-name", _REFUSES, "tensors")
TENSOR_NAME_PREFIX = RuleId("DF202", "tensor-name-prefix", _REFUSES, "tensors")
TENSOR_SHAPE_MISMATCH = RuleId("DF203", "tensor-shape-mismatch", _REFUSES, "tensors")
TENSOR_SHAPE_TRUNCATED = RuleId("DF204", "tensor-shape-truncated", _GARBAGE, "tensors")
MISSING_TENSOR_UNINITIALISED = RuleId("DF205", "missing-tensor-uninitialised", _GARBAGE, "tensors")
MISSING_NORM_WEIGHT = RuleId("DF206", "missing-norm-weight", _GARBAGE, "tensors")
IGNORED_TENSOR = RuleId("DF207", "ignored-tensor", _GARBAGE, "tensors")
HEAD_DIM_NOT_DECLARED = RuleId("DF208", "head-dim-not-declared", _GARBAGE, "tensors")
MISSING_REQUIRED_TENSOR = RuleId("DF209", "missing-required-tensor", _REFUSES, "tensors")
TENSOR_NAMES_NOT_BOUND = RuleId("DF210", "tensor-names-not-bound", _GARBAGE, "tensors")
QUANTIZATION_DATA_MISSING = RuleId("DF211", "quantization-data-missing", _GARBAGE, "tensors")
CONFIG_DIMENSION_CONTRADICTS_TENSORS = RuleId(
    "DF212", "config-dimension-contradicts-tensors", _GARBAGE, "tensors"
)
AUX_LAYERS_DIFFER_FROM_TRAINED = RuleId("DF301", "aux-layers-differ-from-trained", _GARBAGE, "aux")
AUX_IDS_NOT_READ_DEFAULT_MATCHES = RuleId(
    "DF302", "aux-ids-not-read-default-matches", _COSMETIC, "aux"
)
AUX_ID_OUT_OF_RANGE = RuleId("DF303", "aux-id-out-of-range", _FAILS, "aux")
AUX_COUNT_MISMATCH = RuleId("DF304", "aux-count-mismatch", _REFUSES, "aux")
AUX_RUNTIME_COUNT_MISMATCH = RuleId("DF305", "aux-runtime-count-mismatch", _FAILS, "aux")
AUX_IDS_DUPLICATE = RuleId(
    "DF306",
    "aux-ids-duplicate",
    _DEGRADES,
    "aux",
    "in engines that de-duplicate the ids, which then feed fc fewer states than it was trained on",
    "the first request fails",
)
AUX_IDS_DISAGREE = RuleId(
    "DF307",
    "aux-ids-disagree",
    _DEGRADES,
    "aux",
    "in engines that read the other place than the one the draft was trained with",
)
AUX_IDS_COPIED_WITHOUT_SHIFT = RuleId(
    "DF308",
    "aux-ids-copied-without-shift",
    _DEGRADES,
    "aux",
    "if the ids were indeed copied without the +1 shift (each captured layer is then one "
    "before the trained one)",
)
AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS = RuleId(
    "DF309",
    "aux-ids-ignored-under-cuda-graphs",
    _DEGRADES,
    "aux",
    "with CUDA graphs on (the default launch), where the engine's default layers replace "
    "the trained ones",
)
AUX_IDS_NOT_ASCENDING = RuleId("DF310", "aux-ids-not-ascending", _GARBAGE, "aux")
AUX_IDS_NOT_RECORDED = RuleId("DF315", "aux-ids-not-recorded", _UNKNOWN, "aux")
MISSING_D2T = RuleId("DF401", "missing-d2t", _GARBAGE, "vocab")
LM_HEAD_MISSING_REDUCED_VOCAB = RuleId("DF402", "lm-head-missing-reduced-vocab", _GARBAGE, "vocab")
D2T_OUT_OF_RANGE = RuleId("DF403", "d2t-out-of-range", _FAILS, "vocab")
VOCAB_MAP_INCONSISTENT = RuleId(
    "DF404",
    "vocab-map-inconsistent",
    _DEGRADES,
    "vocab",
    "for the draft tokens whose mapping is wrong",
)
VOCAB_SIZE_MISMATCH = RuleId("DF405", "vocab-size-mismatch", _FAILS, "vocab")
D2T_IGNORED_BY_ENGINE = RuleId("DF406", "d2t-ignored-by-engine", _GARBAGE, "vocab")
T2D_INCONSISTENT = RuleId("DF407", "t2d-inconsistent", _COSMETIC, "vocab")
TARGET_NOT_EAGLE3_CAPABLE = RuleId("DF501", "target-not-eagle3-capable", _REFUSES, "target")
TARGET_HIDDEN_SIZE_MISMATCH = RuleId("DF502", "target-hidden-size-mismatch", _REFUSES, "target")
SHARED_EMBEDDING_WIDTH_MISMATCH = RuleId(
    "DF503", "shared-embedding-width-mismatch", _REFUSES, "target"
)
DRAFT_CONTEXT_SHORTER_THAN_TARGET = RuleId(
    "DF504",
    "draft-context-shorter-than-target",
    _DEGRADES,
    "target",
    "past the draft's context length, on longer prompts",
)
TARGET_CAPABILITY_UNKNOWN = RuleId("DF505", "target-capability-unknown", _UNKNOWN, "target")
DRAFT_CONTEXT_REFUSED = RuleId("DF506", "draft-context-refused", _REFUSES, "target")
VERIFIER_DIFFERS_FROM_TARGET = RuleId("DF507", "verifier-differs-from-target", _GARBAGE, "target")
DRAFT_INHERITS_TARGET_QUANTIZATION = RuleId(
    "DF515",
    "draft-inherits-target-quantization",
    _LAUNCH,
    "target",
    "start-up fails if the launch passes the target's `--quantization` to SGLang; without it, "
    "nothing happens",
)
TARGET_ROTATION_UNCOMPENSATED = RuleId("DF516", "target-rotation-uncompensated", _GARBAGE, "target")
DRAFT_BUILT_WITH_TARGET_QUANTIZATION = RuleId(
    "DF517", "draft-built-with-target-quantization", _REFUSES, "target"
)
TARGET_QUANTIZATION_NOT_MODELLED = RuleId(
    "DF518", "target-quantization-not-modelled", _UNKNOWN, "target"
)
TARGET_ROTATION_UNCHECKED = RuleId("DF519", "target-rotation-unchecked", _UNKNOWN, "target")
DRAFT_HEAD_SHARE_CHECK_FAILS = RuleId(
    "DF520", "draft-lm-head-share-check-fails", _REFUSES, "target"
)
DRAFT_KV_PAGE_SIZE_REFUSED = RuleId("DF530", "draft-kv-page-size-refused", _REFUSES, "target")
DRAFT_HEAD_SIZE_UNSUPPORTED = RuleId(
    "DF531",
    "draft-head-size-unsupported",
    _DEGRADES,
    "target",
    "on GPUs where FlashAttention is the default backend (compute capability 8.0 or newer)",
    _START_UP_FAILS,
)
DRAFT_HEAD_SIZE_FALLBACK = RuleId(
    "DF532",
    "draft-head-size-fallback-backend",
    _DEGRADES,
    "target",
    "on GPUs where FlashAttention is the default backend, where the draft's layers get "
    "another backend's metadata",
)
DRAFT_KV_TRANSFER_SIZE_DIFFERS = RuleId(
    "DF533",
    "draft-kv-transfer-size-differs",
    _DEGRADES,
    "target",
    "under prefill/decode disaggregation (NIXL)",
    _START_UP_FAILS,
)
# DF55x-DF56x: the launch's serving settings (`--serve-config`, `--serve-args`). Their findings
# are about the launch, so a launch without those settings (a serve recipe) has none.
SERVING_FAMILY = "serving"
PIPELINE_PARALLEL_AUX_STATES = RuleId(
    "DF550", "pipeline-parallel-aux-states", _REFUSES, SERVING_FAMILY
)
DRAFT_TENSOR_PARALLEL_IGNORED = RuleId(
    "DF551", "draft-tensor-parallel-ignored", _SLOWER, SERVING_FAMILY
)
DRAFT_TENSOR_PARALLEL_REFUSED = RuleId(
    "DF552", "draft-tensor-parallel-refused", _REFUSES, SERVING_FAMILY
)
DRAFT_MLA_ATTENTION_BACKEND = RuleId(
    "DF553", "draft-mla-attention-backend", _REFUSES, SERVING_FAMILY
)
DRAFT_QUANTIZATION_FLAG_INHERITED = RuleId(
    "DF554", "draft-quantization-flag-inherited", _REFUSES, SERVING_FAMILY
)
MAX_DRAFT_LEN_MISSING = RuleId("DF555", "max-draft-len-missing", _REFUSES, SERVING_FAMILY)
DRAFT_PATH_KEY_UNREAD = RuleId("DF556", "draft-path-key-unread", _REFUSES, SERVING_FAMILY)
DRAFT_PATH_MISSING = RuleId("DF557", "draft-path-missing", _REFUSES, SERVING_FAMILY)
DECODING_TYPE_UNKNOWN = RuleId("DF558", "decoding-type-unknown", _REFUSES, SERVING_FAMILY)
SERVE_SETTING_INVALID = RuleId("DF559", "serve-setting-invalid", _REFUSES, SERVING_FAMILY)
REMOTE_CODE_NOT_TRUSTED = RuleId("DF560", "remote-code-not-trusted", _REFUSES, SERVING_FAMILY)
NORM_FLAG_IGNORED = RuleId("DF601", "norm-flag-ignored", _GARBAGE, "norms")
NORM_BEFORE_RESIDUAL_DEFAULT = RuleId("DF602", "norm-before-residual-default", _GARBAGE, "norms")
NORM_OUTPUT_SEMANTICS_DIFFER = RuleId(
    "DF603",
    "norm-output-semantics-differ",
    _DEGRADES,
    "norms",
    "on every drafting step after the first, which carries a state the draft was not trained with",
)
# The family of the rules that read weight values (`--values`); its findings describe the
# bytes, so nothing that rewrites only names and config (convert, serve settings) fixes them.
VALUES_FAMILY = "values"
EMBEDDING_FROM_ANOTHER_TARGET = RuleId(
    "DF701", "embedding-from-another-target", _GARBAGE, VALUES_FAMILY
)
EMBEDDING_SIMILARITY = RuleId("DF702", "embedding-similarity", _COSMETIC, VALUES_FAMILY)
UNTRAINED_TENSOR = RuleId(
    "DF703",
    "untrained-tensor",
    _DEGRADES,
    VALUES_FAMILY,
    "if the tensor is indeed untrained (an exact signature, not a measurement of acceptance)",
)
INIT_LIKE_STATISTICS = RuleId("DF704", "init-like-statistics", _COSMETIC, VALUES_FAMILY)
NON_FINITE_VALUES = RuleId("DF705", "non-finite-values", _GARBAGE, VALUES_FAMILY)
VALUES_EXCEED_SERVING_DTYPE = RuleId(
    "DF706", "values-exceed-serving-dtype", _DEGRADES, VALUES_FAMILY, "when served in float16"
)
FC_AUX_CHUNK_UNTRAINED = RuleId(
    "DF707",
    "fc-aux-chunk-untrained",
    _DEGRADES,
    VALUES_FAMILY,
    "if the columns are indeed untrained: that aux layer's state is then ignored",
)
LM_HEAD_COPIED_FROM_TARGET = RuleId("DF708", "lm-head-copied-from-target", _COSMETIC, VALUES_FAMILY)
VALUES_NOT_CHECKED = RuleId("DF709", "values-not-checked", _COSMETIC, VALUES_FAMILY)
# The value checks of a target's own MTP layers (`check T --method mtp --values`).
MTP_TENSOR_ZERO = RuleId("DF710", "mtp-tensor-zero", _GARBAGE, VALUES_FAMILY)
MTP_NON_FINITE = RuleId("DF711", "mtp-non-finite", _GARBAGE, VALUES_FAMILY)
MTP_COPIES_DECODER_LAYER = RuleId("DF712", "mtp-copies-decoder-layer", _GARBAGE, VALUES_FAMILY)
MTP_TENSOR_CONSTANT = RuleId(
    "DF713",
    "mtp-tensor-constant",
    _DEGRADES,
    VALUES_FAMILY,
    "if the tensor is indeed untrained (one value everywhere: an exact signature, not a "
    "measurement of acceptance)",
)
MTP_NORMS_AT_INIT = RuleId(
    "DF714",
    "mtp-norms-at-init",
    _DEGRADES,
    VALUES_FAMILY,
    "if the MTP layer is indeed untrained (its norms hold exactly their initial value; a very "
    "short training exported in bfloat16 can round back to it)",
)
METHOD_DIFFERS = RuleId("DF801", "method-differs", _GARBAGE, "difference")
DRAFT_CLASS_DIFFERS = RuleId("DF802", "draft-class-differs", _GARBAGE, "difference")
DIMENSION_DIFFERS = RuleId("DF803", "dimension-differs", _GARBAGE, "difference")
AUX_LAYERS_DIFFER = RuleId("DF804", "aux-layers-differ", _GARBAGE, "difference")
NORM_BEHAVIOUR_DIFFERS = RuleId("DF805", "norm-behaviour-differs", _GARBAGE, "difference")
PARAMETER_DIFFERS = RuleId("DF806", "parameter-differs", _GARBAGE, "difference")
VOCAB_MAP_DIFFERS = RuleId("DF807", "vocab-map-differs", _GARBAGE, "difference")
ENGINE_VERDICT_DIFFERS = RuleId("DF808", "engine-verdict-differs", _REFUSES, "difference")
SPELLING_ONLY = RuleId("DF810", "spelling-only", _COSMETIC, "difference")
EMBEDDING_PRESENCE_DIFFERS = RuleId("DF811", "embedding-presence-differs", _COSMETIC, "difference")
CONFIG_KEY_DIFFERS = RuleId("DF812", "config-key-differs", _COSMETIC, "difference")
TENSOR_DTYPE_DIFFERS = RuleId("DF813", "tensor-dtype-differs", _COSMETIC, "difference")
TENSOR_NAME_DIFFERS = RuleId("DF814", "tensor-name-differs", _COSMETIC, "difference")
UNTRAINED_LAYER_WEIGHTS = RuleId(
    "DF901",
    "untrained-layer-weights",
    _DEGRADES,
    "hygiene",
    "if the layer is indeed untrained (its norms are exactly 1.0)",
)
FLOAT32_WEIGHTS = RuleId("DF902", "float32-weights", _SLOWER, "hygiene")
CONFIG_DTYPE_MISMATCH = RuleId("DF903", "config-dtype-mismatch", _COSMETIC, "hygiene")
LOCAL_VERIFIER_PATH = RuleId(
    "DF904",
    "local-verifier-path",
    _LAUNCH,
    "hygiene",
    "`vllm serve DRAFT` (which reads the verifier from the draft's config) refuses a local "
    "path or cannot find it on another machine; `--model TARGET --speculative-config` is "
    "unaffected",
)
UNKNOWN_CONVENTION = RuleId("DF905", "unknown-convention", _COSMETIC, "hygiene")

# MTP / NextN drafting: the draft is the target's own MTP layers (no separate checkpoint).
MTP_FAMILY_UNSERVED = RuleId("DF140", "mtp-family-unserved", _REFUSES, "mtp")
MTP_METHOD_NAME = RuleId("DF141", "mtp-method-name", _REFUSES, "mtp")
MTP_TOKEN_COUNT_MISSING = RuleId("DF142", "mtp-token-count-missing", _REFUSES, "mtp")
MTP_DEPTH_ZERO = RuleId("DF143", "mtp-depth-zero", _REFUSES, "mtp")
MTP_DEPTH_ABSENT = RuleId("DF144", "mtp-depth-absent", _REFUSES, "mtp")
MTP_DEPTH_TOKENS = RuleId("DF145", "mtp-depth-vs-tokens", _REFUSES, "mtp")
MTP_LAUNCH_KIND = RuleId("DF146", "mtp-launch-kind", _REFUSES, "mtp")
MTP_DRAFT_PATH_REQUIRED = RuleId("DF147", "mtp-draft-path-required", _REFUSES, "mtp")
NEXTN_EXPORT_MISMATCH = RuleId("DF148", "nextn-export-mismatch", _GARBAGE, "mtp")
MTP_LAYER_MISSING = RuleId("DF220", "mtp-layer-missing", _GARBAGE, "mtp")
MTP_TENSOR_MISSING = RuleId("DF221", "mtp-tensor-missing", _GARBAGE, "mtp")
MTP_TENSOR_UNMAPPED = RuleId("DF222", "mtp-tensor-unmapped", _REFUSES, "mtp")
MTP_QUANT_UNCOVERED = RuleId("DF540", "mtp-quant-uncovered", _GARBAGE, "mtp")
MTP_QUANT_EXCLUDED_STORED = RuleId("DF541", "mtp-quantized-layer-excluded", _GARBAGE, "mtp")
MTP_QUANT_BUILD_REFUSED = RuleId("DF542", "mtp-quant-build-refused", _REFUSES, "mtp")
# The value rules of the MTP check: silent unless `--values` was given.
MTP_VALUE_RULE_IDS: tuple[RuleId, ...] = (
    MTP_TENSOR_ZERO,
    MTP_NON_FINITE,
    MTP_COPIES_DECODER_LAYER,
    MTP_TENSOR_CONSTANT,
    MTP_NORMS_AT_INIT,
    VALUES_NOT_CHECKED,
)
MTP_RULE_IDS: tuple[RuleId, ...] = (
    MTP_FAMILY_UNSERVED,
    MTP_METHOD_NAME,
    MTP_TOKEN_COUNT_MISSING,
    MTP_DEPTH_ZERO,
    MTP_DEPTH_ABSENT,
    MTP_DEPTH_TOKENS,
    MTP_LAUNCH_KIND,
    MTP_DRAFT_PATH_REQUIRED,
    NEXTN_EXPORT_MISMATCH,
    MTP_LAYER_MISSING,
    MTP_TENSOR_MISSING,
    MTP_TENSOR_UNMAPPED,
    MTP_QUANT_UNCOVERED,
    MTP_QUANT_EXCLUDED_STORED,
    MTP_QUANT_BUILD_REFUSED,
    *MTP_VALUE_RULE_IDS,
)
# The rules an MTP check runs: the MTP rules, and the launch rule its steps share with any
# check (a target config that needs `--trust-remote-code`).
MTP_CHECK_RULE_IDS: tuple[RuleId, ...] = (
    *MTP_RULE_IDS,
    REMOTE_CODE_NOT_TRUSTED,
    SERVE_SETTING_INVALID,
)

ALL_RULE_IDS: tuple[RuleId, ...] = (
    UNREADABLE_FILE,
    TRUNCATED_FILE,
    HEADER_LENGTH_OUT_OF_RANGE,
    HEADER_NOT_JSON_OBJECT,
    INVALID_TENSOR_ENTRY,
    UNKNOWN_DTYPE,
    DATA_OFFSETS_OUT_OF_RANGE,
    DATA_OFFSETS_OVERLAP,
    DATA_SECTION_NOT_COVERED,
    TENSOR_BYTE_SIZE_MISMATCH,
    INDEX_MISSING_SHARD,
    INDEX_TENSOR_NOT_IN_SHARD,
    DUPLICATE_TENSOR,
    TENSOR_NOT_IN_INDEX,
    INVALID_INDEX,
    MISSING_CONFIG,
    INVALID_CONFIG,
    MIXED_WEIGHT_FORMATS,
    UNSAFE_PICKLE_GLOBAL,
    INVALID_TORCH_BIN,
    NO_WEIGHTS,
    READER_LIMIT_EXCEEDED,
    DUPLICATE_JSON_KEY,
    UNSUPPORTED_DRAFT_ARCHITECTURE,
    MISSING_ARCHITECTURES,
    UNSUPPORTED_SPECULATORS_TYPE,
    INVALID_SPECULATORS_CONFIG,
    SPECULATORS_FORMAT_UNSUPPORTED,
    UNSUPPORTED_LAYER_MODEL_TYPE,
    METHOD_MISMATCH,
    METHOD_NOT_DETECTED_FROM_PATH,
    METHOD_UNSUPPORTED,
    MISSING_DRAFT_VOCAB_SIZE,
    SPECULATORS_CONFIG_WITH_MODEL_TYPE,
    MISSING_CONFIG_FIELD,
    UNKNOWN_DRAFT_METHOD,
    METHOD_GUESSED_AS_DRAFT_MODEL,
    UNSUPPORTED_ACTIVATION,
    MULTI_LAYER_DRAFT_UNSUPPORTED,
    DRAFT_KV_LAYER_COUNT,
    CONFIG_FIELD_WRONG_TYPE,
    CONFIG_FIELD_MISREAD,
    NOT_AN_EAGLE_DRAFT,
    DRAFT_SLIDING_WINDOW_IGNORED,
    UNKNOWN_TENSOR_NAME,
    TENSOR_NAME_PREFIX,
    TENSOR_SHAPE_MISMATCH,
    TENSOR_SHAPE_TRUNCATED,
    MISSING_TENSOR_UNINITIALISED,
    MISSING_NORM_WEIGHT,
    IGNORED_TENSOR,
    HEAD_DIM_NOT_DECLARED,
    MISSING_REQUIRED_TENSOR,
    TENSOR_NAMES_NOT_BOUND,
    QUANTIZATION_DATA_MISSING,
    CONFIG_DIMENSION_CONTRADICTS_TENSORS,
    AUX_LAYERS_DIFFER_FROM_TRAINED,
    AUX_IDS_NOT_READ_DEFAULT_MATCHES,
    AUX_ID_OUT_OF_RANGE,
    AUX_COUNT_MISMATCH,
    AUX_RUNTIME_COUNT_MISMATCH,
    AUX_IDS_DUPLICATE,
    AUX_IDS_DISAGREE,
    AUX_IDS_COPIED_WITHOUT_SHIFT,
    AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS,
    AUX_IDS_NOT_ASCENDING,
    AUX_IDS_NOT_RECORDED,
    MISSING_D2T,
    LM_HEAD_MISSING_REDUCED_VOCAB,
    D2T_OUT_OF_RANGE,
    VOCAB_MAP_INCONSISTENT,
    VOCAB_SIZE_MISMATCH,
    D2T_IGNORED_BY_ENGINE,
    T2D_INCONSISTENT,
    TARGET_NOT_EAGLE3_CAPABLE,
    TARGET_HIDDEN_SIZE_MISMATCH,
    SHARED_EMBEDDING_WIDTH_MISMATCH,
    DRAFT_CONTEXT_SHORTER_THAN_TARGET,
    TARGET_CAPABILITY_UNKNOWN,
    DRAFT_CONTEXT_REFUSED,
    VERIFIER_DIFFERS_FROM_TARGET,
    DRAFT_INHERITS_TARGET_QUANTIZATION,
    TARGET_ROTATION_UNCOMPENSATED,
    DRAFT_BUILT_WITH_TARGET_QUANTIZATION,
    TARGET_QUANTIZATION_NOT_MODELLED,
    TARGET_ROTATION_UNCHECKED,
    DRAFT_HEAD_SHARE_CHECK_FAILS,
    DRAFT_KV_PAGE_SIZE_REFUSED,
    DRAFT_HEAD_SIZE_UNSUPPORTED,
    DRAFT_HEAD_SIZE_FALLBACK,
    DRAFT_KV_TRANSFER_SIZE_DIFFERS,
    PIPELINE_PARALLEL_AUX_STATES,
    DRAFT_TENSOR_PARALLEL_IGNORED,
    DRAFT_TENSOR_PARALLEL_REFUSED,
    DRAFT_MLA_ATTENTION_BACKEND,
    DRAFT_QUANTIZATION_FLAG_INHERITED,
    MAX_DRAFT_LEN_MISSING,
    DRAFT_PATH_KEY_UNREAD,
    DRAFT_PATH_MISSING,
    DECODING_TYPE_UNKNOWN,
    SERVE_SETTING_INVALID,
    REMOTE_CODE_NOT_TRUSTED,
    NORM_FLAG_IGNORED,
    NORM_BEFORE_RESIDUAL_DEFAULT,
    NORM_OUTPUT_SEMANTICS_DIFFER,
    EMBEDDING_FROM_ANOTHER_TARGET,
    EMBEDDING_SIMILARITY,
    UNTRAINED_TENSOR,
    INIT_LIKE_STATISTICS,
    NON_FINITE_VALUES,
    VALUES_EXCEED_SERVING_DTYPE,
    FC_AUX_CHUNK_UNTRAINED,
    LM_HEAD_COPIED_FROM_TARGET,
    VALUES_NOT_CHECKED,
    METHOD_DIFFERS,
    DRAFT_CLASS_DIFFERS,
    DIMENSION_DIFFERS,
    AUX_LAYERS_DIFFER,
    NORM_BEHAVIOUR_DIFFERS,
    PARAMETER_DIFFERS,
    VOCAB_MAP_DIFFERS,
    ENGINE_VERDICT_DIFFERS,
    SPELLING_ONLY,
    EMBEDDING_PRESENCE_DIFFERS,
    CONFIG_KEY_DIFFERS,
    TENSOR_DTYPE_DIFFERS,
    TENSOR_NAME_DIFFERS,
    UNTRAINED_LAYER_WEIGHTS,
    FLOAT32_WEIGHTS,
    CONFIG_DTYPE_MISMATCH,
    LOCAL_VERIFIER_PATH,
    UNKNOWN_CONVENTION,
    *(rule for rule in MTP_RULE_IDS if rule is not VALUES_NOT_CHECKED),  # listed above
)

BY_NAME: dict[str, RuleId] = {r.name: r for r in ALL_RULE_IDS}
