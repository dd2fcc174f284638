"""Which model a draft was trained for, as its config records it, next to what is known of
the target it is checked with.

Shapes cannot tell Kimi-K2 from Kimi-K2.5, a base model from its instruct model or one
dated revision from the next: they share every dimension. What tells them apart without
reading weights is the name, and some producers record the verifier's:

* the speculators library: `speculators_config.verifier.name_or_path` (the `--verifier`
  given to training or `speculators convert`) and `verifier.architectures` (read from the
  verifier's own config.json by `speculators convert` and by training since 0.7.0; training
  0.3.x wrote `["LlamaForCausalLM"]` whatever the verifier, 0.4.0–0.6.x the draft layer's
  own, normally empty list, so those are not compared);
* NeMo Automodel: the draft config is the target's text config (`to_dict()`) with the draft's
  keys written over it, so `_name_or_path` is the target's path or Hub id (the warm-start
  draft's path when training resumed from one) and `model_type` is the target's;
* AngelSlim: `target_model_type`;
* SpecForge, the official EAGLE repository and ModelOpt write nothing about the target.

What is known of the target, strongest first: its Hub id (`hf://OWNER/NAME`, or a Hugging
Face cache folder `models--OWNER--NAME/snapshots/REV`), `_name_or_path` in its config
(often the model it was derived from), the name of its folder (a `--local-dir` download's
or a plain one: what the user called it); then `architectures` and `model_type`.

Names are compared after normalisation (:func:`model_name`): the owner is ignored (a
re-upload or an organisation renamed), case and `_` / `-` are ignored, Meta's `Meta-Llama`
prefix is dropped (its repositories were renamed `Llama-3.1-*`), and a trailing suffix that
marks a quantized or reformatted copy (`-FP8`, `-AWQ`, `-GPTQ-Int4`, `-GGUF`, `-bnb-4bit`,
`-quantized.w4a16`, `-hf`, ...) is set aside: a quantized copy holds the same model's
weights, rounded. A trailing date (`-0905`, `-2507`, `-20240229`) marks a revision of the
same model: retrained, so a draft for one revision drafts worse for the next, but not
garbage. Anything else that differs — the family, the version (`K2` vs `K2.5`, `3.1` vs
`3.3`), the size, base vs instruct vs thinking — is another model.

A name is compared only when it says which model it is: when it starts with a model family
draftfit knows (`llama`, `qwen`, `kimi`, ...) and does not name a draft (`eagle`,
`speculator`, ...). `/model/from_s3`, `./target` or a private repository `acme/support-bot`
says nothing, and nothing is concluded from it. A Hub id is exact: two that differ name two
models; a path or a folder is named by whoever made it, so one that may be short for the
other (`kimi-k2` for `Kimi-K2-Instruct`) or adds words of its own to a Hub id
(`Kimi-K2-Instruct-local`) or drops its dots (`kimi-k25`, `kimi_k25` for `Kimi-K2.5`)
is not called another model.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from draftfit.checkpoint.hub_cache import HubOrigin
from draftfit.draft.dialects import ANGELSLIM, NEMO_AUTOMODEL, SPECULATORS
from draftfit.records import frozen

if TYPE_CHECKING:
    from typing import Any

    from draftfit.draft.description import DraftDescription
    from draftfit.draft.target import Target

# Outcomes of the comparison.
SAME = "same"  # the same model (possibly a quantized copy, renamed or re-uploaded)
REVISION = "revision"  # the same model at another dated revision
MISMATCH = "mismatch"  # another model
UNKNOWN = "unknown"  # the draft records something, but nothing it can be compared with
NOT_RECORDED = "not-recorded"  # the draft records nothing about its verifier
OUTCOMES = (SAME, REVISION, MISMATCH, UNKNOWN, NOT_RECORDED)

# Nothing longer is a model name; a longer value is cut before it is parsed. A model has a
# class or two (a multimodal one, its text model): a longer list is read only so far.
MAX_REFERENCE = 512
MAX_ARCHITECTURES = 8

# Model families by the start of their (normalised) names: a name that starts with one,
# followed by a digit, `-`, `.` or its end, names a model. Names outside the list are not
# compared: an unknown name is not evidence of another model.
KNOWN_FAMILIES = (
    "afm",
    "apertus",
    "arcee",
    "aya",
    "baichuan",
    "bloom",
    "c4ai",
    "chatglm",
    "codegemma",
    "codellama",
    "codestral",
    "command",
    "dbrx",
    "deepseek",
    "devstral",
    "ernie",
    "exaone",
    "falcon",
    "gemma",
    "glm",
    "gpt",
    "granite",
    "hermes",
    "hunyuan",
    "internlm",
    "intern",
    "jamba",
    "kimi",
    "laguna",
    "ling",
    "llama",
    "longcat",
    "magistral",
    "mimo",
    "minicpm",
    "minimax",
    "ministral",
    "mistral",
    "mixtral",
    "moonlight",
    "nemotron",
    "olmo",
    "olmoe",
    "openchat",
    "phi",
    "qwen",
    "qwq",
    "ring",
    "seed",
    "skywork",
    "smollm",
    "stablelm",
    "starcoder",
    "step",
    "telechat",
    "tinyllama",
    "vicuna",
    "yi",
    "zephyr",
)

# A trailing token of a quantized or reformatted copy of a model (lower case, after `_`
# became `-`): the copy holds the same weights, rounded or repacked.
_COPY_TOKEN = (
    r"fp8|fp4|nvfp4[a-z0-9]*|mxfp[48]|fp16|bf16|f16|fp32|int[248]|awq|gptq|gguf|ggml|exl2|mlx"
    r"|bnb|nf4|\d+bits?|w\d+a\d+|g\d+|hf|dynamic|static|block|kv|marlin|autoround|torchao"
    r"|quantized(\.[a-z0-9]+)?|quant|unsloth"
)
# Words that name a variant of a model (another training of the same architecture).
VARIANT_WORDS = frozenset(
    {
        "base",
        "instruct",
        "chat",
        "it",
        "thinking",
        "think",
        "reasoning",
        "coder",
        "code",
        "math",
        "vl",
        "vision",
        "omni",
        "audio",
        "distill",
        "preview",
        "guard",
        "reward",
    }
)
# A trailing date: a dated revision of the same model (`0905`, `2507`, `20240229`).
_DATE_TOKEN = r"\d{4}|\d{6}|\d{8}"
# A token that names a draft, not the model it drafts for.
_DRAFT_TOKEN = r"(^|[-.])(eagle\d*|speculators?|draft|drafter|medusa|dflash|mtp|hass)([-.]|$)"
# A Hub repository id (`OWNER/NAME`) and a folder of the Hugging Face cache.
_HUB_ID = r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*"
_CACHE_REPO = r"(?:^|/)models--([^/]+?)--([^/]+?)(?:/snapshots/[^/]+)?/?$"
# Architecture suffixes: `Llama4ForCausalLM` and `Llama4ForConditionalGeneration` are one
# model family's text and multimodal classes.
_ARCH_SUFFIXES = (
    "ForConditionalGeneration",
    "ForCausalLM",
    "LMHeadModel",
    "ForSequenceClassification",
    "Model",
)


@frozen
class ModelName:
    """A model name as a reference spells it, and what it is after normalisation.

    Attributes:
        name: the model-name part as written (`Kimi-K2-Instruct-0905`).
        key: the normalised name without the copy suffix and the date (`kimi-k2-instruct`).
        revision: the trailing date, when there is one (`0905`).
        copy: the suffix of a quantized or reformatted copy as written (`FP8`), if any.
        renamed: the name carried Meta's `Meta-` prefix, dropped.
    """

    name: str
    key: str
    revision: str | None = None
    copy: str | None = None
    renamed: bool = False

    @property
    def says_something(self) -> bool:
        """Whether the name starts with a known model family and does not name a draft."""
        if not self.key or re.search(_DRAFT_TOKEN, self.key):
            return False
        return any(_starts_family(self.key, family) for family in KNOWN_FAMILIES)


def _starts_family(key: str, family: str) -> bool:
    if not key.startswith(family):
        return False
    rest = key[len(family) :]
    return not rest or not rest[0].isalpha()


def model_name(name: str) -> ModelName:
    """The normalised form of a model name (its last path component), see the module doc."""
    shown = name.strip()[:MAX_REFERENCE]
    text = shown.lower().replace("_", "-").replace(" ", "-")
    while "--" in text:
        text = text.replace("--", "-")
    text = text.strip("-")
    renamed = text.startswith("meta-llama")
    if renamed:
        text = text[len("meta-") :]
    tokens = [t for t in text.split("-") if t]
    copy_count = 0
    while len(tokens) - copy_count > 1 and re.fullmatch(_COPY_TOKEN, tokens[-1 - copy_count]):
        copy_count += 1
    copy = None
    if copy_count:
        shown_tokens = [t for t in shown.replace("_", "-").split("-") if t]
        copy = "-".join(shown_tokens[-copy_count:]) if len(shown_tokens) >= copy_count else None
        tokens = tokens[:-copy_count]
    revision = None
    if len(tokens) > 1 and re.fullmatch(_DATE_TOKEN, tokens[-1]):
        revision = tokens.pop()
    return ModelName(shown, "-".join(tokens), revision, copy, renamed)


@frozen
class Reference:
    """A model reference as one side knows it.

    Attributes:
        text: as written (a path, a Hub id, `hf://OWNER/NAME@REV`).
        source: where it was read (`speculators_config.verifier.name_or_path`, `hf://`,
            `Hub cache folder`, `folder name`, ...).
        name: its model name, normalised.
        hub_id: `OWNER/NAME` where the reference is a Hub repository id.
        verified: read from where the target actually came from (an `hf://` reference or
            a cache folder), not from what a config or a folder says.
    """

    text: str
    source: str
    name: ModelName
    hub_id: str | None = None
    verified: bool = False

    @property
    def says_something(self) -> bool:
        return self.name.says_something

    @property
    def shown(self) -> str:
        """How a report names it: the Hub id, else the last component as written."""
        return self.hub_id or self.name.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "source": self.source,
            "name": self.name.name,
            "hub_id": self.hub_id,
            "from_origin": self.verified,
            "says_something": self.says_something,
        }


def reference(text: str, source: str, *, verified: bool = False) -> Reference | None:
    """A reference from a recorded or given string: a Hub id, `hf://OWNER/NAME[@REV]`, a
    cache folder's path (its repository), or a path (its last component). None when the
    text names nothing (empty, or only separators)."""
    raw = text.strip()[:MAX_REFERENCE]
    body = raw.removeprefix("hf://").split("@", 1)[0] if raw.startswith("hf://") else raw
    body = body.replace("\\", "/")
    cached = re.search(_CACHE_REPO, body)
    if cached is not None:
        hub_id = f"{cached.group(1)}/{cached.group(2)}"
        return Reference(raw, source, model_name(cached.group(2)), hub_id, verified)
    stripped = body.rstrip("/")
    if not stripped:
        return None
    if re.fullmatch(_HUB_ID, stripped) and ".." not in stripped:
        return Reference(raw, source, model_name(stripped.split("/")[1]), stripped, verified)
    last = PurePosixPath(stripped).name
    if not last or last in (".", ".."):
        return None
    return Reference(raw, source, model_name(last), None, verified)


@frozen
class Recorded:
    """What the draft records about the model it was trained for.

    Attributes:
        producer: the producer convention's name (`speculators`, `nemo-automodel`, ...).
        reference: the recorded name or path, if any, and where (`source` is its JSON
            pointer).
        architectures: the recorded verifier architectures.
        architectures_pointer: where they are.
        architectures_trusted: whether they are the verifier's own (see the module doc).
        architectures_note: why they are not trusted, when not.
        model_type: a recorded target `model_type` (AngelSlim, NeMo), and `model_type_pointer`.
    """

    producer: str
    reference: Reference | None = None
    architectures: tuple[str, ...] = ()
    architectures_pointer: str | None = None
    architectures_trusted: bool = False
    architectures_note: str | None = None
    model_type: str | None = None
    model_type_pointer: str | None = None

    @property
    def anything(self) -> bool:
        return self.reference is not None or bool(self.architectures) or bool(self.model_type)

    def to_dict(self) -> dict[str, Any]:
        return {
            "producer": self.producer,
            "name_or_path": self.reference.text if self.reference else None,
            "name_pointer": self.reference.source if self.reference else None,
            "architectures": list(self.architectures),
            "architectures_pointer": self.architectures_pointer,
            "architectures_compared": self.architectures_trusted,
            "model_type": self.model_type,
            "model_type_pointer": self.model_type_pointer,
        }


def recorded_verifier(draft: DraftDescription) -> Recorded:
    """What `draft`'s config records about its verifier (nothing for SpecForge, the official
    EAGLE repository, ModelOpt and unknown producers)."""
    config = draft.config
    dialect = draft.dialect
    if dialect.name == SPECULATORS:
        spec_config = config.get("speculators_config")
        verifier = spec_config.get("verifier") if isinstance(spec_config, dict) else None
        if not isinstance(verifier, dict):
            return Recorded(dialect.name)
        pointer = "/speculators_config/verifier/name_or_path"
        name = verifier.get("name_or_path")
        ref = reference(name, pointer) if isinstance(name, str) else None
        archs = _strings(verifier.get("architectures"))
        trusted, note = _speculators_architectures_trusted(draft, archs)
        return Recorded(
            dialect.name,
            ref,
            archs,
            "/speculators_config/verifier/architectures",
            trusted,
            note,
        )
    if dialect.name == NEMO_AUTOMODEL:
        name = config.get("_name_or_path")
        ref = reference(name, "/_name_or_path") if isinstance(name, str) else None
        model_type = config.get("model_type")
        return Recorded(
            dialect.name,
            ref,
            model_type=model_type if isinstance(model_type, str) and model_type else None,
            model_type_pointer="/model_type",
        )
    if dialect.name == ANGELSLIM:
        model_type = config.get("target_model_type")
        return Recorded(
            dialect.name,
            model_type=model_type if isinstance(model_type, str) and model_type else None,
            model_type_pointer="/target_model_type",
        )
    return Recorded(dialect.name)


def _strings(value: object) -> tuple[str, ...]:
    """The first few non-empty strings of a recorded list, each cut to a name's length."""
    if not isinstance(value, list):
        return ()
    found = [v[:MAX_REFERENCE] for v in value[:MAX_ARCHITECTURES] if isinstance(v, str) and v]
    return tuple(found)


