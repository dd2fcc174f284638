"""SGLang behind the engine interface: its procedure, its serve recipe and its convention.

The recipe is `python -m sglang.launch_server --model-path TARGET --speculative-algorithm
EAGLE3 --speculative-draft-model-path DRAFT ...`, plus `--disable-cuda-graph` where that
release's CUDA graphs would capture other aux layers than the draft's, and a context-length
setting when the draft's rotary cache is shorter than the target's, and
`--speculative-draft-window-size N` for a draft trained with a sliding window (SGLang reads
none from the config). A Hub target or draft is
named by its repository id, with `--revision` and `--speculative-draft-model-revision` (an
`hf download` step before releases without the latter); `--trust-remote-code` where the
release loads a config only with the code its `auto_map` names
(:mod:`draftfit.engines.remote_code`). `draftfit convert --to sglang` writes
`LlamaForCausalLMEagle3` (`Eagle3DeepseekV2ForCausalLM` for MLA drafts) and aux ids in the
counting the SGLang version applies to the target.
"""

from __future__ import annotations

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
    shell_word,
    speculative_tokens,
    target_source,
    verifier_note,
)
from draftfit.rule_ids import (
    AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS,
    AUX_RUNTIME_COUNT_MISMATCH,
    DRAFT_CONTEXT_REFUSED,
    DRAFT_CONTEXT_SHORTER_THAN_TARGET,
    DRAFT_SLIDING_WINDOW_IGNORED,
)

if TYPE_CHECKING:
    from typing import Any

    from draftfit.draft.target import Target
    from draftfit.engines.launch_part import EngineLaunch
    from draftfit.engines.view import BuildInputs, EngineView

# SGLang's EAGLE-3 draft classes for `convert --to sglang`.
LLAMA_DRAFT = "LlamaForCausalLMEagle3"
MLA_DRAFT = "Eagle3DeepseekV2ForCausalLM"  # SGLang's MLA draft class (0.5.12+)
DRAFT_REVISION = "--speculative-draft-model-revision"  # SGLang 0.5.2+ (data: serve_flags)
DRAFT_WINDOW_FLAG = "--speculative-draft-window-size"  # SGLang 0.5.12+ (data: serve_flags)
CONTEXT_CODES = frozenset({DRAFT_CONTEXT_SHORTER_THAN_TARGET.code, DRAFT_CONTEXT_REFUSED.code})


def _graphs_keep_ids(profile: Profile) -> bool:
    return not profile.value("aux_ids_cuda_graph_ignored")


# `convert --to sglang`: a single decoder layer's tensors as `midlayer.*`, `t2d` next to
# `d2t`.
SGLANG_LAYOUT = ConventionLayout("sglang", single_layer_prefix="midlayer.", derives_t2d=True)


