"""TensorRT-LLM behind the engine interface: its procedure and its serve recipe.

The recipe is `trtllm-serve TARGET --backend pytorch --extra_llm_api_options spec.yaml`
with a `speculative_config` whose `eagle3_layers_to_capture` names the trained layers in
TensorRT-LLM's output-of counting (it never reads them from the checkpoint). TensorRT-LLM
reads the SGLang layout (a plain config and `midlayer.*` names), so a recipe's convert step
writes that convention, planned without a TensorRT-LLM version. A Hub draft (and a Hub target
at a revision) is downloaded first (`hf download`), so TensorRT-LLM is given folders;
`--trust_remote_code` where a config names code of its own for `AutoConfig`
(whether TensorRT-LLM reads such a config without it was not read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.engines.interface import Engine, Recipe, Served, ServeRequest
from draftfit.engines.serve import (
    command_word,
    model_source,
    speculative_tokens,
    target_source,
    verifier_note,
    yaml_text,
)
from draftfit.rule_ids import (
    AUX_COUNT_MISMATCH,
    AUX_IDS_NOT_READ_DEFAULT_MATCHES,
    AUX_LAYERS_DIFFER_FROM_TRAINED,
    AUX_RUNTIME_COUNT_MISMATCH,
)

if TYPE_CHECKING:
    from typing import Any

    from draftfit.draft.description import DraftDescription
    from draftfit.draft.target import Target
    from draftfit.engines.launch_part import EngineLaunch
    from draftfit.engines.view import BuildInputs, EngineView

# Findings that passing `eagle3_layers_to_capture` to TensorRT-LLM fixes.
SETTING_FIXES = frozenset(
    rule.code
    for rule in (
        AUX_LAYERS_DIFFER_FROM_TRAINED,
        AUX_IDS_NOT_READ_DEFAULT_MATCHES,
        AUX_COUNT_MISMATCH,
        AUX_RUNTIME_COUNT_MISMATCH,
    )
)


def layers_to_capture(draft: DraftDescription, target: Target | None) -> list[int] | None:
    """The trained layers in TensorRT-LLM's `eagle3_layers_to_capture` (output-of) counting."""
    trained = draft.trained_capture_before(target.num_layers if target else None)
    if trained is None:
        return None
    return sorted({i - 1 for i in trained})


class TrtllmEngine(Engine):
    """TensorRT-LLM's PyTorch backend (data: `engines/trtllm/data.toml`, procedure:
    :mod:`draftfit.engines.trtllm.procedure`). Its draft class is chosen by rule, not by a
    registry of aliases, so two different names are two classes."""

    name = "trtllm"
    distributions = ("tensorrt_llm",)
    product = "TensorRT-LLM"
    convention = "sglang"
    edits_launch = False  # the launch's settings live in the options YAML the recipe writes

    def launch(self) -> EngineLaunch:
        from draftfit.engines.trtllm.launch import LAUNCH

        return LAUNCH

    def build_view(self, inputs: BuildInputs) -> EngineView:
        from draftfit.engines.trtllm.procedure import build_view

        return build_view(inputs)

    def serve(self, request: ServeRequest) -> Served | None:
        from draftfit.draft.description import EAGLE

        profile, draft, target = request.profile, request.draft, request.target
        if draft.method == EAGLE:
            return None
        if not isinstance(profile.value("draft_path_key"), str):
            return None  # which key names the draft is not known here: no command to give
        tokens, why = speculative_tokens(draft)
        notes = list(request.notes)
        steps: list[str] = []
        draft_source = model_source(request.draft_path)
        if draft_source.hub:
            steps.append(draft_source.download())
            notes.append("hf download first: the recipe gives TensorRT-LLM the draft as a folder")
            draft_source = draft_source.local
        source = target_source(target, request.draft)
        notes.extend(verifier_note(target, source))
        if source is not None and source.revision:
            steps.append(source.download())
            notes.append(
                "hf download first: the recipe gives TensorRT-LLM a target at a revision as a "
                "folder"
            )
            source = source.local
        decoding = "Eagle3" if "Eagle3" in (profile.value("decoding_types") or []) else "Eagle"
        spec_config: dict[str, Any] = {
            "decoding_type": decoding,
            "max_draft_len": tokens,
            profile.value("draft_path_key"): draft_source.name,
        }
        if profile.value("one_model_default") == "one-model-default":
            spec_config["eagle3_one_model"] = True
        fixed: frozenset[str] = frozenset()
        user_key = profile.value("aux_ids_user_key")
        layers = layers_to_capture(draft, target)
        if user_key and layers is not None:
            spec_config[user_key] = layers
            fixed = SETTING_FIXES
            notes.append(
                f"{user_key} {layers}: the trained layers in TensorRT-LLM's output-of counting; "
                "TensorRT-LLM never reads them from the checkpoint"
            )
        elif user_key:
            notes.append(
                f"pass --target to compute {user_key}: TensorRT-LLM never reads aux ids from the "
                "checkpoint and otherwise captures its default layers"
            )
        else:
            notes.append(
                f"{profile.title} always captures its default layers (1, L//2-1, L-4); a draft "
                "trained on other layers needs TensorRT-LLM >= 1.1"
            )
        notes.append(f"max_draft_len {tokens}: {why}")
        for note in profile.fact("draft_path_key").notes:
            notes.append(f"`{profile.value('draft_path_key')}`: {note}")
        config = {"speculative_config": spec_config}
        serve = [f"trtllm-serve {command_word(source)}", "--backend pytorch"]
        if request.trust_remote_code:
            serve.append("--trust_remote_code")
        remote_note = request.remote_code_note("--trust_remote_code")
        if remote_note is not None:
            notes.append(remote_note)
        serve.append("--extra_llm_api_options spec.yaml")
        command = "cat > spec.yaml <<'EOF'\n" + yaml_text(config) + "EOF\n" + " ".join(serve)
        recipe = Recipe(self.name, profile.version, command, steps, notes, config=config)
        return Served(recipe, fixed)


TRTLLM = TrtllmEngine()