def _speculators_architectures_trusted(
    draft: DraftDescription, archs: tuple[str, ...]
) -> tuple[bool, str | None]:
    """Whether speculators wrote the verifier's own architectures: `speculators convert`
    (every version) and training since 0.7.0 read them from the verifier's config.json;
    training 0.3.x wrote `LlamaForCausalLM` for every verifier, 0.4.0–0.6.x the draft
    layer's (normally empty) list."""
    if not archs:
        return False, None
    if draft.dialect.variant == "converted":
        return True, None
    version = _major_minor(draft.config.get("speculators_version"))
    if version is not None and version >= (0, 7):
        return True, None
    shown = draft.config.get("speculators_version")
    written = f"speculators {shown}" if isinstance(shown, str) else "a speculators version"
    return False, (
        f"recorded by {written} training, which before 0.7.0 does not write the verifier's "
        "own: not compared"
    )


_VERSION = r"(\d+)\.(\d+)"


def _major_minor(value: object) -> tuple[int, int] | None:
    if not isinstance(value, str):
        return None
    match = re.match(_VERSION, value.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def target_references(target: Target) -> list[Reference]:
    """What names the target, strongest first: its Hub id (an `hf://` origin or a cache
    folder), `_name_or_path` (top level, then the text config's), its folder's name."""
    refs: list[Reference] = []
    origin = target.origin
    hub = target.hub_origin
    if origin.startswith("hf://"):
        found = reference(origin, "the target's Hub id (hf://)", verified=True)
        if found is not None:
            refs.append(found)
    elif hub is not None and hub.repo_id:
        found = reference(hub.repo_id, "the target's Hugging Face cache folder", verified=True)
        if found is not None:
            refs.append(found)
    for config, pointer in ((target.config, "/_name_or_path"), (target.text_config, None)):
        value = config.get("_name_or_path")
        if isinstance(value, str) and value.strip():
            where = pointer or f"{target.text_pointer}/_name_or_path"
            found = reference(value, f"`{where}` in the target's config.json")
            if found is not None and all(r.text != found.text for r in refs):
                refs.append(found)
    if not origin.startswith("hf://") and (hub is None or not hub.repo_id):
        folder = target.folder_name
        found = reference(folder, _folder_kind(hub)) if folder else None
        if found is not None:
            refs.append(found)
    return refs


def _folder_kind(hub: HubOrigin | None) -> str:
    if hub is not None and hub.layout == "local-dir":
        return "the target's folder name, a --local-dir download"
    return "the target's folder name"


@frozen
class Comparison:
    """One comparison made: a phrase, and what it showed (`agrees`, `differs`, `revision`,
    or `undecided` where it could not be made or could not decide)."""

    phrase: str
    showed: str

    def to_dict(self) -> dict[str, str]:
        return {"phrase": self.phrase, "showed": self.showed}


AGREES, DIFFERS, UNDECIDED = "agrees", "differs", "undecided"


@frozen
class VerifierCheck:
    """The draft's recorded verifier next to what is known of the target.

    Attributes:
        outcome: one of :data:`OUTCOMES`.
        recorded: what the draft records.
        target_names: what names the target, strongest first.
        target_name: the target reference the recorded name was compared with (the
            strongest one that says which model it is), if any.
        comparisons: each comparison made.
        pointer: where in the draft's config.json the deciding record is.
        shapes_agree: whether the draft's widths and vocabulary match the target's (the
            case no other check can tell apart); None when not known.
        declared: the user said the draft is meant for this target.
        producer_note: for a draft that records nothing, why (`SpecForge / SGLang writes
            none`).
    """

    outcome: str
    recorded: Recorded
    target_names: tuple[Reference, ...] = ()
    target_name: Reference | None = None
    comparisons: tuple[Comparison, ...] = ()
    pointer: str | None = None
    shapes_agree: bool | None = None
    declared: bool = False
    producer_note: str = ""

    @property
    def summary(self) -> str:
        """One line: how the comparison came out, and each comparison made."""
        if self.outcome == NOT_RECORDED:
            return f"the draft records none ({self.producer_note}): not compared"
        phrases = "; ".join(c.phrase for c in self.comparisons)
        return f"not decided: {phrases}" if self.outcome == UNKNOWN else phrases

    @property
    def deciding(self) -> str:
        """The comparisons that showed a difference, joined (for a finding's message)."""
        shown = [c.phrase for c in self.comparisons if c.showed in (DIFFERS, REVISION)]
        return "; ".join(shown)

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "summary": self.summary,
            "draft_records": self.recorded.to_dict(),
            "target_known_as": [r.to_dict() for r in self.target_names],
            "compared_with": self.target_name.to_dict() if self.target_name else None,
            "comparisons": [c.to_dict() for c in self.comparisons],
            "shapes_agree": self.shapes_agree,
            "declared_for_target": self.declared,
        }


