"""Target checks, the part every engine shares: the widths the draft expects of the target
(fc input, vocabulary, a borrowed embedding) and a rotation-quantized target. Each engine's
own target step runs these beside its verifier and context checks."""

from __future__ import annotations

from collections.abc import Callable

from draftfit import rule_ids
from draftfit.draft.target import Target
from draftfit.draft.target_rotation import Rotation
from draftfit.engines.procedure.state import CONFIG, BuildState
from draftfit.location import Location, config_at, in_target_file

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.VOCAB_SIZE_MISMATCH,
    rule_ids.TARGET_HIDDEN_SIZE_MISMATCH,
    rule_ids.SHARED_EMBEDDING_WIDTH_MISMATCH,
    rule_ids.TARGET_ROTATION_UNCOMPENSATED,
    rule_ids.TARGET_ROTATION_UNCHECKED,
)
EMITS_STAGE = "engine procedure (every engine): target checks"

MOE_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")

# For fact `draft_rotation_compensated` = the given value: None when this version serves
# the draft in the rotated basis, else the subject of "loads the draft's `fc` as stored"
# (naming the engine and why) and the fix for this version.
RotationAdvice = Callable[[BuildState, str, Rotation], "tuple[str, str] | None"]


def target_is_moe(target: Target) -> bool:
    """Whether the target config describes a mixture-of-experts model."""
    for config in (target.text_config, target.config):
        for key in MOE_KEYS:
            value = config.get(key)
            if isinstance(value, int) and value > 1:
                return True
    return False


def target_width_fix(state: BuildState, width: int, target_width: int) -> str:
    """The fix for a draft that expects `width`-wide target states next to a
    `target_width`-wide target, as the stored `fc` shows it: trained on the target's
    width (the config is wrong: say `target_hidden_size`), or on the width the config
    says (the draft was trained for another target: no config edit serves it here)."""
    stored = next(
        (
            info.shape
            for name, info in state.checkpoint.tensors.items()
            if (name == "fc.weight" or name.endswith(".fc.weight")) and len(info.shape) == 2
        ),
        None,
    )
    if stored is not None and stored[1] > 0:
        fits_target = stored[1] % target_width == 0
        fits_config = stored[1] % width == 0
        shown = f"`fc.weight` is [{stored[0]}, {stored[1]}]"
        if fits_target and not fits_config:
            return (
                f"set `target_hidden_size` to {target_width}: {shown}, trained on "
                f"{target_width}-wide states"
            )
        if fits_config and not fits_target:
            return (
                f"use a draft trained for this target: {shown}, trained on {width}-wide "
                f"states of another model, so no config edit serves it next to this one"
            )
    return (
        f"set `target_hidden_size` to {target_width} only if `fc` was trained on "
        f"{target_width}-wide states; otherwise the draft must be retrained for this target"
    )


def target_width_checks(state: BuildState, *, eagle1: bool, embedding_shared: bool) -> None:
    """Engine-neutral width checks against the target: fc input, vocab, shared embedding."""
    t = state.target
    if t is None:
        return
    pointer = state.draft.layer_config_pointer
    H = state.vint("hidden_size")
    T = state.vint("target_hidden_size") or H
    Ht = t.hidden_size
    if Ht is not None and not eagle1 and T is not None and Ht != T:
        explicit = "target_hidden_size" in state.visible
        where = "/target_hidden_size" if explicit else f"{pointer}/hidden_size"
        state.event(
            rule_ids.TARGET_HIDDEN_SIZE_MISMATCH,
            f"the draft expects target hidden states of width {T} "
            f"({'target_hidden_size' if explicit else 'hidden_size'}), but the target's "
            f"hidden_size is {Ht}: the `fc` matmul fails the first time the draft reads the "
            "target's states (in the start-up warm-up where the engine runs the draft on "
            "them, else at the first speculative step)",
            config_at(where),
            ("eagle3_weight_mapping",),
            fix=target_width_fix(state, T, Ht),
        )
    if eagle1 and Ht is not None and H is not None and Ht != H:
        state.event(
            rule_ids.TARGET_HIDDEN_SIZE_MISMATCH,
            f"EAGLE-1 drafts concatenate the token embedding with the target's hidden state, "
            f"so hidden_size {H} must equal the target's {Ht}",
            config_at(f"{pointer}/hidden_size"),
            ("eagle_weight_mapping",),
            fix="retrain the draft for this target",
        )
    V = state.vint("vocab_size")
    Vt = t.vocab_size
    if V is not None and Vt is not None and Vt != V:
        state.event(
            rule_ids.VOCAB_SIZE_MISMATCH,
            f"the draft's vocab_size is {V} but the target's is {Vt}: token ids and logits "
            "do not line up (out-of-range ids or wrong tokens at the first forward)",
            config_at(f"{pointer}/vocab_size"),
            ("eagle3_weight_mapping" if not eagle1 else "eagle_weight_mapping",),
            fix="use a draft trained with this target's tokenizer",
        )
    # Embedding sharing: a draft without its own embedding borrows the target's.
    if embedding_shared and H is not None and Ht is not None and Ht != H:
        state.event(
            rule_ids.SHARED_EMBEDDING_WIDTH_MISMATCH,
            f"the draft stores no `embed_tokens.weight`, so {state.profile.title} shares the "
            f"target's embedding ({Ht} wide) with a draft of hidden_size {H}: the width assert "
            "fails at start-up",
            Location(CONFIG, f"{pointer}/hidden_size"),
            ("embedding_sharing",),
            fix=f"store the draft's own `embed_tokens.weight` [{V}, {H}]",
        )


