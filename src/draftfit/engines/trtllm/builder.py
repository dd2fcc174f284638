"""What TensorRT-LLM's PyTorch backend builds from an EAGLE-3 draft at one version.

TensorRT-LLM's procedure (`dev/sglang-trtllm-procedure.md` §2): the user's
`speculative_config` selects EAGLE-3; from 0.21 the one-model path always builds
`Eagle3ForCausalLM`, whatever `architectures` says; tensor names are `midlayer[.i].*` with
`model.` prepended by the loader; names that match no module are ignored; the aux layers
come ONLY from the user's `eagle3_layers_to_capture` (output-of counting) — the draft's own
ids are never read — else the default {1, L//2-1, L-4}. EAGLE-1 drafts are not supported
on the PyTorch backend. With the launch's settings (`--serve-args`, `--serve-config`), the
layers it passes are the layers captured, and `eagle3_one_model: false` takes the two-model
path where the version still has one. Every version-dependent value comes from
`data/trtllm.toml`; many boundaries there are approximate and findings built on them say so.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.draft.aux_counting import default_capture_ids
from draftfit.draft.description import EAGLE, EAGLE3
from draftfit.draft.dialects import is_eagle4_architecture
from draftfit.draft.tensor_names import canonical_name
from draftfit.engines import shapes
from draftfit.engines.builder import (
    CONFIG,
    IGNORED_WINDOW,
    BaseBuilder,
    Built,
    Dims,
    Mapped,
    Vocab,
)
from draftfit.engines.view import (
    FAILS,
    ONES,
    SHARED,
    UNINITIALISED,
    AuxCapture,
    FateCause,
)
from draftfit.location import Location, config_at, target_config_at
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.view import BuildInputs, EngineView

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
    rule_ids.MISSING_ARCHITECTURES,
    rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
    rule_ids.METHOD_UNSUPPORTED,
    rule_ids.MISSING_DRAFT_VOCAB_SIZE,
    rule_ids.MISSING_CONFIG_FIELD,
    rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
    rule_ids.TARGET_CAPABILITY_UNKNOWN,
    rule_ids.NORM_FLAG_IGNORED,
)
EMITS_STAGE = "engine procedure: TensorRT-LLM's steps"

# How an EAGLE-4 draft is served: only through the eagle-harness plugin (its documentation:
# eagle-hq/EAGLE-4 docs/architecture.md), never by renaming its architecture.
EAGLE4_SERVING = (
    "TensorRT-LLM has no EAGLE-4 support; the eagle-harness plugin serves it in vLLM "
    "and SGLang (renaming its architecture does not make it an EAGLE-3 draft)"
)

LLAMA_EAGLE3 = "llama_eagle3"
MLA_EAGLE3 = "mla_eagle3"
USER_SETTING = "speculative_config.eagle3_layers_to_capture"
SERVE = "serving settings"
TWO_MODEL = "two-model EAGLE-3"
BY_LAUNCH = ", as the launch sets `eagle3_one_model: false`"
ONE_MODEL_FIX = (
    ", or leave `eagle3_one_model` out (the one-model path, the default, builds "
    "Eagle3ForCausalLM whatever `architectures` says)"
)


def launch_capture_before(layers: tuple[int, ...]) -> tuple[int, ...] | None:
    """`eagle3_layers_to_capture` ids (output-of) in capture-before counting. None when -1 is
    among them: TensorRT-LLM captures the final hidden state after the final norm for it,
    which is no layer's output, so it cannot be compared with trained layer ids."""
    if -1 in layers:
        return None
    return tuple(sorted({i + 1 for i in layers}))


def _ids(ids: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]"


PREFIX_REASON = (
    "TensorRT-LLM prepends `model.` to every name without `lm_head`, so `model.`-prefixed "
    "names become `model.model.*` and match no module; its fused q/k/v and gate/up loaders "
    "then find no weights and fail (AssertionError)"
)


# Facts that are unknown at a release by design, which the checks reading them handle
# themselves: decoding_config_pages lists a release's signature pages only where there is one.
_UNKNOWN_BY_DESIGN = frozenset({"decoding_config_pages"})


