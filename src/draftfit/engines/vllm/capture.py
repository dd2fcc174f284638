"""vLLM's aux-layer capture: which model runner serves the draft (they read aux ids from
different keys), the ids it reads, the default it falls back to, and the ids a target's
backbone can capture."""

from __future__ import annotations

from draftfit.draft.aux_counting import TOP_AUX, default_capture_ids
from draftfit.draft.description import EAGLE3
from draftfit.engines.procedure.capture import uses_aux
from draftfit.engines.procedure.state import BuildState, get_path
from draftfit.engines.procedure.target import target_is_moe
from draftfit.engines.view import AuxCapture

_RUNNER_NAMES = {"mrv1": "V1 model runner", "mrv2": "V2 model runner"}
# The releases that pick the model runner from VLLM_USE_V2_MODEL_RUNNER: an opt-in from 0.14
# (vllm/envs.py:236,1586-1588@v0.18.0), an override of the per-target default in 0.22-0.33
# (vllm/config/vllm.py:494-496@v0.22.0); 0.34.0 removed the V1 runner.
RUNNER_ENV_RELEASES = ("0.14.0", "0.34.0")


def _runner_from_env(state: BuildState) -> tuple[str, str] | None:
    """The runner `VLLM_USE_V2_MODEL_RUNNER` in the launch picks, in the releases that
    read it (RUNNER_ENV_RELEASES) and whose V2 runner draftfit has data for; else None."""
    serve = state.serve
    wanted = serve.use_v2_model_runner if serve is not None else None
    if wanted is None or not state.profile.fact("aux_ids_read_from_mrv2").known:
        return None
    from packaging.version import Version  # only where the launch sets the variable

    first, until = RUNNER_ENV_RELEASES
    if not Version(first) <= Version(state.profile.version) < Version(until):
        return None
    runner = "mrv2" if wanted else "mrv1"
    return runner, (
        f"VLLM_USE_V2_MODEL_RUNNER={int(wanted)} makes {state.profile.title} use its "
        f"{_RUNNER_NAMES[runner]}"
    )


def runner(state: BuildState) -> tuple[str | None, str]:
    """Which model runner serves this target: "mrv1", "mrv2", or None when unknown.

    vLLM has two runners that read aux ids from different keys; which one runs depends
    on the version and, in 0.22-0.28, on the target's architecture (`runner_default`);
    a launch with pipeline stages runs EAGLE-3 on the V1 runner where the newer one
    declines it (`aux_states_over_pp` 'dropped').
    """
    title = state.profile.title
    rule = state.value("runner_default")
    serve = state.serve
    staged = serve is not None and (serve.pipeline_parallel_size or 1) > 1
    if staged and state.method == EAGLE3 and state.value("aux_states_over_pp") == "dropped":
        # the newer runner declines EAGLE-3 with pipeline stages (`aux_states_over_pp`)
        return "mrv1", f"{title} serves EAGLE-3 with pipeline stages on its V1 model runner"
    chosen = _runner_from_env(state)
    if chosen is not None:
        return chosen
    if rule in ("mrv1", "mrv2"):
        return rule, f"{title} always uses its {_RUNNER_NAMES[rule]}"
    t = state.target
    if not isinstance(rule, dict) or t is None:
        return None, "the model runner depends on the target"
    arch = t.architecture or ""
    moe, quantized = (
        target_is_moe(t),
        "quantization_config" in t.text_config or "quantization_config" in t.config,
    )
    v2 = arch in rule.get("archs", [])
    if rule.get("dense_only") and moe:
        v2 = False
    if rule.get("unquantized_only") and quantized:
        v2 = False
    if rule.get("or_dense") and not moe:
        v2 = True
    chosen_runner = "mrv2" if v2 else "mrv1"
    return (
        chosen_runner,
        f"{title} serves a `{arch}` target with its {_RUNNER_NAMES[chosen_runner]}",
    )