def check_verifier(draft: DraftDescription, target: Target) -> VerifierCheck:
    """Compare what `draft` records about its verifier with what is known of `target`."""
    recorded = recorded_verifier(draft)
    names = tuple(target_references(target))
    declared = target.draft_is_for_target
    shapes = _shapes_agree(draft, target)
    if not recorded.anything:
        return VerifierCheck(
            NOT_RECORDED,
            recorded,
            names,
            shapes_agree=shapes,
            declared=declared,
            producer_note=_producer_note(draft),
        )
    comparisons: list[Comparison] = []
    outcome = UNKNOWN
    decided_by: Reference | None = None
    pointer: str | None = None
    if recorded.reference is not None:
        name_result = _compare_names(recorded.reference, names)
        if name_result is not None:
            outcome, decided_by, phrase = name_result
            showed = {SAME: AGREES, MISMATCH: DIFFERS, REVISION: REVISION}.get(outcome, UNDECIDED)
            comparisons.append(Comparison(phrase, showed))
            pointer = recorded.reference.source
        else:
            comparisons.append(Comparison(_not_compared(recorded.reference, names), UNDECIDED))
    for comparison, where in _compare_structure(recorded, target):
        comparisons.append(comparison)
        if comparison.showed == DIFFERS and outcome in (UNKNOWN, REVISION):
            outcome, pointer = MISMATCH, where
    return VerifierCheck(
        outcome,
        recorded,
        names,
        decided_by,
        tuple(comparisons),
        pointer,
        shapes,
        declared,
    )


