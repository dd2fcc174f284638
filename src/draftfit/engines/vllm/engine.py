"""vLLM behind the engine interface: its procedure, its serve recipe and its convention.

The recipe is `vllm serve TARGET --speculative-config '{"method", "model",
"num_speculative_tokens"}'`, with the method always explicit (vLLM otherwise guesses it from
the draft path); a Hub target or draft is named by its repository id, its revision going to
`--revision` and the config's `revision` key; `--trust-remote-code` where the release
loads a config only with the code its `auto_map` names (:mod:`draftfit.engines.remote_code`).
Releases before `--speculative-config` take `--speculative-model`.
`draftfit convert --to vllm` (and `--to speculators`) is planned with vLLM's data: the draft
class it writes is one the planned version registers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit.engines.interface import (
    ConventionChoice,
    ConventionLayout,
    Engine,
    Recipe,
    Served,
    ServeRequest,
)
from draftfit.engines.profile import Profile
from draftfit.engines.serve import (
    CONTINUATION,
    command_word,
    first_release_where,
    model_source,
    shell_quote,
    shell_word,
    speculative_tokens,
    target_source,
    verifier_note,
)
from draftfit.rule_ids import AUX_LAYERS_DIFFER_FROM_TRAINED

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.launch_part import EngineLaunch
    from draftfit.engines.view import BuildInputs, EngineView


def reads_top_level_ids(profile: Profile) -> bool:
    """Whether some model runner of this version reads the top-level aux ids."""
    keys: list[str] = []
    for runner in ("mrv1", "mrv2"):
        fact = profile.fact(f"aux_ids_read_from_{runner}")
        if fact.known:
            keys += fact.value
    return "eagle_aux_hidden_state_layer_ids" in keys


# `convert --to vllm`: a flat config, `layers.N.*` names; a full-vocabulary draft's `d2t`
# dropped where the version rejects it.
VLLM_LAYOUT = ConventionLayout("vllm", drops_identity_d2t=True)
# `convert --to speculators`: what the speculators library writes (its config, the decoder
# fields in `transformer_layer_config`, `t2d` next to `d2t`), planned with vLLM's data.
SPECULATORS_LAYOUT = ConventionLayout("speculators", speculators_config=True, derives_t2d=True)


class VllmEngine(Engine):
    """vLLM (data: `engines/vllm/data.toml`, procedure: :mod:`draftfit.engines.vllm.procedure`)."""

    name = "vllm"
    distributions = ("vllm",)
    product = "vLLM"
    convention = "vllm"
    layouts = (VLLM_LAYOUT, SPECULATORS_LAYOUT)

    def class_families(self) -> Mapping[str, str]:
        """Architecture names vLLM's registry maps to one draft class."""
        from draftfit.engines.vllm.route import CLASS_FAMILY

        return CLASS_FAMILY

    def launch(self) -> EngineLaunch:
        from draftfit.engines.vllm.launch import LAUNCH

        return LAUNCH

    def build_view(self, inputs: BuildInputs) -> EngineView:
        from draftfit.engines.vllm.procedure import build_view

        return build_view(inputs)

    def serve(self, request: ServeRequest) -> Served:
        profile, draft = request.profile, request.draft
        method = draft.method or "eagle3"
        tokens, why = speculative_tokens(draft)
        notes = list(request.notes)
        steps: list[str] = []
        draft_source = model_source(request.draft_path)
        revision_key = profile.value("draft_revision_key")
        if draft_source.revision and not revision_key:
            steps.append(draft_source.download())
            notes.append(
                f"hf download first: {profile.title} has no revision setting for the draft"
            )
            draft_source = draft_source.local
        target = target_source(request.target, request.draft)
        notes.extend(verifier_note(request.target, target))
        lines = [f"vllm serve {command_word(target)}"]
        if target is not None and target.revision:
            lines.append(f"--revision {shell_word(target.revision)}")
        if request.trust_remote_code:
            lines.append("--trust-remote-code")
        remote_note = request.remote_code_note("--trust-remote-code")
        if remote_note is not None:
            notes.append(remote_note)
        config: dict[str, Any]
        if "--speculative-config" in (profile.value("serve_flags") or []):
            config = {
                "method": method,
                "model": draft_source.name,
                "num_speculative_tokens": tokens,
            }
            if draft_source.revision:
                config[revision_key] = draft_source.revision
            lines.append(f"--speculative-config {shell_quote(json.dumps(config))}")
        else:
            config = {"model": draft_source.name, "num_speculative_tokens": tokens}
            lines.append(f"--speculative-model {shell_word(draft_source.name)}")
            lines.append(f"--num-speculative-tokens {tokens}")
        if (
            not reads_top_level_ids(profile)
            and AUX_LAYERS_DIFFER_FROM_TRAINED.code in request.codes
        ):
            fixed_in = first_release_where(profile, reads_top_level_ids) or "a newer release"
            notes.append(f"{profile.title} never reads aux ids from the config: use >= {fixed_in}")
        notes.append(f"num_speculative_tokens {tokens}: {why}")
        if "method" in config:
            notes.append(
                f'pass "method": "{method}" explicitly; vLLM otherwise guesses from the path'
            )
        else:
            notes.append(
                f"{profile.title} has no --speculative-config (vLLM 0.8.2 adds it), so the "
                "method cannot be given: vLLM decides it from the draft"
            )
        recipe = Recipe(
            self.name, profile.version, CONTINUATION.join(lines), steps, notes, config=config
        )
        return Served(recipe)

    def convention_architecture(
        self, layer: Mapping[str, Any], profile: Profile | None
    ) -> ConventionChoice:
        """A class the planned version registers: `Eagle3Qwen3ForCausalLM` for Qwen3 decoder
        layers, else `LlamaForCausalLMEagle3` where registered, else `Eagle3LlamaForCausalLM`."""
        model_type = layer.get("model_type", "llama")
        registered = (
            (profile.value("eagle3_draft_architectures") or [])
            if profile
            else ["LlamaForCausalLMEagle3"]
        )
        if model_type == "qwen3":
            arch = "Eagle3Qwen3ForCausalLM"
        elif "LlamaForCausalLMEagle3" in registered:
            arch = "LlamaForCausalLMEagle3"
        else:
            arch = "Eagle3LlamaForCausalLM"
        if arch in registered:
            return ConventionChoice(arch)
        who = profile.title if profile else self.title
        return ConventionChoice(arch, (("/architectures", f"{who} does not register `{arch}`"),))

    def convention_limits(
        self,
        convention: str,
        config: Mapping[str, Any],
        layer: Mapping[str, Any],
        profile: Profile | None,
    ) -> tuple[tuple[str, str], ...]:
        """In the `vllm` convention planned for a version: a version whose `fc` takes
        exactly 3 aux states cannot serve a draft with another count."""
        if convention != self.convention or profile is None:
            return ()
        n = layer.get("num_aux_hidden_states", 3)
        rule = profile.value("aux_count_rule")
        if n != 3 and isinstance(rule, dict) and not rule.get("*"):
            return (
                (
                    "/num_aux_hidden_states",
                    f"{profile.title} builds `fc` for exactly 3 aux states; this draft uses {n}",
                ),
            )
        return ()


VLLM = VllmEngine()