class SGLangEngine(Engine):
    """SGLang (data: `engines/sglang/data.toml`, procedure:
    :mod:`draftfit.engines.sglang.procedure`).

    SGLang takes `architectures[0]` as the draft class with no rewrite, so two different
    names are always two classes (`class_families` stays empty)."""

    name = "sglang"
    distributions = ("sglang",)
    product = "SGLang"
    convention = "sglang"
    layouts = (SGLANG_LAYOUT,)

    def launch(self) -> EngineLaunch:
        from draftfit.engines.sglang.launch import LAUNCH

        return LAUNCH

    def build_view(self, inputs: BuildInputs) -> EngineView:
        from draftfit.engines.sglang.procedure import build_view

        return build_view(inputs)

    def serve(self, request: ServeRequest) -> Served:
        profile, draft, target, codes = (
            request.profile,
            request.draft,
            request.target,
            request.codes,
        )
        algorithm = "EAGLE" if draft.method == "eagle" else "EAGLE3"
        tokens, why = speculative_tokens(draft)
        known = set(profile.value("serve_flags") or [])
        notes = list(request.notes)
        steps: list[str] = []
        flags: dict[str, Any] = {}
        source = target_source(target, draft)
        notes.extend(verifier_note(target, source))
        if source is not None and source.revision:
            flags["--revision"] = source.revision
        if request.trust_remote_code:
            flags["--trust-remote-code"] = True
        remote_note = request.remote_code_note("--trust-remote-code")
        if remote_note is not None:
            notes.append(remote_note)
        draft_source = model_source(request.draft_path)
        own_revision = profile.value("draft_revision_source") == "own"
        if (
            draft_source.hub
            and not own_revision
            and (draft_source.revision or "--revision" in flags)
        ):
            # the draft would be read at the target's --revision
            steps.append(draft_source.download())
            notes.append(
                f"hf download first: {profile.title} reads a Hub draft at the target's "
                f"revision (it has no {DRAFT_REVISION})"
            )
            draft_source = draft_source.local
        flags |= {
            "--speculative-algorithm": algorithm,
            "--speculative-draft-model-path": draft_source.name,
        }
        if draft_source.revision:
            flags[DRAFT_REVISION] = draft_source.revision
        flags |= {
            "--speculative-num-steps": tokens,
            "--speculative-eagle-topk": 1,
            "--speculative-num-draft-tokens": tokens + 1,
        }
        fixed: set[str] = set()
        if AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS.code in codes:
            flags["--disable-cuda-graph"] = True
            sticky = target is not None and target.architecture in (
                profile.value("aux_capture_flags_sticky") or []
            )
            if sticky:
                # the extra states came from the defaults left flagged
                fixed.add(AUX_RUNTIME_COUNT_MISMATCH.code)
            if sticky and profile.value("aux_ids_autotune_reset") == "sticky-flags-only":
                flags["--disable-flashinfer-autotune"] = True
                notes.append(
                    "--disable-flashinfer-autotune: on FlashInfer MoE backends its warm-up flags "
                    "the default aux layers too, which this target never clears"
                )
            fixed.add(AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS.code)
            fixed_in = first_release_where(profile, _graphs_keep_ids) or "a newer release"
            notes.append(
                f"--disable-cuda-graph: {profile.title}'s CUDA graphs would capture the default "
                "aux layers instead of the draft's (slower, but drafts correctly); "
                f"{self.title} >= {fixed_in} needs no such flag"
            )
        from draftfit.engines.procedure.window import draft_window  # loads with a check

        window = draft_window(draft.config)
        architectures = draft.get("architectures")
        mla = isinstance(architectures, list) and MLA_DRAFT in architectures
        if (
            DRAFT_SLIDING_WINDOW_IGNORED.code in codes
            and window is not None
            and not mla
            and profile.value("sliding_window_source") == "server-flag"
        ):
            flags[DRAFT_WINDOW_FLAG] = window[0]
            fixed.add(DRAFT_SLIDING_WINDOW_IGNORED.code)
            notes.append(
                f"{DRAFT_WINDOW_FLAG} {window[0]}: the draft was trained with this sliding "
                f"window, which {profile.title} does not read from its config"
            )
        env = ""
        max_pos = draft.get("max_position_embeddings")
        if codes & CONTEXT_CODES and isinstance(max_pos, int):
            if profile.value("draft_context_shorter_than_target") == "error-unless-env-then-raised":
                env = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 "
                notes.append(
                    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1: lets the draft run at the "
                    "target's context (its rotary cache is enlarged); it was trained on at most "
                    f"{max_pos} positions, so acceptance may drop beyond them (or cap "
                    f"--context-length {max_pos})"
                )
            else:
                flags["--context-length"] = max_pos
                notes.append(
                    f"--context-length {max_pos}: {profile.title} cannot run the draft beyond "
                    f"the {max_pos} positions of its rotary cache, so the server's context is "
                    "capped there"
                )
            fixed |= codes & CONTEXT_CODES
        unknown = sorted(set(flags) - known)
        if unknown:
            notes.append(f"draftfit's data does not list {', '.join(unknown)} for {profile.title}")
        parts = [f"{env}python -m sglang.launch_server --model-path {command_word(source)}"]
        for flag, value in flags.items():
            parts.append(flag if value is True else f"{flag} {shell_word(str(value))}")
        command = CONTINUATION.join(parts)
        notes.append(f"--speculative-num-steps {tokens}: {why}")
        if algorithm == "EAGLE3":
            notes.append(
                "SGLang reads aux ids only from `eagle_config.eagle_aux_hidden_state_layer_ids` "
                "(no command-line flag)"
            )
        recipe = Recipe(self.name, profile.version, command, steps, notes, config=flags)
        return Served(recipe, frozenset(fixed))

    def nested_aux_ids(
        self, profile: Profile, target: Target | None, capture_before: tuple[int, ...]
    ) -> tuple[int, ...] | None:
        """SGLang's per-target counting rule (data: `aux_ids_shift_exceptions`)."""
        from draftfit.engines.sglang.capture import aux_ids_to_write

        return aux_ids_to_write(profile, target, capture_before)

    def convention_architecture(
        self, layer: Mapping[str, Any], profile: Profile | None
    ) -> ConventionChoice:
        if layer.get("kv_lora_rank"):
            return ConventionChoice(MLA_DRAFT)
        model_type = layer.get("model_type", "llama")
        if model_type in ("llama", None):
            return ConventionChoice(LLAMA_DRAFT)
        return ConventionChoice(
            LLAMA_DRAFT,
            (
                (
                    "/transformer_layer_config/model_type",
                    f"{self.title} has no EAGLE-3 draft class for `{model_type}` decoder layers",
                ),
            ),
        )

    def convention_limits(
        self,
        convention: str,
        config: Mapping[str, Any],
        layer: Mapping[str, Any],
        profile: Profile | None,
    ) -> tuple[tuple[str, str], ...]:
        if not config.get("norm_before_residual"):
            return ()
        return (
            (
                "/norm_before_residual",
                f"{self.title} has no `norm_before_residual`: it always takes the residual "
                "before `hidden_norm`; this draft was trained with it after (expect lower "
                "acceptance, or retrain)",
            ),
        )


SGLANG = SGLangEngine()
