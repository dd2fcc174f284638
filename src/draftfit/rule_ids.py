"""Every rule's identity: its stable code, name, severity and family, as one typed object.

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
from dataclasses import dataclass


class Severity(enum.IntEnum):
    """`error`: the engine refuses or crashes; `warning`: it loads but drafts wrongly or
    worse than trained; `info`: worth knowing."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        return cls[text.upper()]


@dataclass(frozen=True)
class RuleId:
    """A rule's identity: what a finding is stamped with."""

    code: str
    name: str
    severity: Severity
    family: str

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

UNREADABLE_FILE = RuleId("DF001", "unreadable-file", _E, "structure")
TRUNCATED_FILE = RuleId("DF002", "truncated-file", _E, "structure")
HEADER_LENGTH_OUT_OF_RANGE = RuleId("DF003", "header-length-out-of-range", _E, "structure")
HEADER_NOT_JSON_OBJECT = RuleId("DF004", "header-not-json-object", _E, "structure")
INVALID_TENSOR_ENTRY = RuleId("DF005", "invalid-tensor-entry", _E, "structure")
UNKNOWN_DTYPE = RuleId("DF006", "unknown-dtype", _E, "structure")
DATA_OFFSETS_OUT_OF_RANGE = RuleId("DF007", "data-offsets-out-of-range", _E, "structure")
DATA_OFFSETS_OVERLAP = RuleId("DF008", "data-offsets-overlap", _E, "structure")
DATA_SECTION_NOT_COVERED = RuleId("DF009", "data-section-not-covered", _E, "structure")
TENSOR_BYTE_SIZE_MISMATCH = RuleId("DF010", "tensor-byte-size-mismatch", _E, "structure")
INDEX_MISSING_SHARD = RuleId("DF011", "index-missing-shard", _E, "structure")
INDEX_TENSOR_NOT_IN_SHARD = RuleId("DF012", "index-tensor-not-in-shard", _I, "structure")
DUPLICATE_TENSOR = RuleId("DF013", "duplicate-tensor", _W, "structure")
TENSOR_NOT_IN_INDEX = RuleId("DF014", "tensor-not-in-index", _I, "structure")
INVALID_INDEX = RuleId("DF015", "invalid-index", _E, "structure")
MISSING_CONFIG = RuleId("DF016", "missing-config", _E, "structure")
INVALID_CONFIG = RuleId("DF017", "invalid-config", _E, "structure")
MIXED_WEIGHT_FORMATS = RuleId("DF018", "mixed-weight-formats", _I, "structure")
UNSAFE_PICKLE_GLOBAL = RuleId("DF019", "unsafe-pickle-global", _E, "structure")
INVALID_TORCH_BIN = RuleId("DF020", "invalid-torch-bin", _E, "structure")
NO_WEIGHTS = RuleId("DF021", "no-weights", _E, "structure")
READER_LIMIT_EXCEEDED = RuleId("DF022", "reader-limit-exceeded", _E, "structure")
DUPLICATE_JSON_KEY = RuleId("DF023", "duplicate-json-key", _W, "structure")
UNSUPPORTED_DRAFT_ARCHITECTURE = RuleId("DF101", "unsupported-draft-architecture", _E, "config")
MISSING_ARCHITECTURES = RuleId("DF102", "missing-architectures", _E, "config")
UNSUPPORTED_SPECULATORS_TYPE = RuleId("DF103", "unsupported-speculators-type", _E, "config")
INVALID_SPECULATORS_CONFIG = RuleId("DF104", "invalid-speculators-config", _I, "config")
SPECULATORS_FORMAT_UNSUPPORTED = RuleId("DF105", "speculators-format-unsupported", _E, "config")
UNSUPPORTED_LAYER_MODEL_TYPE = RuleId("DF106", "unsupported-layer-model-type", _E, "config")
METHOD_MISMATCH = RuleId("DF107", "method-mismatch", _E, "config")
METHOD_NOT_DETECTED_FROM_PATH = RuleId("DF108", "method-not-detected-from-path", _I, "config")
METHOD_UNSUPPORTED = RuleId("DF109", "method-unsupported", _E, "config")
MISSING_DRAFT_VOCAB_SIZE = RuleId("DF110", "missing-draft-vocab-size", _E, "config")
SPECULATORS_CONFIG_WITH_MODEL_TYPE = RuleId(
    "DF111", "speculators-config-with-model-type", _E, "config"
)
MISSING_CONFIG_FIELD = RuleId("DF112", "missing-config-field", _E, "config")
UNKNOWN_DRAFT_METHOD = RuleId("DF113", "unknown-draft-method", _E, "config")
METHOD_GUESSED_AS_DRAFT_MODEL = RuleId("DF114", "method-guessed-as-draft-model", _W, "config")
UNSUPPORTED_ACTIVATION = RuleId("DF115", "unsupported-activation", _E, "config")
MULTI_LAYER_DRAFT_UNSUPPORTED = RuleId("DF116", "multi-layer-draft-unsupported", _E, "config")
DRAFT_KV_LAYER_COUNT = RuleId("DF117", "draft-kv-layer-count", _E, "config")
CONFIG_FIELD_WRONG_TYPE = RuleId("DF118", "config-field-wrong-type", _E, "field_types")
CONFIG_FIELD_MISREAD = RuleId("DF119", "config-field-misread", _W, "field_types")
NOT_AN_EAGLE_DRAFT = RuleId("DF125", "not-an-eagle-draft", _I, "config")
DRAFT_SLIDING_WINDOW_IGNORED = RuleId("DF130", "draft-sliding-window-ignored", _W, "config")
UNKNOWN_TENSOR_NAME = RuleId("DF201", "unknown-tensor-name", _E, "tensors")
TENSOR_NAME_PREFIX = RuleId("DF202", "tensor-name-prefix", _E, "tensors")
TENSOR_SHAPE_MISMATCH = RuleId("DF203", "tensor-shape-mismatch", _E, "tensors")
TENSOR_SHAPE_TRUNCATED = RuleId("DF204", "tensor-shape-truncated", _W, "tensors")
MISSING_TENSOR_UNINITIALISED = RuleId("DF205", "missing-tensor-uninitialised", _W, "tensors")
MISSING_NORM_WEIGHT = RuleId("DF206", "missing-norm-weight", _W, "tensors")
IGNORED_TENSOR = RuleId("DF207", "ignored-tensor", _W, "tensors")
HEAD_DIM_NOT_DECLARED = RuleId("DF208", "head-dim-not-declared", _W, "tensors")
MISSING_REQUIRED_TENSOR = RuleId("DF209", "missing-required-tensor", _E, "tensors")
TENSOR_NAMES_NOT_BOUND = RuleId("DF210", "tensor-names-not-bound", _W, "tensors")
AUX_LAYERS_DIFFER_FROM_TRAINED = RuleId("DF301", "aux-layers-differ-from-trained", _W, "aux")
AUX_IDS_NOT_READ_DEFAULT_MATCHES = RuleId("DF302", "aux-ids-not-read-default-matches", _I, "aux")
AUX_ID_OUT_OF_RANGE = RuleId("DF303", "aux-id-out-of-range", _E, "aux")
AUX_COUNT_MISMATCH = RuleId("DF304", "aux-count-mismatch", _E, "aux")
AUX_RUNTIME_COUNT_MISMATCH = RuleId("DF305", "aux-runtime-count-mismatch", _E, "aux")
AUX_IDS_DUPLICATE = RuleId("DF306", "aux-ids-duplicate", _W, "aux")
AUX_IDS_DISAGREE = RuleId("DF307", "aux-ids-disagree", _W, "aux")
AUX_IDS_COPIED_WITHOUT_SHIFT = RuleId("DF308", "aux-ids-copied-without-shift", _W, "aux")
AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS = RuleId("DF309", "aux-ids-ignored-under-cuda-graphs", _W, "aux")
AUX_IDS_NOT_ASCENDING = RuleId("DF310", "aux-ids-not-ascending", _W, "aux")
AUX_IDS_NOT_RECORDED = RuleId("DF315", "aux-ids-not-recorded", _I, "aux")
MISSING_D2T = RuleId("DF401", "missing-d2t", _W, "vocab")
LM_HEAD_MISSING_REDUCED_VOCAB = RuleId("DF402", "lm-head-missing-reduced-vocab", _W, "vocab")
D2T_OUT_OF_RANGE = RuleId("DF403", "d2t-out-of-range", _E, "vocab")
VOCAB_MAP_INCONSISTENT = RuleId("DF404", "vocab-map-inconsistent", _W, "vocab")
VOCAB_SIZE_MISMATCH = RuleId("DF405", "vocab-size-mismatch", _E, "vocab")
D2T_IGNORED_BY_ENGINE = RuleId("DF406", "d2t-ignored-by-engine", _W, "vocab")
T2D_INCONSISTENT = RuleId("DF407", "t2d-inconsistent", _I, "vocab")
TARGET_NOT_EAGLE3_CAPABLE = RuleId("DF501", "target-not-eagle3-capable", _E, "target")
TARGET_HIDDEN_SIZE_MISMATCH = RuleId("DF502", "target-hidden-size-mismatch", _E, "target")
SHARED_EMBEDDING_WIDTH_MISMATCH = RuleId("DF503", "shared-embedding-width-mismatch", _E, "target")
DRAFT_CONTEXT_SHORTER_THAN_TARGET = RuleId(
    "DF504", "draft-context-shorter-than-target", _W, "target"
)
TARGET_CAPABILITY_UNKNOWN = RuleId("DF505", "target-capability-unknown", _I, "target")
DRAFT_CONTEXT_REFUSED = RuleId("DF506", "draft-context-refused", _E, "target")
DRAFT_INHERITS_TARGET_QUANTIZATION = RuleId(
    "DF515", "draft-inherits-target-quantization", _I, "target"
)
TARGET_ROTATION_UNCOMPENSATED = RuleId("DF516", "target-rotation-uncompensated", _E, "target")
DRAFT_BUILT_WITH_TARGET_QUANTIZATION = RuleId(
    "DF517", "draft-built-with-target-quantization", _E, "target"
)
TARGET_QUANTIZATION_NOT_MODELLED = RuleId("DF518", "target-quantization-not-modelled", _I, "target")
TARGET_ROTATION_UNCHECKED = RuleId("DF519", "target-rotation-unchecked", _I, "target")
DRAFT_HEAD_SHARE_CHECK_FAILS = RuleId("DF520", "draft-lm-head-share-check-fails", _E, "target")
DRAFT_KV_PAGE_SIZE_REFUSED = RuleId("DF530", "draft-kv-page-size-refused", _E, "target")
DRAFT_HEAD_SIZE_UNSUPPORTED = RuleId("DF531", "draft-head-size-unsupported", _W, "target")
DRAFT_HEAD_SIZE_FALLBACK = RuleId("DF532", "draft-head-size-fallback-backend", _W, "target")
DRAFT_KV_TRANSFER_SIZE_DIFFERS = RuleId("DF533", "draft-kv-transfer-size-differs", _I, "target")
# DF55x: the launch's serving settings (`--serve-config`, `--serve-args`). Their findings
# are about the launch, so a launch without those settings (a serve recipe) has none.
SERVING_FAMILY = "serving"
PIPELINE_PARALLEL_AUX_STATES = RuleId("DF550", "pipeline-parallel-aux-states", _E, SERVING_FAMILY)
DRAFT_TENSOR_PARALLEL_IGNORED = RuleId("DF551", "draft-tensor-parallel-ignored", _W, SERVING_FAMILY)
DRAFT_TENSOR_PARALLEL_REFUSED = RuleId("DF552", "draft-tensor-parallel-refused", _E, SERVING_FAMILY)
DRAFT_MLA_ATTENTION_BACKEND = RuleId("DF553", "draft-mla-attention-backend", _E, SERVING_FAMILY)
DRAFT_QUANTIZATION_FLAG_INHERITED = RuleId(
    "DF554", "draft-quantization-flag-inherited", _E, SERVING_FAMILY
)
MAX_DRAFT_LEN_MISSING = RuleId("DF555", "max-draft-len-missing", _E, SERVING_FAMILY)
DRAFT_PATH_KEY_UNREAD = RuleId("DF556", "draft-path-key-unread", _E, SERVING_FAMILY)
DRAFT_PATH_MISSING = RuleId("DF557", "draft-path-missing", _E, SERVING_FAMILY)
DECODING_TYPE_UNKNOWN = RuleId("DF558", "decoding-type-unknown", _E, SERVING_FAMILY)
SERVE_SETTING_INVALID = RuleId("DF559", "serve-setting-invalid", _E, SERVING_FAMILY)
NORM_FLAG_IGNORED = RuleId("DF601", "norm-flag-ignored", _W, "norms")
NORM_BEFORE_RESIDUAL_DEFAULT = RuleId("DF602", "norm-before-residual-default", _W, "norms")
NORM_OUTPUT_SEMANTICS_DIFFER = RuleId("DF603", "norm-output-semantics-differ", _W, "norms")
# The family of the rules that read weight values (`--values`); its findings describe the
# bytes, so nothing that rewrites only names and config (convert, serve settings) fixes them.
VALUES_FAMILY = "values"
EMBEDDING_FROM_ANOTHER_TARGET = RuleId("DF701", "embedding-from-another-target", _E, VALUES_FAMILY)
EMBEDDING_SIMILARITY = RuleId("DF702", "embedding-similarity", _I, VALUES_FAMILY)
UNTRAINED_TENSOR = RuleId("DF703", "untrained-tensor", _W, VALUES_FAMILY)
INIT_LIKE_STATISTICS = RuleId("DF704", "init-like-statistics", _I, VALUES_FAMILY)
NON_FINITE_VALUES = RuleId("DF705", "non-finite-values", _E, VALUES_FAMILY)
VALUES_EXCEED_SERVING_DTYPE = RuleId("DF706", "values-exceed-serving-dtype", _W, VALUES_FAMILY)
FC_AUX_CHUNK_UNTRAINED = RuleId("DF707", "fc-aux-chunk-untrained", _W, VALUES_FAMILY)
LM_HEAD_COPIED_FROM_TARGET = RuleId("DF708", "lm-head-copied-from-target", _I, VALUES_FAMILY)
VALUES_NOT_CHECKED = RuleId("DF709", "values-not-checked", _I, VALUES_FAMILY)
METHOD_DIFFERS = RuleId("DF801", "method-differs", _E, "difference")
DRAFT_CLASS_DIFFERS = RuleId("DF802", "draft-class-differs", _E, "difference")
DIMENSION_DIFFERS = RuleId("DF803", "dimension-differs", _E, "difference")
AUX_LAYERS_DIFFER = RuleId("DF804", "aux-layers-differ", _E, "difference")
NORM_BEHAVIOUR_DIFFERS = RuleId("DF805", "norm-behaviour-differs", _E, "difference")
PARAMETER_DIFFERS = RuleId("DF806", "parameter-differs", _E, "difference")
VOCAB_MAP_DIFFERS = RuleId("DF807", "vocab-map-differs", _E, "difference")
ENGINE_VERDICT_DIFFERS = RuleId("DF808", "engine-verdict-differs", _E, "difference")
SPELLING_ONLY = RuleId("DF810", "spelling-only", _I, "difference")
EMBEDDING_PRESENCE_DIFFERS = RuleId("DF811", "embedding-presence-differs", _I, "difference")
CONFIG_KEY_DIFFERS = RuleId("DF812", "config-key-differs", _I, "difference")
TENSOR_DTYPE_DIFFERS = RuleId("DF813", "tensor-dtype-differs", _I, "difference")
TENSOR_NAME_DIFFERS = RuleId("DF814", "tensor-name-differs", _I, "difference")
UNTRAINED_LAYER_WEIGHTS = RuleId("DF901", "untrained-layer-weights", _W, "hygiene")
FLOAT32_WEIGHTS = RuleId("DF902", "float32-weights", _I, "hygiene")
CONFIG_DTYPE_MISMATCH = RuleId("DF903", "config-dtype-mismatch", _I, "hygiene")
LOCAL_VERIFIER_PATH = RuleId("DF904", "local-verifier-path", _I, "hygiene")
UNKNOWN_CONVENTION = RuleId("DF905", "unknown-convention", _I, "hygiene")

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
)

BY_NAME: dict[str, RuleId] = {r.name: r for r in ALL_RULE_IDS}
