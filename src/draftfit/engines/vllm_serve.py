"""vLLM behind the engine interface: its view builder, its serve recipe and its convention.

The recipe is `vllm serve TARGET --speculative-config '{"method", "model",
"num_speculative_tokens"}'`, with the method always explicit (vLLM otherwise guesses it from
the draft path). `draftfit convert --to vllm` (and `--to speculators`) is planned with
vLLM's data: the draft class it writes is one the planned version registers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from draftfit.engines.interface import ConventionChoice, Engine, Recipe, Served, ServeRequest
from draftfit.engines.profile import Profile
from draftfit.engines.serve import first_release_where, shell_quote, speculative_tokens
from draftfit.rule_ids import AUX_LAYERS_DIFFER_FROM_TRAINED

if TYPE_CHECKING:
    from draftfit.engines.view import BuildInputs, EngineView


def reads_top_level_ids(profile: Profile) -> bool:
    """Whether some model runner of this version reads the top-level aux ids."""
    keys: list[str] = []
    for runner in ("mrv1", "mrv2"):
        fact = profile.fact(f"aux_ids_read_from_{runner}")
        if fact.known:
            keys += fact.value
    return "eagle_aux_hidden_state_layer_ids" in keys


class VllmEngine(Engine):
    """vLLM (data: `data/vllm.toml`, procedure: :mod:`draftfit.engines.vllm`)."""

    name = "vllm"
    convention = "vllm"
    plans = ("vllm", "speculators")

    def class_families(self) -> Mapping[str, str]:
        """Architecture names vLLM's registry maps to one draft class."""
        from draftfit.engines.vllm import CLASS_FAMILY

        return CLASS_FAMILY

    def build_view(self, inputs: BuildInputs) -> EngineView:
        from draftfit.engines.vllm import Builder

        return Builder.build(inputs)

    def serve(self, request: ServeRequest) -> Served:
        profile, spec = request.profile, request.spec
        method = spec.method or "eagle3"
        tokens, why = speculative_tokens(spec)
        config = {"method": method, "model": request.draft, "num_speculative_tokens": tokens}
        target_name = request.target.source if request.target else "<target>"
        command = (
            f"vllm serve {target_name} \\\n  --speculative-config {shell_quote(json.dumps(config))}"
        )
        notes = list(request.notes)
        if (
            not reads_top_level_ids(profile)
            and AUX_LAYERS_DIFFER_FROM_TRAINED.code in request.codes
        ):
            fixed_in = first_release_where(profile, reads_top_level_ids) or "a newer release"
            notes.append(f"{profile.title} never reads aux ids from the config: use >= {fixed_in}")
        notes.append(f"num_speculative_tokens {tokens}: {why}")
        notes.append(f'pass "method": "{method}" explicitly; vLLM otherwise guesses from the path')
        return Served(Recipe(self.name, profile.version, command, notes=notes, config=config))

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