def _producer_note(draft: DraftDescription) -> str:
    if draft.dialect.name == SPECULATORS:
        return "no `speculators_config.verifier`"
    return f"{draft.dialect.title} writes no verifier"


def _compare_names(
    recorded: Reference, names: tuple[Reference, ...]
) -> tuple[str, Reference, str] | None:
    """The outcome of comparing the recorded name with the strongest target name that says
    which model it is, that target name, and a phrase; None when either says nothing."""
    if not recorded.says_something:
        return None
    target = next((n for n in names if n.says_something), None)
    if target is None:
        return None
    mine, theirs = recorded.name, target.name
    pair = f"`{recorded.shown}` ({_source_words(recorded)}) vs `{target.shown}` ({target.source})"
    if mine.key != theirs.key:
        if _may_abbreviate(recorded, target):
            return UNKNOWN, target, f"name {pair}: one may be short for the other"
        if _same_but_separators(recorded, target):
            return UNKNOWN, target, f"name {pair}: one may be the other without its separators"
        return MISMATCH, target, f"name {pair}: another model"
    if mine.revision != theirs.revision:
        dates = f"{mine.revision or 'undated'} vs {theirs.revision or 'undated'}"
        return REVISION, target, f"name {pair}: another dated revision ({dates})"
    notes = []
    for side in (mine, theirs):
        if side.copy:
            notes.append(f"`{side.name}` is a quantized or reformatted copy ({side.copy})")
    if mine.renamed != theirs.renamed:
        notes.append("Meta renamed its `Meta-Llama-*` repositories `Llama-*`")
    owners = {ref.hub_id.split("/")[0].lower() for ref in (recorded, target) if ref.hub_id}
    if recorded.hub_id and target.hub_id and len(owners) > 1:
        notes.append("another owner's copy")
    extra = f" ({'; '.join(notes)})" if notes else ""
    return SAME, target, f"name {pair}: the same model{extra}"


