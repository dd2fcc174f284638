"""vLLM's method steps: the method it guesses from the draft path when the launch names
none (data: `method_from_path`, vllm/config/__init__.py:2143-2146@v0.10.2), whether this
release drafts with it, and a method that does not fit the checkpoint."""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.description import EAGLE3
from draftfit.draft.dialects import non_eagle_kind
from draftfit.engines.procedure.state import CONFIG, BuildState
from draftfit.location import Location

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.METHOD_GUESSED_AS_DRAFT_MODEL,
    rule_ids.METHOD_MISMATCH,
    rule_ids.METHOD_NOT_DETECTED_FROM_PATH,
    rule_ids.METHOD_UNSUPPORTED,
)
EMITS_STAGE = "engine procedure: vLLM's method"


def settle_method(state: BuildState) -> None:
    """Step: what vLLM picks when `speculative_config` has no `method`."""
    if state.inputs.mtp is not None:
        return  # the target's own MTP layers: no draft path to guess a method from
    rules = state.value("method_from_path") or []
    launch = state.serve
    # vLLM looks at the draft path the launch gives (as written), else the checked one
    source = launch.draft_model if launch is not None and launch.draft_model else None
    source = source or state.checkpoint.origin
    name = source.lower()
    detected = None
    for substring, method in rules:
        if substring in name:
            detected = method
            break
    state.view.resolution.method_from_path = detected or "draft_model"
    own = state.draft.method
    if state.method == "auto":
        state.method = detected
        state.view.method = detected
        if detected is None:
            plain = state.value("draft_model_method")
            message = (
                f"no `method` given and the draft path `{source}` contains none of "
                + ", ".join(f"`{s}`" for s, _ in rules)
                + ": vLLM runs it as a plain `draft_model`, "
            )
            fix = 'pass "method": "eagle3" (or "eagle") in --speculative-config'
            if plain == "runs":
                state.event(
                    rule_ids.METHOD_GUESSED_AS_DRAFT_MODEL,
                    message + "without the target's hidden states: it loads and drafts garbage",
                    Location(CONFIG),
                    ("method_from_path", "draft_model_method"),
                    fix=fix,
                )
            else:
                state.refuse(
                    rule_ids.METHOD_MISMATCH,
                    message + "which this version refuses",
                    Location(CONFIG),
                    ("method_from_path", "draft_model_method"),
                    fix=fix,
                )
        elif own and detected != own:
            state.refuse(
                rule_ids.METHOD_MISMATCH,
                f"no `method` given: vLLM picks `{detected}` from the draft path "
                f"`{source}`, but the checkpoint is an {own} draft",
                Location(CONFIG),
                ("method_from_path",),
                fix=f'pass "method": "{own}" in --speculative-config',
            )
        return
    if (
        not state.method_explicit
        and state.method is not None
        and detected != state.method
        and non_eagle_kind(state.config) is None  # not-an-eagle-draft says what to pass
    ):
        state.event(
            rule_ids.METHOD_NOT_DETECTED_FROM_PATH,
            f"if `method` is left out of --speculative-config, vLLM picks "
            f"`{detected or 'draft_model'}` from the draft path `{state.checkpoint.origin}`, "
            f"not `{state.method}`",
            Location(CONFIG),
            ("method_from_path",),
            fix=f'always pass "method": "{state.method}" in --speculative-config',
        )


def method_supported(state: BuildState) -> bool:
    """Step: refuse (and stop) where this release has no drafting for the method."""
    key = "eagle3_supported" if state.method == EAGLE3 else "eagle_supported"
    fact = state.profile.fact(key)
    if fact.value:
        return True
    state.refuse(
        rule_ids.METHOD_UNSUPPORTED,
        f"{state.profile.title} has no {'EAGLE-3' if state.method == EAGLE3 else 'EAGLE-1'} "
        "drafting for checkpoints of this kind",
        Location(CONFIG),
        (key,),
        fix="use a newer vLLM version (see `draftfit engines vllm`)",
    )
    return False


def method_matches(state: BuildState) -> None:
    """Step: a method that does not fit the checkpoint is refused, and vLLM goes on."""
    own = state.draft.method
    if own is None or own == state.method:
        return
    state.refuse(
        rule_ids.METHOD_MISMATCH,
        f"the checkpoint is an {own} draft ({'; '.join(state.draft.method_evidence)}), "
        f"but it is served with method `{state.method}`: vLLM builds the wrong draft class",
        Location(CONFIG, "/architectures"),
        ("eagle3_draft_architectures" if state.method == EAGLE3 else "eagle_draft_architectures",),
        fix=f'serve it with "method": "{own}"',
    )
