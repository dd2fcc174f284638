"""The launch checks every engine shares about the target's context and the pipeline
(DF559): a launch context length longer than the target's own, as the release derives it
from the target's config, and the pipeline stages an EAGLE-3 target is split into. Where a
finding points is in :mod:`draftfit.engines.launch_checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.draft.description import EAGLE3
from draftfit.engines.launch_checks import located

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.procedure.state import BuildState
    from draftfit.serve.settings import ServeSettings

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.SERVE_SETTING_INVALID,)
EMITS_STAGE = "engine launch checks: the context and pipeline every engine shares"


def _length(value: object) -> float | None:
    """A length or factor as a config writes it (an int or a float, not a bool), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def target_length(config: Mapping[str, Any], rule: Mapping[str, Any]) -> tuple[int, str] | None:
    """The target's own context length as a release derives it from its config.json (`rule`:
    the release's `..._over_target` fact), with the key it came from; None where the config
    names none and the release then takes the launch's length as given."""
    lengths = ((_length(config.get(k)), str(k)) for k in rule.get("keys") or ())
    found = [(n, k) for n, k in lengths if n is not None]
    first = bool(rule.get("first"))
    length: float
    if first:
        length, key = found[0] if found else (rule.get("default", 2048), "default")
    elif found:
        length, key = min(found)
        overriding = _length(config.get("model_max_length"))
        if overriding:
            length, key = overriding, "model_max_length"
    else:
        return None
    scaling = config.get("rope_scaling") or config.get("rope_parameters")
    if isinstance(scaling, Mapping):
        rope_type = scaling.get("rope_type", scaling.get("type"))
        stated = _length(scaling.get("factor"))
        factor = 1 if stated is None else stated
        if first:
            if "original_max_position_embeddings" in scaling or rope_type == "llama3":
                factor = 1
        elif rope_type in (rule.get("unscaled_rope") or ()) or "gemma3" in str(
            config.get("model_type", "")
        ):
            factor = 1
        elif rope_type == "yarn" and rule.get("yarn_from_original"):
            original = _length(scaling.get("original_max_position_embeddings"))
            length = length if original is None else original
        length = length * factor
    return int(length), key


def context_over_target(state: BuildState, s: ServeSettings, key: str, flag: str) -> None:
    """A launch context length (`flag`) longer than the target's own: the release refuses
    it while it builds the target's model config, unless the launch sets the variable the
    release reads to allow it (fact `key`; nothing is judged where it was not read)."""
    asked = s.context_length
    if asked is None or asked < 0 or s.allow_longer_context or state.target is None:
        return  # an allowed longer context: positions past the target's are the launch's risk
    rule = state.value(key)
    if not isinstance(rule, Mapping):
        return
    derived = target_length(state.target.text_config, rule)
    if derived is None or asked <= derived[0]:
        return
    length, source = derived
    env = str(rule.get("env", ""))
    where = f"`{source}` in its config.json" if source != "default" else "its default"
    state.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"`{flag} {asked}` is longer than the target's own context length, {length} "
        f"({where}): {state.title} raises ValueError while it builds the target's model "
        f"config and does not start, unless {env}=1 is set",
        located(s, "/" + flag.lstrip("-")),
        (key,),
        fix=f"cap `{flag}` at {length}, or set {env}=1 only if the target is known to serve "
        f"longer contexts (past {length} positions it can give NaNs or out-of-bounds errors)",
    )


def pipeline_stages(state: BuildState, s: ServeSettings) -> int | None:
    """The pipeline-parallel size when it splits an EAGLE-3 target, else None."""
    pp = s.pipeline_parallel_size
    if pp is None or pp < 2 or state.method != EAGLE3:
        return None
    return pp