class _TrtllmBuilder(BaseBuilder):
    truncating_loader = False  # fact oversized_weight_policy: copy_ raises on a mismatch
    eagle3_families = frozenset({LLAMA_EAGLE3, MLA_EAGLE3})
    mla_families = frozenset({MLA_EAGLE3})
    fc_norm_replaces_input_norm = True

    @classmethod
    def build(cls, inputs: BuildInputs) -> EngineView:
        """As every engine's, and then: a release that lies between two releases whose facts
        differ, with no entry of its own (a 1.3.0rcN release known only through its
        documentation), leaves the checks resting on those facts unproven; the verdict says
        which."""
        view = super().build(inputs)
        unknown = [k for k in inputs.profile.unknown_between() if k not in _UNKNOWN_BY_DESIGN]
        if unknown:
            view.unjudged.append(
                f"the checks resting on {', '.join(unknown)} were not made: draftfit's data "
                "has no entry at this release, which lies between releases that differ there, "
                "and its code was not read"
            )
        return view

    def check_launch(self, settings: ServeSettings) -> None:
        from draftfit.engines.trtllm.launch_checks import check_settings

        check_settings(self, settings)

    def _method_supported(self) -> bool:
        key = "eagle3_supported" if self.method == EAGLE3 else "eagle_supported"
        if self.value(key):
            return True
        self.refuse(
            rule_ids.METHOD_UNSUPPORTED,
            f"{self.p.title} cannot run "
            + (
                "EAGLE-1/2 draft checkpoints (only EAGLE-3)"
                if self.method == EAGLE
                else "EAGLE-3 drafts"
            ),
            Location(CONFIG),
            (key,),
            fix="use vLLM or SGLang for EAGLE-1 drafts",
        )
        return False

    # ------------------------------------------------------------------ class
    def _resolve_class(self) -> str | None:
        cfg = self.config
        if "speculators_config" in cfg or "speculators_model_type" in cfg:
            self.refuse(
                rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
                f"{self.p.title} loads the draft config with transformers and does not "
                "understand speculators-format configs",
                config_at("/speculators_model_type"),
                ("speculators_format",),
                fix="rewrite it as a plain config: `draftfit convert DRAFT --to sglang -o OUT` "
                "(the SGLang layout, `midlayer.*`, is also TensorRT-LLM's)",
            )
            return None
        self.visible = dict(cfg)
        return self._draft_class()

    def _no_draft_class(self) -> None:
        """No draft class resolves, but the target checks need none: report them too."""
        self._target_checks()

    # ------------------------------------------------------------------ launch settings
    def _launch(self) -> ServeSettings | None:
        return self.inputs.serve

    def _two_model_by_launch(self) -> bool:
        """The launch sets `eagle3_one_model: false` on a version that still honours it."""
        s = self._launch()
        return (
            s is not None
            and s.one_model is False
            and self.value("one_model_default") == "one-model-default"
        )

    def _launch_layers(self) -> tuple[int, ...] | None:
        """The launch's `eagle3_layers_to_capture`, where this version takes that setting."""
        s = self._launch()
        if s is None or s.layers_to_capture is None or not self.value("aux_ids_user_key"):
            return None
        return s.layers_to_capture

    def _draft_class(self) -> str | None:
        selection = self.value("draft_class_selection")
        by_launch = self._two_model_by_launch()
        if selection == "always-eagle3" and not by_launch:
            return "Eagle3ForCausalLM"
        path = TWO_MODEL + (BY_LAUNCH if by_launch else "")
        also = ONE_MODEL_FIX if by_launch else ""
        archs = self.config.get("architectures")
        if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
            self.refuse(
                rule_ids.MISSING_ARCHITECTURES,
                f"`architectures` is missing or empty: {self.p.title} ({path}) "
                "looks the draft class up from `architectures[0]` and fails",
                config_at("/architectures"),
                ("one_model_default", "draft_class_selection")
                if by_launch
                else ("missing_architectures",),
                fix=self._two_model_fix() + also,
            )
            return None
        arch = self._two_model_arch(archs[0])
        if arch in (self.value("eagle3_draft_architectures") or []):
            return arch
        self.refuse(
            rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
            f"{self.p.title} ({path}) looks up `{arch}` with AutoModelForCausalLM "
            "and fails ('Unknown architecture for AutoModelForCausalLM')",
            config_at("/architectures/0"),
            ("draft_class_selection", "two_model_arch_rename", "eagle3_draft_architectures")
            + (("one_model_default",) if by_launch else ()),
            fix=EAGLE4_SERVING
            if is_eagle4_architecture(archs[0])
            else self._two_model_fix() + also,
        )
        return None

    def _two_model_arch(self, arch: str) -> str:
        """The name AutoModelForCausalLM looks up: with `draft_vocab_size`, "EAGLE3" + the
        name, after removing "Eagle3" from it only where the version does (fact
        two_model_arch_rename), so `LlamaForCausalLMEagle3` resolves only there."""
        if "draft_vocab_size" not in self.visible:
            return arch
        if self.value("two_model_arch_rename") == "strip-then-prefix":
            arch = arch.replace("Eagle3", "")
        return "EAGLE3" + arch

    def _two_model_fix(self) -> str:
        """The `architectures` name that resolves to EAGLE3LlamaForCausalLM at this version."""
        name = (
            "LlamaForCausalLMEagle3"
            if self.value("two_model_arch_rename") == "strip-then-prefix"
            else "LlamaForCausalLM"
        )
        return f'set "architectures": ["{name}"] and `draft_vocab_size`'

    def _family(self, arch: str) -> str:
        """Any class builds MLA layers for a draft with `kv_lora_rank` where the version does."""
        mla = bool(self.visible.get("kv_lora_rank")) and bool(self.value("mla_when_kv_lora_rank"))
        return MLA_EAGLE3 if mla else LLAMA_EAGLE3

    def _dims_present(self) -> bool:
        return self._require_dims("", ("draft_class_selection",))

    # ------------------------------------------------------------------ shapes
    def _target_hidden_size(self, H: int) -> int | None:
        v = self.visible
        tsh_supported = bool(self.value("target_hidden_size_supported"))
        if tsh_supported and "target_hidden_size" in v and v["target_hidden_size"] is None:
            self.refuse(
                rule_ids.MISSING_CONFIG_FIELD,
                f"`target_hidden_size` is null: {self.p.title} reads it with hasattr and "
                "multiplies it by the number of aux states (TypeError)",
                config_at("/target_hidden_size"),
                ("target_hidden_size_supported",),
                fix="remove the key, or set it to the target's hidden size",
            )
            return None
        return (self.vint("target_hidden_size") or H) if tsh_supported else H

    def _draft_vocab(self, V: int | None) -> Vocab | None:
        if "draft_vocab_size" not in self.visible:
            if self.value("draft_vocab_size_required"):
                self.refuse(
                    rule_ids.MISSING_DRAFT_VOCAB_SIZE,
                    f"`draft_vocab_size` is missing: {self.p.title} reads "
                    "`config.draft_vocab_size` while building the draft (AttributeError)",
                    config_at("/draft_vocab_size"),
                    ("draft_vocab_size_required",),
                    fix="set `draft_vocab_size` to the rows of `lm_head.weight`",
                )
                return None
            return Vocab(V, head_from_target=False)
        # null: the full vocabulary, no d2t
        return Vocab(self.vint("draft_vocab_size") or V, head_from_target=False)

    def _layer_count(self) -> int:
        n_layers = self.vint("num_hidden_layers") or 1
        return n_layers if self.value("multi_layer_policy") == "supported" else 1

    def _eh_proj(self) -> bool:
        """Whether the layer projects [embedding, hidden] before attention (`eh_proj`)."""
        flags = self.value("eagle_config_flags_supported") or []
        return bool(self._eagle_config().get("eh_proj_before_attn")) and (
            "eagle_config.eh_proj_before_attn" in flags
        )

    def _eagle3_layer(self, k: int, d: Dims, citations: tuple[str, ...]) -> None:
        v = self.visible
        regular_next = self.value("later_layer_input") == "next-layer-regular" and (
            self._eagle_config().get("next_layer_regular", True)
        )
        regular = self._eh_proj() or (regular_next and k > 0)
        bias_ok = bool(self.value("attention_bias_supported"))
        attn_bias = bool(v.get("attention_bias")) and bias_ok
        H = d.hidden
        self._llama_layer(
            k,
            d,
            first_width=H if regular else 2 * H,
            later_width=H if regular else 2 * H,
            citations=citations,
            attn_bias=attn_bias,
            o_bias=attn_bias,
            mlp_bias=bool(v.get("mlp_bias")) and bias_ok,
            input_norm=not regular,
            hidden_norm=True,
            qk_norm=False,
        )

    def _extra_modules(self, H: int) -> None:
        if not self._eh_proj():
            return
        src = self.src("eagle_config_flags_supported")
        self._expect("enorm.weight", shapes.hidden_vector(H), ONES, src)
        self._expect("eh_proj.weight", shapes.eh_proj(H), UNINITIALISED, src)

    def _aux_states(self) -> tuple[int, str]:
        """As many as the launch's `eagle3_layers_to_capture` names, else 3."""
        layers = self._launch_layers()
        if layers is not None:
            n = len(set(layers))
            return n, f"the launch's `eagle3_layers_to_capture`, {n} layer(s)"
        if self.value("aux_ids_user_key"):
            return 3, "the default of 3 (no `eagle3_layers_to_capture` passed)"
        return 3, "a fixed count of 3"

    def _uses_aux(self) -> bool:
        return True

    def _fc(self, H: int, T: int, n_aux: int, count_from: str, use_aux: bool) -> None:
        if not (self.value("fc_exists_when") == "always" or n_aux > 1):
            return
        self._expect(
            "fc.weight",
            shapes.fc(H, n_aux, T, count_from),
            UNINITIALISED,
            self.src("aux_count_rule", "fc_exists_when"),
        )
        if self.value("fc_bias_rule") == "config-bias" and self.visible.get("bias"):
            bias = shapes.hidden_vector(H)
            self._expect("fc.bias", bias, UNINITIALISED, self.src("fc_bias_rule"))

    def _embedding_if_missing(self, H: int, T: int, head_from_target: bool) -> str:
        sharing = self.value("embedding_sharing")
        own = sharing == "shared-unless-target-hidden-differs" and T != H
        self.view.effective["embedding_shared"] = not own
        return UNINITIALISED if own else SHARED

    def _head(self, V: int | None, Vd: int | None, head_from_target: bool) -> Built:
        head_rule = self.value("lm_head_rule")
        has_head = any("lm_head" in name for name in self.ckpt.tensors)
        from_target = head_rule == "checkpoint-else-target" and not has_head
        return Built(SHARED if from_target else UNINITIALISED, self.src("lm_head_rule"))

    def _d2t(self, V: int | None, Vd: int | None, reduced: bool) -> None:
        d2t_rule = self.value("d2t_parameter")
        d2t_exists = d2t_rule == "always" or (d2t_rule == "when-reduced" and Vd != V)
        self.view.effective["d2t_parameter"] = d2t_exists
        if d2t_exists:
            citations = self.src("d2t_parameter", "missing_tensor_policy")
            self._expect("d2t", shapes.d2t(Vd), FAILS, citations)

    def _norms(self) -> dict[str, bool]:
        v = self.visible
        ec = self._eagle_config()
        return {
            "norm_before_fc": bool(ec.get("norm_before_fc"))
            and bool(self.value("norm_before_fc_supported")),
            "fc_norm": bool(v.get("fc_norm")) and bool(self.value("fc_norm_supported")),
            "norm_output": bool(v.get("norm_output") or ec.get("return_hidden_post_norm"))
            and bool(self.value("norm_output_supported")),
        }

    def _sliding_window_advice(self, size: int, how: Any) -> tuple[str, str]:
        """TensorRT-LLM has neither a config key nor a setting for a draft's window."""
        return f"does not apply a draft's sliding window: {IGNORED_WINDOW}", (
            "TensorRT-LLM has no setting for a draft's sliding window; expect lower "
            f"acceptance on prompts longer than {size} tokens, or serve the draft with an "
            "engine version that applies it"
        )

    def _flags(self, norms: dict[str, bool]) -> None:
        v = self.visible
        ec = self._eagle_config()
        checks = [
            (
                "norm_before_residual",
                bool(v.get("norm_before_residual")),
                False,
                "/norm_before_residual",
            ),
            (
                "norm_before_fc",
                bool(v.get("norm_before_fc") or ec.get("norm_before_fc")),
                norms["norm_before_fc"] and not norms["fc_norm"],
                "/eagle_config/norm_before_fc" if ec.get("norm_before_fc") else "/norm_before_fc",
            ),
            ("fc_norm", bool(v.get("fc_norm")), norms["fc_norm"], "/fc_norm"),
            (
                "norm_output",
                bool(v.get("norm_output") or ec.get("return_hidden_post_norm")),
                norms["norm_output"],
                "/norm_output",
            ),
        ]
        for name, on, honoured, where in checks:
            if not on or honoured:
                continue
            why = "does not implement it"
            if name == "norm_before_fc" and v.get(name) and not ec.get(name):
                why = "reads it only from `eagle_config.norm_before_fc`"
            elif name == "norm_before_fc" and norms["fc_norm"]:
                why = "applies `fc_norm` instead when both are set"
            self.event(
                rule_ids.NORM_FLAG_IGNORED,
                f"`{name}` is true, but {self.p.title} {why}: the draft runs without the norm "
                "it was trained with",
                config_at(where),
                (f"{name}_supported",),
                fix="use a TensorRT-LLM version that implements it, or another engine",
            )

    # ------------------------------------------------------------------ aux
    def _aux_capture(self, n_aux: int, count_from: str, use_aux: bool) -> None:
        L = self.target.num_layers if self.target else None
        user_key = self.value("aux_ids_user_key") or None
        layers, s = self._launch_layers(), self._launch()
        used: tuple[int, ...] | None = default_capture_ids(L) if L is not None else None
        launch_setting, launch_location, unused = "", None, ""
        if layers is None and s is not None and s.layers_to_capture is not None:
            unused = (
                f"the launch's `eagle3_layers_to_capture: {_ids(s.layers_to_capture)}` is not "
                f"a setting {self.p.title} has"
            )
        if layers is not None and s is not None:
            used = launch_capture_before(layers)
            launch_setting = f"`{USER_SETTING}: {_ids(layers)}` ({s.given_by})"
            launch_location = Location(
                f"{SERVE} ({s.given_by})", "/speculative_config/eagle3_layers_to_capture"
            )
        self.view.aux = AuxCapture(
            used=used,
            read_from=None,
            keys_read=(),
            expected_count=n_aux,
            count_from=count_from,
            valid_range=(1, L) if L is not None else None,
            citations=self.src("aux_ids_read_from", "aux_ids_default", "aux_ids_user_key"),
            read_convention="output-of",
            write_pointer=None,
            user_setting=USER_SETTING if user_key else None,
            encode=(lambda cb: tuple(i - 1 for i in cb)) if user_key else None,
            launch_setting=launch_setting,
            launch_location=launch_location,
            launch_unused=unused,
        )

    # ------------------------------------------------------------------ tensor fates
    def _engine_name(self, raw: str) -> Mapped:
        name = raw
        if "lm_head" not in name and name.startswith("model."):
            return Mapped(None, PREFIX_REASON, FateCause.PREFIX_ADDED)
        remap = (self.value("eagle3_weight_mapping") or {}).get("layers_remap") or {}
        built = self.view.effective.get("num_layers", 1)
        n_layers = built if isinstance(built, int) else 1
        if name.startswith("layers."):
            if not remap:
                return Mapped(
                    None,
                    "this version names the decoder layer `midlayer`; `layers.*` matches nothing",
                    FateCause.RENAMED,
                )
            pattern, repl = remap["single" if n_layers == 1 else "multi"]
            name = re.sub(pattern, repl.replace("\\1", r"\1"), name, count=1)
        m = re.match(r"^midlayer\.(\d+)\.", name)
        if m:
            if n_layers == 1:
                return Mapped(
                    None,
                    "a one-layer draft's module is `midlayer`, not `midlayer.N`",
                    FateCause.RENAMED,
                )
            return Mapped("layers." + name[len("midlayer.") :])
        if name.startswith("midlayer."):
            if n_layers > 1:
                return Mapped(
                    None, "a multi-layer draft's modules are `midlayer.N`", FateCause.RENAMED
                )
            return Mapped("layers.0." + name[len("midlayer.") :])
        return Mapped(canonical_name(name)[0])

    def _fixed_fate(self, raw: str) -> bool:
        """The loader always skips `t2d`, and `d2t` where the draft builds no map."""
        if raw == "t2d":
            keys: tuple[str, ...] = ("skipped_tensor_names",)
        elif raw == "d2t" and "d2t" not in self.view.expectations:
            keys = ("d2t_parameter",)
        else:
            return False
        self._fate(
            raw,
            raw,
            "skipped",
            "always skipped by the loader",
            self.src(*keys),
            cause=FateCause.SKIPPED_BY_LOADER,
        )
        return True

    def _unmatched(self, raw: str, mapped: Mapped) -> None:
        """A `model.`-prefixed name fails the fused loaders; any other unknown name is
        ignored, and one meant for a parameter leaves it unbound."""
        spec_canonical = canonical_name(raw)[0]
        if mapped.cause is FateCause.PREFIX_ADDED:
            citations = self.src("model_prefix_accepted")
            self._fate(raw, spec_canonical, "rejected", mapped.why, citations, cause=mapped.cause)
            return
        if spec_canonical in self.view.expectations:
            cause = mapped.cause if mapped.canonical is None else FateCause.RENAMED
            self._fate(
                raw,
                spec_canonical,
                "unbound",
                mapped.why or "the loader maps it to no module",
                self.src("eagle3_weight_mapping"),
                cause=cause,
            )
            return
        reason = mapped.why or "no module of the draft class has this name"
        cause = mapped.cause
        if spec_canonical.endswith(".bias"):
            reason = "the draft has no such bias parameter"
            cause = FateCause.STRAY_BIAS
        n = self._layer_beyond(spec_canonical)
        if n is not None:
            reason = f"the draft builds {n} decoder layer(s)" + (
                "" if self.value("multi_layer_policy") == "supported" else " (one only)"
            )
            cause = FateCause.EXTRA_LAYER
        self._fate(
            raw,
            spec_canonical,
            "skipped",
            reason + "; the loader ignores it silently",
            self.src("unknown_tensor_policy"),
            cause=cause,
        )

    # ------------------------------------------------------------------ target
    def _target_checks(self) -> None:
        t = self.target
        if t is None:
            return
        arch = t.architecture
        if arch is not None and arch not in (self.value("verifier_eagle3_classes") or []):
            if arch in (self.value("verifier_not_eagle3_classes") or []):
                self.refuse(
                    rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
                    f"TensorRT-LLM's supported-models matrix marks `{arch}` as not supporting "
                    f"EAGLE-3 in {self.p.title}",
                    target_config_at("/architectures/0"),
                    ("verifier_not_eagle3_classes",),
                    fix="use another engine for this target",
                )
            else:
                self.event(
                    rule_ids.TARGET_CAPABILITY_UNKNOWN,
                    f"draftfit has no record of whether `{arch}` captures aux hidden states in "
                    f"{self.p.title} (its TensorRT-LLM target list comes from documentation)",
                    target_config_at("/architectures/0"),
                    ("verifier_eagle3_classes",),
                    fix="check TensorRT-LLM's supported-models matrix for EAGLE-3",
                )
        self._target_width_checks(
            eagle1=False,
            embedding_shared=bool(self.view.effective.get("embedding_shared", True))
            and "embed_tokens.weight" not in self.spec.tensors,
        )


Builder = _TrtllmBuilder