def aux_capture(state: BuildState) -> None:
    """Step: fill `view.aux`: the layers vLLM captures (the ids the runner reads, else the
    default), deduplicated where it does, and the ids the target can capture."""
    name, why = runner(state)
    p = state.profile
    if name is None:
        # Without knowing the runner, use the keys both runners read.
        k1 = state.value("aux_ids_read_from_mrv1") or []
        k2 = state.value("aux_ids_read_from_mrv2") or []
        keys = [k for k in k1 if k in k2] if p.fact("aux_ids_read_from_mrv2").known else k1
    else:
        keys = state.value(f"aux_ids_read_from_{name}") or []
    state.view.resolution.runner = name
    state.view.resolution.runner_reason = why
    read_from = None
    ids = None
    for key in keys:
        value = get_path(state.visible, key)
        if isinstance(value, list) and value and all(isinstance(i, int) for i in value):
            ids = tuple(value)
            read_from = "/" + key.replace(".", "/")
            break
    L = state.target.num_layers if state.target else None
    if ids is None and L is not None:
        ids = default_capture_ids(L)
    dedupes = bool(state.value("aux_ids_dedupe"))
    if ids is not None and dedupes:
        ids = tuple(sorted(set(ids)))
    rng = state.value("aux_ids_valid_range")
    valid = None
    range_sources: tuple[str, ...] = ()
    range_note = ""
    if L is not None and isinstance(rng, list):
        valid = (rng[0], L + rng[1])
        valid, range_sources, range_note = _backbone_range(state, valid, L, ids or ())
    key_fact = f"aux_ids_read_from_{name or 'mrv1'}"
    capture = state.view.capture
    state.view.aux = AuxCapture(
        used=ids,
        read_from=read_from,
        keys_read=tuple("/" + k.replace(".", "/") for k in keys),
        expected_count=capture.aux_states if uses_aux(state) else None,
        count_from=capture.count_from,
        valid_range=valid,
        citations=range_sources + state.citations(key_fact, "runner_default"),
        range_note=range_note,
        dedupes=dedupes,
        runner_note=why,
        read_convention="capture-before",
        write_pointer=_write_pointer(keys),
        encode=lambda ids: tuple(ids),
    )


def _backbone_range(
    state: BuildState, valid: tuple[int, int], L: int, ids: tuple[int, ...]
) -> tuple[tuple[int, int], tuple[str, ...], str]:
    """Narrow the capturable ids for targets whose backbone captures less than the Llama
    one: no id L before the final-layer capture (deepseek_v2 before 0.25.0), no id 0
    where the residual is still None before layer 0. Returns the range, and for the
    used `ids` it excludes the citations behind the narrowing and a note saying why."""
    arch = state.target.architecture if state.target else None
    if arch is None:
        return valid, (), ""
    p = state.profile
    low, high = valid
    citations: tuple[str, ...] = ()
    notes: list[str] = []
    if arch in (state.value("aux_first_layer_not_captured") or []) and low < 1:
        low = 1
    if low == 1 and 0 in ids and valid[0] < 1:
        citations += p.item_sources("aux_first_layer_not_captured", arch)
        notes.append(
            f"`{arch}` adds the residual to the state before each layer, and before "
            "layer 0 there is none, so id 0 fails"
        )
    if arch in (state.value("aux_final_layer_not_captured") or []) and high >= L:
        high = L - 1
    if high == L - 1 and L in ids and valid[1] >= L:
        citations += p.item_sources("aux_final_layer_not_captured", arch)
        fixed = _first_release_without(state, "aux_final_layer_not_captured", arch)
        notes.append(
            f"`{arch}` captures only the input of each layer in {p.title}, not the "
            f"output of the last one (id {L})"
            + (f"; vLLM {fixed} and later capture it" if fixed else "")
        )
    return (low, high), citations, "; ".join(notes)


def _first_release_without(state: BuildState, key: str, value: object) -> str | None:
    """The release where set item `value` of fact `key` stops applying (its `until`)."""
    fact = state.profile.data.facts.get(key)
    if fact is None:
        return None
    untils = [e.until for e in fact.entries if e.value == value and e.until is not None]
    return str(max(untils)) if untils else None


def _write_pointer(keys: list[str]) -> str | None:
    """Where to write aux ids so this version reads them: the top-level key when it is read."""
    if "eagle_aux_hidden_state_layer_ids" in keys:
        return TOP_AUX
    return "/" + keys[0].replace(".", "/") if keys else None