def _may_abbreviate(a: Reference, b: Reference) -> bool:
    """Whether two different names may still name one model, because a path or a folder is
    named by whoever made it: one's tokens start the other's (`kimi-k2` and
    `kimi-k2-instruct`, not `kimi-k2.5` and `kimi-k2-instruct`), and the shorter is such a
    name (`kimi-k2` may be short for `Kimi-K2-Instruct`), or the longer adds only words of
    its own to an exact Hub id (`Kimi-K2-Instruct-local`). A Hub id is exact: two differ;
    and a folder that adds `Instruct`, `Base`, `Thinking`, ... to a Hub id names another
    variant of it."""
    short, long = sorted((a, b), key=lambda r: len(r.name.key.split("-")))
    short_tokens, long_tokens = short.name.key.split("-"), long.name.key.split("-")
    if long_tokens[: len(short_tokens)] != short_tokens:
        return False
    if short.hub_id is None:
        return True
    if long.hub_id is not None:
        return False
    return not any(t in VARIANT_WORDS for t in long_tokens[len(short_tokens) :])


def _same_but_separators(a: Reference, b: Reference) -> bool:
    """Whether two names differ only in their `.`, `-` and `_`, and one of them is a path or
    a folder, named by whoever made it: a folder `kimi-k25` or `kimi_k25` may well hold
    `Kimi-K2.5` (paths are often written without dots). Two Hub ids are exact."""
    if a.hub_id is not None and b.hub_id is not None:
        return False
    return _letters(a.name.key) == _letters(b.name.key)


