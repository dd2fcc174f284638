"""Argument mistakes recognised before a check, each answered in one line with the fix.

Checked as given, a full model passed as the draft — or a draft and a target passed the
other way round — produces a cascade of findings whose fixes lead further astray (DF113
"pass --method eagle3", then wrong shapes, then wrong aux layers). The real mistake is in
the command line, so it is reported as a usage error (exit 2) instead:

* the draft is a full causal LM (no `fc` projection, no EAGLE architecture, several
  decoder layers) and the target is an EAGLE draft: the two are swapped;
* the draft is a full causal LM and the target is not a draft: the wrong checkpoint was
  given as the draft;
* the target is a draft, whatever the draft is: `--target` takes the model the draft
  serves next to, and a draft's config read as one gives no layers, hidden size or
  vocabulary to check against (every target check would be skipped).

The first two only when the method is read from the checkpoint: with `--method` the user
has said what the checkpoint is, and it is checked as such. A draft given as the target is
refused whatever `--method` says.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.checkpoint import Checkpoint
from draftfit.checkpoint.local import load_from_access
from draftfit.draft.description import DraftDescription
from draftfit.draft.dialects import UNKNOWN, detect_dialect
from draftfit.draft.mtp import family_of
from draftfit.draft.target import Target
from draftfit.errors import DraftfitError, UsageError

if TYPE_CHECKING:
    from typing import Any

# Keys only an EAGLE draft's config carries.
DRAFT_KEYS = ("speculators_model_type", "speculators_config", "eagle_config", "draft_vocab_size")


def refuse_argument_mistakes(
    checkpoint: Checkpoint,
    draft: DraftDescription,
    target: Target | None,
    method: str | None,
    command: str = "check",
) -> None:
    """Raise :class:`UsageError` with one line when the arguments are plainly mixed up
    (`command`, `check` or `matrix`, is the command the fix names)."""
    message = argument_mistake(checkpoint, draft, target, method, command)
    if message is not None:
        raise UsageError(message)


def argument_mistake(
    checkpoint: Checkpoint,
    draft: DraftDescription,
    target: Target | None,
    method: str | None,
    command: str = "check",
) -> str | None:
    """The one-line description of the mistake, or None when the arguments look right."""
    found = _full_model_given(checkpoint, draft, target, method)
    origin = checkpoint.origin
    target_draft = draft_given_as_target(target) if target is not None else None
    if found is not None and target is not None and target_draft is not None:
        return (
            f"{origin} is a full model ({found[0]}) and the target {target.origin} an EAGLE "
            f"draft ({found[1] or target_draft}): the two look swapped; run `draftfit "
            f"{command} {target.origin} --target {origin}`"
        )
    if target is not None and target_draft is not None:
        if _same_place(origin, target.origin):
            return (
                f"{origin} was given as the draft and as --target; it is a draft "
                f"({target_draft}): --target takes the target (verifier) model it serves "
                f"next to; run `draftfit {command} {origin} --target VERIFIER`"
                + _verifier_named(target)
            )
        also = (
            f"; to compare the two drafts, `draftfit diff {origin} {target.origin}`"
            if command == "check" and draft.dialect.name != UNKNOWN
            else ""
        )
        return (
            draft_as_target_message(
                target, target_draft, f"draftfit {command} {origin} --target VERIFIER"
            )
            + also
        )
    if found is None:
        return None
    model = found[0]
    return (
        f"{origin} is a full model ({model}), not an EAGLE draft (no `fc` projection, no "
        f"EAGLE architecture): give the draft checkpoint as DRAFT and this model as --target "
        f"(`draftfit check DRAFT --target {origin}`), or pass --method to check it as a draft"
        + mtp_hint(checkpoint, command)
    )


def mtp_hint(checkpoint: Checkpoint, command: str) -> str:
    """Where a full model given as the draft is a target of a family that ships MTP layers:
    how to check those (only `check` does)."""
    if family_of(checkpoint.config) is None:
        return ""
    if command != "check":
        return f"; it is a target with MTP layers, which `draftfit {command}` does not cover yet"
    return (
        f"; it is a target with MTP layers: `draftfit check {checkpoint.origin} --method mtp` "
        "(or the MTP launch in --serve-args) checks them"
    )


def refuse_full_model(checkpoint: Checkpoint, draft: DraftDescription, command: str) -> None:
    """Raise :class:`UsageError` when a command that describes drafts (`command`, e.g.
    `inspect`) was given a full model, saying what it is and where it belongs."""
    found = _full_model_given(checkpoint, draft, None, None)
    if found is not None:
        model = checkpoint.origin
        raise UsageError(
            f"{model} is a full model ({found[0]}), not an EAGLE draft (no `fc` projection, "
            f"no EAGLE architecture): `draftfit {command}` describes drafts; give this model "
            f"as the target (`draftfit check DRAFT --target {model}`)"
        )


def refuse_convert_mistakes(
    checkpoint: Checkpoint, draft: DraftDescription, target: Target | None, options: str
) -> None:
    """Raise :class:`UsageError` when `convert` was given a full model as the draft: it has no
    `--method`, and rewriting a full model as a draft would copy its every byte into a
    checkpoint no engine drafts with. `options` are the convert options given (`--to vllm
    -o OUT`), for the command line the fix names."""
    found = _full_model_given(checkpoint, draft, target, None)
    if found is None:
        return
    model, head = found
    origin = checkpoint.origin
    if target is not None and (head is not None or draft_given_as_target(target) is not None):
        fixed = f"draftfit convert {target.origin} {options} --target {origin}"
        raise UsageError(
            f"{origin} is a full model ({model}) and the target {target.origin} an EAGLE draft: "
            f"the two look swapped; run `{fixed}`"
        )
    fixed = f"draftfit convert DRAFT {options} --target {origin}"
    raise UsageError(
        f"{origin} is a full model ({model}), not an EAGLE draft (no `fc` projection, no EAGLE "
        f"architecture): `draftfit convert` rewrites drafts; give the draft checkpoint as DRAFT "
        f"and this model as --target (`{fixed}`)"
    )


def refuse_diff_mistakes(
    sides: list[tuple[str, Checkpoint, DraftDescription]], target: Target | None, method: str | None
) -> None:
    """Raise :class:`UsageError` with one line when `diff` was given a full model where a
    draft belongs (`sides` are ("draft" | "reference", checkpoint, description))."""
    target_draft = draft_given_as_target(target) if target is not None else None
    for role, checkpoint, draft in sides:
        found = _full_model_given(checkpoint, draft, target, method)
        if found is None:
            continue
        model, head = found
        if (head is not None or target_draft is not None) and target is not None:
            raise UsageError(
                f"the {role} {checkpoint.origin} is a full model ({model}) and the target "
                f"{target.origin} an EAGLE draft: the two look swapped; give the model as "
                "--target"
            )
        raise UsageError(
            f"the {role} {checkpoint.origin} is a full model ({model}), not an EAGLE draft: "
            "`draftfit diff` compares two drafts; give this model as --target, or pass "
            "--method to compare it as a draft"
        )
    if target is not None and target_draft is not None:
        draft_origin, reference_origin = (checkpoint.origin for _, checkpoint, _ in sides)
        raise UsageError(
            draft_as_target_message(
                target,
                target_draft,
                f"draftfit diff {draft_origin} {reference_origin} --target VERIFIER",
            )
        )


def refuse_draft_as_target(target: Target | None, right_command: str) -> None:
    """Raise :class:`UsageError` when the target is a draft; `right_command` is the command
    line the user likely meant, with `VERIFIER` where the target model goes."""
    if target is None:
        return
    found = draft_given_as_target(target)
    if found is not None:
        raise UsageError(draft_as_target_message(target, found, right_command))


def draft_as_target_message(target: Target, what: str, right_command: str) -> str:
    """One line: the target is a draft (`what`), and the command the user likely meant."""
    return (
        f"the target {target.origin} is a draft ({what}), not a target model: a draft was "
        "given as --target, which takes the model the draft serves next to (the verifier); "
        f"run `{right_command}`" + _verifier_named(target)
    )


def draft_given_as_target(target: Target) -> str | None:
    """What shows the target to be a draft (`speculators library (converted): `architectures`
    is `Eagle3Speculator` …`), or None for a model that is not one.

    The draft recogniser (:func:`draftfit.draft.dialects.detect_dialect`) reads the config:
    every producer but the official EAGLE repository marks its drafts there (an EAGLE or
    drafter architecture, speculators or ModelOpt keys, `draft_vocab_size`). A plain config
    of one decoder layer — what the official EAGLE repository writes — is decided by its
    tensor names (`fc`, `midlayer.*`), whose headers are read only then."""
    config = target.config
    if not config:
        return None
    found = _recognised(Checkpoint(Path(target.origin), target.origin, config=config))
    if found is None and _layers(config) == 1 and target.access is not None:
        found = _recognised_from_weights(target)
    return found if found is not None else _draft_like(config)


def _recognised(checkpoint: Checkpoint) -> str | None:
    dialect = detect_dialect(checkpoint)
    if dialect.name == UNKNOWN:
        return None
    return f"{dialect.title}: {dialect.evidence[0]}" if dialect.evidence else dialect.title


def _recognised_from_weights(target: Target) -> str | None:
    """The dialect a one-layer target's tensor names show, or None (also when its files
    cannot be read: the check then goes on, and says what it cannot read)."""
    access = target.access
    assert access is not None
    try:
        checkpoint = load_from_access(access, access.names(), target.origin, Path(target.origin))
    except (DraftfitError, OSError):
        return None
    found = _recognised(checkpoint)
    if found is None and any(name == "fc.weight" for name in checkpoint.tensors):
        found = "an `fc.weight` projection of the target's hidden states and one decoder layer"
    return found


# A Hub repository id as speculators writes the verifier's `name_or_path`.
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


def _verifier_named(target: Target) -> str:
    """`" (its config names the verifier hf://owner/name)"` when the draft given as the target
    names a Hub verifier (speculators' `speculators_config.verifier.name_or_path`), else ""."""
    nested = target.config.get("speculators_config")
    verifier = nested.get("verifier") if isinstance(nested, Mapping) else None
    name = verifier.get("name_or_path") if isinstance(verifier, Mapping) else None
    if isinstance(name, str) and _HUB_ID.fullmatch(name):
        return f" (its config names the verifier hf://{name})"
    return ""


def _same_place(a: str, b: str) -> bool:
    """Whether two arguments name the same checkpoint (the same text, or the same folder)."""
    if a.rstrip("/") == b.rstrip("/"):
        return True
    try:
        return Path(a).resolve() == Path(b).resolve() and Path(a).exists()
    except OSError:
        return False


def _full_model_given(
    checkpoint: Checkpoint, draft: DraftDescription, target: Target | None, method: str | None
) -> tuple[str, str | None] | None:
    """(the full model given as a draft, what marks the target as a draft or None), or None
    when the checkpoint is not a full model or the method was given or read."""
    if method is not None or draft.method is not None:
        return None
    model = _full_model(checkpoint)
    if model is None:
        return None
    return model, _draft_like(target.config) if target is not None else None


def _full_model(checkpoint: Checkpoint) -> str | None:
    """`LlamaForCausalLM, 32 layers` when the checkpoint is a full causal LM, else None."""
    config = checkpoint.config
    if not isinstance(config, Mapping):
        return None
    if any(name == "fc.weight" or name.endswith(".fc.weight") for name in checkpoint.tensors):
        return None
    arch = _first_architecture(config)
    if arch is None or "eagle" in arch.lower() or any(key in config for key in DRAFT_KEYS):
        return None
    if not arch.endswith(("ForCausalLM", "ForConditionalGeneration")):
        return None
    layers = _layers(config)
    if layers is None or layers < 2:
        return None
    return f"`{arch}`, {layers} layers"


def _draft_like(config: Mapping[str, Any]) -> str | None:
    """What marks a config as an EAGLE draft's (`LlamaForCausalLMEagle3`), or None."""
    arch = _first_architecture(config)
    if arch is not None and "eagle" in arch.lower():
        return f"`{arch}`"
    for key in DRAFT_KEYS:
        if key in config:
            return f"its config has `{key}`"
    return None


def _first_architecture(config: Mapping[str, Any]) -> str | None:
    archs = config.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0]
    return None


def _layers(config: Mapping[str, Any]) -> int | None:
    for scope in (config, config.get("text_config")):
        if isinstance(scope, Mapping):
            value = scope.get("num_hidden_layers")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None
