"""What a TensorRT-LLM release does with the launch's serving settings (DF550-DF559).

Run by TensorRT-LLM's launch step when settings were given for TensorRT-LLM; the checks
every engine shares are in :mod:`draftfit.engines.launch_checks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.engines.launch_checks import (
    Spelling,
    launch_flags,
    located,
    quantization_names,
    unreadable_values,
    value_after_switch,
)
from draftfit.engines.launch_context import pipeline_stages
from draftfit.engines.launch_paths import draft_path_is_folder
from draftfit.engines.trtllm.launch import SPEC_KEYS
from draftfit.engines.view import Event
from draftfit.escape import clip

if TYPE_CHECKING:
    from draftfit.engines.procedure.state import BuildState
    from draftfit.engines.releases import Release
    from draftfit.serve.settings import ServeSettings

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.PIPELINE_PARALLEL_AUX_STATES,
    rule_ids.MAX_DRAFT_LEN_MISSING,
    rule_ids.DRAFT_PATH_KEY_UNREAD,
    rule_ids.DRAFT_PATH_MISSING,
    rule_ids.DECODING_TYPE_UNKNOWN,
    rule_ids.SERVE_SETTING_INVALID,
)
EMITS_STAGE = "engine launch checks: TensorRT-LLM's"

SPELLING = Spelling(prog="trtllm-serve")


def check_settings(state: BuildState, s: ServeSettings) -> None:
    """Emit the events for `s` at the state's TensorRT-LLM version."""
    launch_flags(state, s, SPELLING)
    unreadable_values(state, s, SPELLING)
    value_after_switch(state, s, SPELLING)
    quantization_names(state, s)
    draft_path_is_folder(state, s, SPELLING)
    _trtllm_pipeline_parallel(state, s)
    _trtllm_decoding_type(state, s)
    _trtllm_max_draft_len(state, s)
    _trtllm_draft_path(state, s)
    _trtllm_spec_config_keys(state, s)


def _trtllm_pipeline_parallel(state: BuildState, s: ServeSettings) -> None:
    """TensorRT-LLM refuses a separate draft model (two-model EAGLE-3) with its
    pipeline-parallel executor loop; one-model EAGLE-3 builds no drafter and is not judged."""
    pp = pipeline_stages(state, s)
    if pp is None or state.value("pp_with_two_model_eagle3") != "refused":
        return
    mode = state.value("one_model_default")
    by_launch = mode == "one-model-default" and s.one_model is False
    if mode != "two-model" and not by_launch:
        return
    gpus = pp * (s.tensor_parallel_size or 1)
    path = (
        "the launch sets `eagle3_one_model: false`"
        if by_launch
        else f"the only EAGLE-3 path of {state.title}"
    )
    state.refuse(
        rule_ids.PIPELINE_PARALLEL_AUX_STATES,
        f"pipeline_parallel_size {pp} with two-model EAGLE-3 ({path}): {state.title} runs the "
        "draft as a separate model, which its pipeline-parallel executor loop does not "
        "support, so start-up fails (`NotImplementedError: Drafting is not supported for "
        "selected executor loop. Please disable disagg/pipeline parallelism scheduler.`)",
        located(s, "/pipeline_parallel_size"),
        ("pp_with_two_model_eagle3", "one_model_default"),
        fix=f"serve with --pp_size 1 (spread the GPUs with --tp_size {gpus} instead)"
        + (
            "; or leave `eagle3_one_model` out: the one-model path builds no separate draft "
            "model, so this check does not refuse it (whether it carries the aux states "
            "across stages draftfit has not read)"
            if by_launch
            else ""
        ),
    )


def _trtllm_decoding_type(state: BuildState, s: ServeSettings) -> None:
    """TensorRT-LLM: a `decoding_type` that is not one of this version's EAGLE-3 types."""
    named = s.method
    known = [str(t) for t in state.value("decoding_types") or []]
    if named is None or not known or named in known:
        return
    use = "Eagle3" if "Eagle3" in known else known[0]
    listed = ", ".join(f"`{t}`" for t in known)
    # Where the data has the name at other releases, say from when (and how sure that is).
    elsewhere = [e for e in state.profile.data.facts["decoding_types"].entries if e.value == named]
    when = ""
    if elsewhere:
        entry = elsewhere[0]
        when = f" (draftfit's data has `{named}` from {entry.since}" + (
            f"; {entry.note})" if entry.note else ")"
        )
    if named.lower().startswith("eagle"):
        why = (
            f"{state.title} has no decoding type `{named}`; its EAGLE-3 decoding types are "
            f"{listed}{when}: the LLM API rejects the speculative config while it parses the "
            "arguments, so the server does not start"
        )
    else:
        why = (
            f"`{named}` is not a decoding type with which {state.title} runs an EAGLE-3 draft "
            f"({listed}): the launch is refused or runs another method, and the draft is not "
            "served as EAGLE-3"
        )
    state.view.refuse(
        Event(
            rule_ids.DECODING_TYPE_UNKNOWN,
            f"`decoding_type: {named}`: {why}",
            located(s, "/speculative_config/decoding_type"),
            tuple(e.source for e in elsewhere) + state.citations("decoding_types"),
            f"set `decoding_type: {use}`",
        )
    )