def _letters(key: str) -> str:
    return "".join(ch for ch in key if ch.isalnum())


def _source_words(ref: Reference) -> str:
    return ref.source.lstrip("/").replace("/", ".")


def _not_compared(recorded: Reference, names: tuple[Reference, ...]) -> str:
    if not recorded.says_something:
        return f"name `{recorded.name.name}` recorded: it does not say which model it is"
    if names:
        shown = ", ".join(f"`{n.name.name}` ({n.source})" for n in names)
        return (
            f"name `{recorded.shown}` recorded; nothing known of the target says which model "
            f"it is ({shown})"
        )
    return f"name `{recorded.shown}` recorded; nothing names the target"


def _compare_structure(recorded: Recorded, target: Target) -> list[tuple[Comparison, str | None]]:
    """The comparisons of the recorded architectures and model type, each with the pointer
    of the record."""
    out: list[tuple[Comparison, str | None]] = []
    if recorded.architectures:
        mine = ", ".join(recorded.architectures)
        theirs = _target_architectures(target)
        if not recorded.architectures_trusted:
            note = recorded.architectures_note or "not compared"
            out.append((Comparison(f"architectures {mine} {note}", UNDECIDED), None))
        elif not theirs:
            out.append(
                (Comparison(f"architectures {mine} recorded; the target has none", UNDECIDED), None)
            )
        else:
            shown = ", ".join(theirs)
            differs = not ({_stem(a) for a in recorded.architectures} & {_stem(a) for a in theirs})
            word = "another model class" if differs else "the same model class"
            phrase = f"architectures {mine} vs the target's {shown}: {word}"
            showed = DIFFERS if differs else AGREES
            out.append((Comparison(phrase, showed), recorded.architectures_pointer))
    if recorded.model_type:
        types = [t for t in (target.config.get("model_type"), target.model_type) if t]
        known = [t for t in dict.fromkeys(types) if isinstance(t, str)]
        recorded_type = f"model_type `{recorded.model_type}` ({recorded.model_type_pointer})"
        if not known:
            phrase = f"{recorded_type} recorded; the target has none"
            out.append((Comparison(phrase, UNDECIDED), None))
        else:
            differs = recorded.model_type.lower() not in {t.lower() for t in known}
            word = "another model type" if differs else "the same"
            shown = ", ".join(f"`{t}`" for t in known)
            phrase = f"{recorded_type} vs the target's {shown}: {word}"
            showed = DIFFERS if differs else AGREES
            out.append((Comparison(phrase, showed), recorded.model_type_pointer))
    return out


def _target_architectures(target: Target) -> list[str]:
    """The target's classes: its own, then its text model's (a multimodal config's)."""
    archs = list(_strings(target.config.get("architectures")))
    nested = target.text_config.get("architectures") if target.text_pointer else None
    archs += [a for a in _strings(nested) if a not in archs]
    return archs


def _stem(architecture: str) -> str:
    """`Llama4ForConditionalGeneration` -> `llama4`: the class family without its head."""
    for suffix in _ARCH_SUFFIXES:
        if architecture.endswith(suffix) and len(architecture) > len(suffix):
            return architecture[: -len(suffix)].lower()
    return architecture.lower()


def _shapes_agree(draft: DraftDescription, target: Target) -> bool | None:
    """Whether the draft's target-facing widths and vocabulary equal the target's."""
    width = draft.get("target_hidden_size")
    if not isinstance(width, int) or isinstance(width, bool):
        width = draft.get("hidden_size")
    vocab = draft.get("vocab_size")
    if not isinstance(width, int) or not isinstance(vocab, int):
        return None
    if target.hidden_size is None or target.vocab_size is None:
        return None
    return width == target.hidden_size and vocab == target.vocab_size
