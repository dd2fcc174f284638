"""Argument mistakes recognised before a check, each answered in one line with the fix.

Checked as given, a full model passed as the draft — or a draft and a target passed the
other way round — produces a cascade of findings whose fixes lead further astray (DF113
"pass --method eagle3", then wrong shapes, then wrong aux layers). The real mistake is in
the command line, so it is reported as a usage error (exit 2) instead:

* the draft is a full causal LM (no `fc` projection, no EAGLE architecture, several
  decoder layers) and the target is an EAGLE draft: the two are swapped;
* the draft is a full causal LM and the target is not a draft: the wrong checkpoint was
  given as the draft.

Only when the method is read from the checkpoint: with `--method` the user has said what
the checkpoint is, and it is checked as such.
"""

from __future__ import annotations

from collections.abc import Mapping

from draftfit.checkpoint import Checkpoint
from draftfit.draft.description import DraftDescription
from draftfit.draft.target import Target
from draftfit.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Keys only an EAGLE draft's config carries.
DRAFT_KEYS = ("speculators_model_type", "speculators_config", "eagle_config", "draft_vocab_size")


def refuse_argument_mistakes(
    checkpoint: Checkpoint, spec: DraftDescription, target: Target | None, method: str | None
) -> None:
    """Raise :class:`UsageError` with one line when the arguments are plainly mixed up."""
    message = argument_mistake(checkpoint, spec, target, method)
    if message is not None:
        raise UsageError(message)


def argument_mistake(
    checkpoint: Checkpoint, spec: DraftDescription, target: Target | None, method: str | None
) -> str | None:
    """The one-line description of the mistake, or None when the arguments look right."""
    found = _full_model_given(checkpoint, spec, target, method)
    if found is None:
        return None
    model, head = found
    draft = checkpoint.origin
    if target is not None and head is not None:
        return (
            f"{draft} is a full model ({model}) and the target {target.origin} an EAGLE "
            f"draft ({head}): the two look swapped; run `draftfit check {target.origin} "
            f"--target {draft}`"
        )
    return (
        f"{draft} is a full model ({model}), not an EAGLE draft (no `fc` projection, no "
        f"EAGLE architecture): give the draft checkpoint as DRAFT and this model as --target "
        f"(`draftfit check DRAFT --target {draft}`), or pass --method to check it as a draft"
    )


def refuse_diff_mistakes(
    sides: list[tuple[str, Checkpoint, DraftDescription]], target: Target | None, method: str | None
) -> None:
    """Raise :class:`UsageError` with one line when `diff` was given a full model where a
    draft belongs (`sides` are ("draft" | "reference", checkpoint, description))."""
    for role, checkpoint, spec in sides:
        found = _full_model_given(checkpoint, spec, target, method)
        if found is None:
            continue
        model, head = found
        if head is not None and target is not None:
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


def _full_model_given(
    checkpoint: Checkpoint, spec: DraftDescription, target: Target | None, method: str | None
) -> tuple[str, str | None] | None:
    """(the full model given as a draft, what marks the target as a draft or None), or None
    when the checkpoint is not a full model or the method was given or read."""
    if method is not None or spec.method is not None:
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