def _trtllm_max_draft_len(state: BuildState, s: ServeSettings) -> None:
    """TensorRT-LLM: an Eagle speculative config without `max_draft_len`."""
    if s.method is None or s.max_draft_len is not None or not state.value("max_draft_len_required"):
        return
    state.refuse(
        rule_ids.MAX_DRAFT_LEN_MISSING,
        f"the speculative config has no `max_draft_len`: {state.title} requires it for Eagle "
        "and refuses the config at start-up ('max_draft_len must be > 0 for Eagle')",
        located(s, "/speculative_config"),
        ("max_draft_len_required",),
        fix="add `max_draft_len: N` to speculative_config (the draft tokens per step, e.g. 3)",
    )


def _trtllm_draft_path(state: BuildState, s: ServeSettings) -> None:
    """TensorRT-LLM: the draft named with a key this version does not read, or not at all."""
    want = state.value("draft_path_key")
    key = s.draft_path_key
    if s.method is None:
        return
    if not isinstance(want, str):
        if key is not None:
            state.view.unjudged.append(
                f"the launch's speculative_config key {clip(key)} was not checked: which key "
                f"{state.title} reads the draft's path from is not known"
            )
            return
        # the releases on both sides refuse a config that names no draft, whatever its key
        keys = _keys_around(state)
        if not keys:
            return
        named = " or ".join(f"`{k}`" for k in keys)
        state.refuse(
            rule_ids.DRAFT_PATH_MISSING,
            f"the speculative config names no draft: {state.title} reads its path from {named} "
            "(the releases before and after it differ; which one it reads is not known) and, "
            "without it, raises ValueError at start-up ('Draft model must be provided for "
            "EAGLE' / 'Path to EAGLE3 weights must be specified.')",
            located(s, "/speculative_config"),
            ("draft_path_key",),
            fix=f"add the draft's folder to speculative_config under {named}",
        )
        return
    if key is None:
        state.refuse(
            rule_ids.DRAFT_PATH_MISSING,
            f"the speculative config names no draft: {state.title} reads its path from "
            f"`{want}` and, without it, raises ValueError at start-up ('Draft model must be "
            "provided for EAGLE' / 'Path to EAGLE3 weights must be specified.')",
            located(s, "/speculative_config"),
            ("draft_path_key",),
            fix=f"add `{want}: DRAFT` to speculative_config (the draft's folder)",
        )
        return
    aliases = [str(a) for a in state.value("draft_path_aliases") or []]
    if key == want:
        return
    if key in aliases:
        _alias_not_settled(state, key, want)
        return
    refused = state.value("spec_config_unknown_keys") == "refused"
    what = (
        "its speculative config declares no such key and refuses it while the arguments are "
        "parsed ('Extra inputs are not permitted'), so the server does not start"
        if refused
        else "the key is not read, so the draft path is missing and start-up fails "
        "(ValueError: 'Draft model must be provided for EAGLE' / 'Path to EAGLE3 weights "
        "must be specified.')"
    )
    state.refuse(
        rule_ids.DRAFT_PATH_KEY_UNREAD,
        f"the launch names the draft with `{key}`, but {state.title} reads it from `{want}`: "
        + what,
        located(s, f"/speculative_config/{key}"),
        ("draft_path_key", "draft_path_aliases")
        + (("spec_config_unknown_keys",) if refused else ()),
        fix=f"rename `{key}` to `{want}` (`{want}: {s.draft_model}`)",
    )


def _keys_around(state: BuildState) -> list[str]:
    """The draft path's keys of the nearest entries before and after this release, where
    the data has none at it."""
    entries = state.profile.data.facts["draft_path_key"].entries
    here = state.profile.parsed
    before = [e for e in entries if e.until is not None and e.until <= here]
    after = [e for e in entries if e.since is not None and e.since > here]
    if not before or not after:
        return []
    last = max(before, key=lambda e: e.until or here)
    first = min(after, key=lambda e: e.since or here)
    return list(dict.fromkeys((str(last.value), str(first.value))))


def _alias_not_settled(state: BuildState, key: str, want: str) -> None:
    """An alias of the draft path's key that no code read at the release nor its
    documentation shows (a signature page does not render validation aliases): whether the
    release still takes it is not known, so the verdict says the key was not checked."""
    entries = [
        e
        for e in state.profile.data.facts["draft_path_aliases"].entries
        if e.value == key and e.applies(state.profile.parsed)
    ]
    if not entries or all(e.confidence in ("read", "documented") for e in entries):
        return
    state.view.unjudged.append(
        f"the launch's speculative_config key {clip(key)} was not checked: that "
        f"{state.profile.data.title} takes it as an alias of `{want}` is seen only in undated "
        "main-branch code, not in this release's code or documentation"
    )