def embedding_borrowed(state: BuildState) -> bool:
    """Whether the draft, storing no embedding, borrows the target's (where the engine
    builds its own for it, it does not)."""
    vocab = state.view.vocabulary
    shared = vocab is None or vocab.embedding_shared is not False
    return shared and "embed_tokens.weight" not in state.draft.tensors


def target_rotation(state: BuildState, advice: RotationAdvice) -> None:
    """A rotation-quantized (ModelSlim QuaRot) target: DF516 where this version leaves
    the draft in the unrotated basis, DF519 where draftfit could not tell. Quiet for an
    unrotated target, where the engine compensates, or when the draft's speculators
    config names this target as its verifier (it was trained on the rotated model)."""
    t = state.target
    if t is None:
        return
    check = t.rotation
    if check.unchecked is not None:
        state.event(
            rule_ids.TARGET_ROTATION_UNCHECKED,
            f"{check.unchecked}, so draftfit cannot tell whether the target was "
            "rotation-quantized (ModelSlim QuaRot), which would leave an unrotated "
            "draft's proposals almost all rejected",
            in_target_file(check.unchecked_file),
            (),
            fix=f"check with the target's `{check.unchecked_file}` readable as a regular "
            "file inside its folder (download it)",
        )
        return
    rotation = check.rotation
    if rotation is None or draft_names_target_as_verifier(state, t):
        return
    where = in_target_file(rotation.file, rotation.pointer)
    fact = state.profile.fact("draft_rotation_compensated")
    if not fact.known:
        state.event(
            rule_ids.TARGET_ROTATION_UNCHECKED,
            f"{rotation.shown_by}: the target was rotation-quantized (ModelSlim QuaRot); "
            f"draftfit has no record of whether {state.profile.title} serves the draft in the "
            "rotated basis",
            where,
            (),
            fix="check that the serving stack multiplies the draft's `fc` by the "
            "rotation, or use a draft trained on the rotated target",
        )
        return
    told = advice(state, str(fact.value), rotation)
    if told is None:
        return
    why, fix = told
    borrowed = (
        " and gives it the target's rotated embedding"
        if "embed_tokens.weight" not in state.draft.tensors
        else ""
    )
    verifier = state.draft.get("verifier.name_or_path")
    trained = (
        f" (its speculators config names `{verifier}` as the verifier it was trained with)"
        if isinstance(verifier, str) and verifier.strip()
        else ""
    )
    state.event(
        rule_ids.TARGET_ROTATION_UNCOMPENSATED,
        f"{rotation.shown_by}: the target was rotation-quantized (ModelSlim QuaRot), so "
        f"its hidden states are in a rotated basis; {why} loads the draft's `fc` as "
        f"stored{borrowed}: the draft reads states it was not trained on{trained} and "
        "almost no proposal is accepted (no error)",
        where,
        ("draft_rotation_compensated",),
        fix=fix,
    )


def draft_names_target_as_verifier(state: BuildState, t: Target) -> bool:
    """Whether the draft's `speculators_config.verifier.name_or_path` names this rotated
    target: the same last path component (ignoring case), and one that says QuaRot. The
    rotation is a seeded random matrix that can differ between exports, so only the very
    checkpoint counts; a folder that merely shares the base model's name does not."""
    verifier = state.draft.get("verifier.name_or_path")
    if not isinstance(verifier, str) or not verifier.strip():
        return False
    name = _model_name(verifier)
    return name == _model_name(t.origin) and "quarot" in name


def _model_name(reference: str) -> str:
    """The last path component of a model reference (`hf://org/name@rev` -> `name`),
    lower-cased."""
    text = reference.removeprefix("hf://").split("@", 1)[0].rstrip("/\\")
    return text.replace("\\", "/").rsplit("/", 1)[-1].lower()