# The decoding config a `decoding_type` selects, and the fact that lists its keys.
DECODING_CONFIGS = {
    "Eagle3": ("Eagle3DecodingConfig", "eagle3_config_keys"),
    "Eagle": ("EagleDecodingConfig", "eagle_config_keys"),
}
# What to write instead of a key that a release dropped.
_DROPPED_KEY_FIXES = {
    "eagle3_one_model": "runs EAGLE-3 as one model only",
    "num_eagle_layers": "takes the number of draft layers from `max_draft_len`",
}


def _trtllm_spec_config_keys(state: BuildState, s: ServeSettings) -> None:
    """TensorRT-LLM: a `speculative_config` key that the decoding config `decoding_type`
    selects does not declare, judged as the release judges undeclared keys
    (`spec_config_unknown_keys`). Judged where the release's documentation gives that
    config's whole signature (`decoding_config_pages`), and, at a release without a page,
    for a key that the documented releases on both sides of it lack; the draft path's key is
    judged by :func:`_trtllm_draft_path`."""
    chosen = DECODING_CONFIGS.get(s.method or "")
    if chosen is None or not s.spec_keys_written:
        return
    name, keys_fact = chosen
    if state.value("spec_config_unknown_keys") != "refused":
        return
    pages = _documented_releases(state, name)
    if not pages:
        return  # no release's signature of that config was read
    data, here = state.profile.data, state.profile.parsed
    documented = state.profile.fact("decoding_config_pages")  # counted among the facts consulted
    if documented.known and name in (documented.value or []):
        sides = [here]
        where = "its signature in the release's documentation lists none"
    else:
        before = [r for r in pages if r < here]
        after = [r for r in pages if r > here]
        if not before or not after:
            _not_judged(state, s, name, [str(k) for k in s.spec_keys_written])
            return  # not bracketed by two documented releases: keys not judged
        sides = [max(before), min(after)]
        where = (
            f"this release has no documentation page, and the signatures of {sides[0]} and "
            f"{sides[1]}, the documented releases before and after it, both lack it"
        )
    facts = data.facts[keys_fact]
    declared_on = [
        {str(e.value["key"]) for e in facts.entries if e.applies(side)} for side in sides
    ]
    declared = sorted(set().union(*declared_on))
    aliases = [str(a) for a in state.value("draft_path_aliases") or []]
    path_keys = [k for k, target in SPEC_KEYS.items() if target.field == "draft_model"]
    # a key declared on one side only: whether this release takes it is not known
    _not_judged(
        state,
        s,
        name,
        [k for k in s.spec_keys_written if any(k in d for d in declared_on)]
        if len(sides) == 2
        else [],
        unless=set.intersection(*declared_on) if len(sides) == 2 else set(),
    )
    for key in dict.fromkeys(s.spec_keys_written):
        if key in declared or key in aliases or key in path_keys:
            continue
        dropped = _DROPPED_KEY_FIXES.get(key)
        if dropped:
            fix = f"leave `{clip(key)}` out: {state.title} {dropped}"
        else:
            import difflib  # only when a key is unknown

            close = difflib.get_close_matches(key, declared, n=1, cutoff=0.6)
            fix = f"did you mean `{close[0]}`?" if close else f"leave `{clip(key)}` out"
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"`speculative_config.{clip(key)}`: {state.title}'s {name} (`decoding_type: "
            f"{s.method}`) declares no such key ({where}) and refuses the speculative config "
            "while the arguments are parsed ('Extra inputs are not permitted'), so the "
            "server does not start",
            located(s, "/speculative_config/" + clip(key)),
            ("spec_config_unknown_keys", keys_fact, "decoding_config_pages"),
            fix=fix,
        )


def _not_judged(
    state: BuildState, s: ServeSettings, name: str, keys: list[str], unless: set[str] | None = None
) -> None:
    """Record that the launch's `keys` were not judged at this release, where its
    documentation gives no signature of `name` and the documented releases around it do not
    settle them: all but those in `unless` (declared on every side) and those draftfit reads
    itself (SPEC_KEYS: the checks of the draft path, the decoding type, the one-model switch
    and the aux layers judge them at every release)."""
    left = [k for k in dict.fromkeys(keys) if k not in (unless or set()) and k not in SPEC_KEYS]
    if not left:
        return
    named = (
        f"key {clip(left[0])} was"
        if len(left) == 1
        else "keys " + ", ".join(clip(k) for k in left) + " were"
    )
    state.view.unjudged.append(
        f"the launch's speculative_config {named} not checked: {state.title}'s {name} "
        "signature was not read"
    )


def _documented_releases(state: BuildState, name: str) -> list[Release]:
    """The releases whose documentation gives decoding config `name`'s whole signature
    (each `decoding_config_pages` entry that lists it, by its first release)."""
    entries = state.profile.data.facts["decoding_config_pages"].entries
    return sorted(e.since for e in entries if e.since is not None and name in (e.value or []))
