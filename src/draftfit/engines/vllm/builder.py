"""What vLLM builds from a draft checkpoint at one version (EAGLE-3 and EAGLE-1).

This module encodes vLLM's *procedure* — config route, architecture rewrite, registry
lookup, the parameters the draft class builds, the weight-name mapping, aux-layer capture
and sharing with the target — while every version-dependent value comes from
`data/vllm.toml` through a :class:`Profile`, each with the source line it was read from.
The result is an :class:`EngineView`; generic rules turn it into findings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.draft.aux_counting import TOP_AUX, default_capture_ids
from draftfit.draft.description import EAGLE, EAGLE3, DraftDescription
from draftfit.draft.dialects import (
    NEMO_AUTOMODEL,
    is_eagle4_architecture,
    non_eagle_kind,
)
from draftfit.draft.target import Target
from draftfit.draft.target_rotation import DESCRIPTION_FILE, ROTATION_FILE, Rotation
from draftfit.engines import shapes
from draftfit.engines.builder import (
    CONFIG,
    IGNORED_WINDOW,
    BaseBuilder,
    Built,
    Dims,
    Mapped,
    Vocab,
    get_path,
    target_is_moe,
)
from draftfit.engines.draft_quant import (
    DraftQuant,
    add_quantized_parameters,
    quant_suffix,
    read_draft_quant,
)
from draftfit.engines.profile import Profile
from draftfit.engines.serve import first_release_where
from draftfit.engines.view import (
    SHARED,
    UNINITIALISED,
    AuxCapture,
    FateCause,
)
from draftfit.engines.vllm.head_share import head_share_event
from draftfit.engines.vllm.kv import kv_geometry_events
from draftfit.location import Location, config_at, target_config_at
from draftfit.rule_ids import Consequence
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from typing import Any

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
    rule_ids.MISSING_ARCHITECTURES,
    rule_ids.UNSUPPORTED_SPECULATORS_TYPE,
    rule_ids.INVALID_SPECULATORS_CONFIG,
    rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
    rule_ids.UNSUPPORTED_LAYER_MODEL_TYPE,
    rule_ids.METHOD_MISMATCH,
    rule_ids.METHOD_NOT_DETECTED_FROM_PATH,
    rule_ids.METHOD_UNSUPPORTED,
    rule_ids.MISSING_DRAFT_VOCAB_SIZE,
    rule_ids.SPECULATORS_CONFIG_WITH_MODEL_TYPE,
    rule_ids.MISSING_CONFIG_FIELD,
    rule_ids.METHOD_GUESSED_AS_DRAFT_MODEL,
    rule_ids.UNSUPPORTED_ACTIVATION,
    rule_ids.D2T_IGNORED_BY_ENGINE,
    rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
    rule_ids.DRAFT_CONTEXT_SHORTER_THAN_TARGET,
    rule_ids.TARGET_CAPABILITY_UNKNOWN,
    rule_ids.DRAFT_BUILT_WITH_TARGET_QUANTIZATION,
    rule_ids.TARGET_QUANTIZATION_NOT_MODELLED,
    rule_ids.NORM_FLAG_IGNORED,
    rule_ids.NORM_BEFORE_RESIDUAL_DEFAULT,
)
EMITS_STAGE = "engine procedure: vLLM's steps"

# How an EAGLE-4 draft is served: only through the eagle-harness plugin (its documentation:
# eagle-hq/EAGLE-4 docs/architecture.md), never by renaming its architecture.
EAGLE4_SERVING = (
    "install the eagle-harness plugin and serve with "
    '`--speculative-config \'{"method": "eagle_harness", ...}\'` (an EAGLE-4 draft is not an '
    "EAGLE-3 draft: renaming its architecture does not make vLLM load it)"
)


# Draft classes by the shape logic they share (vllm/model_executor/models/registry.py
# maps every name below to one of these modules at v0.34.0).
LLAMA_EAGLE3 = "llama_eagle3"
QWEN3_EAGLE3 = "qwen3_eagle3"
DEEPSEEK_EAGLE3 = "deepseek_eagle3"
LLAMA_EAGLE = "llama_eagle"
# The fact saying, per class family, whether the draft's own sliding window is applied.
WINDOW_FACT = "draft_sliding_window_honoured"
OTHER = "other"

CLASS_FAMILY = {
    "Eagle3LlamaForCausalLM": LLAMA_EAGLE3,
    "LlamaForCausalLMEagle3": LLAMA_EAGLE3,
    "Eagle3Qwen2_5vlForCausalLM": LLAMA_EAGLE3,
    "Eagle3Qwen3vlForCausalLM": LLAMA_EAGLE3,
    "Eagle3MiniMaxM2ForCausalLM": LLAMA_EAGLE3,
    "Eagle3Qwen3ForCausalLM": QWEN3_EAGLE3,
    "Eagle3DeepseekV2ForCausalLM": DEEPSEEK_EAGLE3,
    "Eagle3DeepseekV3ForCausalLM": DEEPSEEK_EAGLE3,
    "EagleLlamaForCausalLM": LLAMA_EAGLE,
}


_RUNNER_NAMES = {"mrv1": "V1 model runner", "mrv2": "V2 model runner"}
# The releases that pick the model runner from VLLM_USE_V2_MODEL_RUNNER: an opt-in from 0.14
# (vllm/envs.py:236,1586-1588@v0.18.0), an override of the per-target default in 0.22-0.33
# (vllm/config/vllm.py:494-496@v0.22.0); 0.34.0 removed the V1 runner.
RUNNER_ENV_RELEASES = ("0.14.0", "0.34.0")


class _Builder(BaseBuilder):
    def check_launch(self, settings: ServeSettings) -> None:
        from draftfit.engines.vllm.launch_checks import check_settings

        check_settings(self, settings)

    @staticmethod
    def method_for(method: str | None, spec: DraftDescription) -> str | None:
        """`auto` stays: vLLM guesses the method from the draft path (`_method_from_path`)."""
        return method

    eagle1_families = frozenset({LLAMA_EAGLE})
    eagle3_families = frozenset({LLAMA_EAGLE3, QWEN3_EAGLE3, DEEPSEEK_EAGLE3})
    mla_families = frozenset({DEEPSEEK_EAGLE3})
    maps_after_refusal = True  # a refusal while building leaves the tensor walk to report

    # ------------------------------------------------------------------ method
    def _settle_method(self) -> None:
        """What vLLM picks when `speculative_config` has no `method` (data: `method_from_path`,
        vllm/config/__init__.py:2143-2146@v0.10.2)."""
        rules = self.value("method_from_path") or []
        launch = self.inputs.serve
        # vLLM looks at the draft path the launch gives (as written), else the checked one
        source = launch.draft_model if launch is not None and launch.draft_model else None
        source = source or self.ckpt.origin
        name = source.lower()
        detected = None
        for substring, method in rules:
            if substring in name:
                detected = method
                break
        self.view.effective["method_from_path"] = detected or "draft_model"
        if self.method == "auto":
            self.method = detected
            self.view.method = detected
            if detected is None:
                plain = self.value("draft_model_method")
                message = (
                    f"no `method` given and the draft path `{source}` contains none of "
                    + ", ".join(f"`{s}`" for s, _ in rules)
                    + ": vLLM runs it as a plain `draft_model`, "
                )
                fix = 'pass "method": "eagle3" (or "eagle") in --speculative-config'
                if plain == "runs":
                    self.event(
                        rule_ids.METHOD_GUESSED_AS_DRAFT_MODEL,
                        message + "without the target's hidden states: it loads and drafts garbage",
                        Location(CONFIG),
                        ("method_from_path", "draft_model_method"),
                        fix=fix,
                    )
                else:
                    self.refuse(
                        rule_ids.METHOD_MISMATCH,
                        message + "which this version refuses",
                        Location(CONFIG),
                        ("method_from_path", "draft_model_method"),
                        fix=fix,
                    )
            elif self.spec.method and detected != self.spec.method:
                self.refuse(
                    rule_ids.METHOD_MISMATCH,
                    f"no `method` given: vLLM picks `{detected}` from the draft path "
                    f"`{source}`, but the checkpoint is an {self.spec.method} draft",
                    Location(CONFIG),
                    ("method_from_path",),
                    fix=f'pass "method": "{self.spec.method}" in --speculative-config',
                )
            return
        if (
            not self.method_explicit
            and self.method is not None
            and detected != self.method
            and non_eagle_kind(self.config) is None  # not-an-eagle-draft says what to pass
        ):
            self.event(
                rule_ids.METHOD_NOT_DETECTED_FROM_PATH,
                f"if `method` is left out of --speculative-config, vLLM picks "
                f"`{detected or 'draft_model'}` from the draft path `{self.ckpt.origin}`, "
                f"not `{self.method}`",
                Location(CONFIG),
                ("method_from_path",),
                fix=f'always pass "method": "{self.method}" in --speculative-config',
            )

    def _method_supported(self) -> bool:
        key = "eagle3_supported" if self.method == EAGLE3 else "eagle_supported"
        fact = self.p.fact(key)
        if fact.value:
            return True
        self.refuse(
            rule_ids.METHOD_UNSUPPORTED,
            f"{self.p.title} has no {'EAGLE-3' if self.method == EAGLE3 else 'EAGLE-1'} "
            "drafting for checkpoints of this kind",
            Location(CONFIG),
            (key,),
            fix="use a newer vLLM version (see `draftfit engines vllm`)",
        )
        return False

    def _method_matches(self) -> bool:
        """A method that does not fit the checkpoint is refused, and vLLM goes on."""
        spec_method = self.spec.method
        if spec_method is None or spec_method == self.method:
            return True
        self.refuse(
            rule_ids.METHOD_MISMATCH,
            f"the checkpoint is an {spec_method} draft ({'; '.join(self.spec.method_evidence)}), "
            f"but it is served with method `{self.method}`: vLLM builds the wrong draft class",
            Location(CONFIG, "/architectures"),
            (
                "eagle3_draft_architectures"
                if self.method == EAGLE3
                else "eagle_draft_architectures",
            ),
            fix=f'serve it with "method": "{spec_method}"',
        )
        return True

    # ------------------------------------------------------------------ config route
    def _resolve_class(self) -> str | None:
        arch = self._route_and_arch()
        if arch is None or not self._registered(arch):
            return None
        return arch

    def _family(self, arch: str) -> str:
        return CLASS_FAMILY.get(arch, OTHER)

    def _route_and_arch(self) -> str | None:
        cfg = self.config
        is_speculators = "speculators_config" in cfg or "speculators_model_type" in cfg
        if is_speculators and "model_type" in cfg:
            self.refuse(
                rule_ids.SPECULATORS_CONFIG_WITH_MODEL_TYPE,
                f"the config has speculators keys and a top-level `model_type` "
                f"(`{cfg.get('model_type')}`): vLLM parses it as a plain HF config and never "
                "converts `transformer_layer_config`",
                config_at("/model_type"),
                ("speculators_format",),
                fix="remove the top-level `model_type` key",
            )
            return None
        if is_speculators:
            return self._speculators_route()
        if cfg.get("model_type") == "eagle" and isinstance(cfg.get("model"), dict):
            self.route = "legacy-eagle"
            self.visible = dict(cfg["model"])
            for key, value in cfg.items():
                if key != "model":
                    self.visible.setdefault(key, value)
        else:
            self.visible = dict(cfg)
        return self._rewrite_architecture()

    def _speculators_route(self) -> str | None:
        cfg = self.config
        self.route = "speculators"
        if not self.value("speculators_format"):
            self.refuse(
                rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
                f"{self.p.title} cannot read speculators-format configs (no top-level "
                "`model_type`; the format is understood from vLLM 0.10.1)",
                config_at("/speculators_model_type"),
                ("speculators_format",),
                fix="convert the draft to a plain config (`draftfit convert --to vllm`) or use "
                "vLLM >= 0.10.1",
            )
            return None
        kind = cfg.get("speculators_model_type")
        allowed = self.value("speculators_types") or []
        if kind not in allowed:
            self.refuse(
                rule_ids.UNSUPPORTED_SPECULATORS_TYPE,
                f"`speculators_model_type` is `{kind}`; {self.p.title} accepts "
                + ", ".join(f"`{k}`" for k in allowed),
                config_at("/speculators_model_type"),
                ("speculators_types",),
                fix="rewrite it as a plain EAGLE-1 config (architectures `EagleLlamaForCausalLM`)"
                if kind == "eagle"
                else f"serve it with a {self.p.data.title} release that accepts `{kind}` "
                "(`draftfit engines` lists the releases read), or with the method made for it",
            )
            return None
        other = non_eagle_kind(cfg)
        if other is not None and kind not in ("eagle3", "eagle"):
            name, what = other
            self.refuse(
                rule_ids.METHOD_MISMATCH,
                f"the checkpoint is a {name} draft ({what}), not an EAGLE draft: "
                + (
                    f"{self.p.title} refuses it under method `{self.method}`, since the draft "
                    f"declares method `{kind}`"
                    if self.value("speculators_method_checked")
                    else f"{self.p.title} builds its own `{kind}` draft class for it, which "
                    f"method `{self.method}` does not drive"
                ),
                config_at("/speculators_model_type"),
                ("speculators_types", "speculators_method_checked"),
                fix=f'serve it with "method": "{kind}" (draftfit checks EAGLE drafts only)',
            )
            return None
        problem = _speculators_structure_problem(cfg, self.p)
        if problem:
            pointer, message = problem
            self.event(
                rule_ids.INVALID_SPECULATORS_CONFIG,
                message + ": `vllm serve <draft>` (which reads the verifier and speculative "
                "tokens from it) refuses the checkpoint; --speculative-config is unaffected",
                config_at(pointer),
                ("speculators_structure",),
                fix="write the speculators structure the `speculators` library writes",
            )
        layer = cfg.get("transformer_layer_config")
        if not isinstance(layer, dict):
            self.refuse(
                rule_ids.MISSING_CONFIG_FIELD,
                "`transformer_layer_config` is "
                + ("missing" if layer is None else "not an object")
                + ": vLLM builds the draft layer from it",
                config_at("/transformer_layer_config"),
                ("speculators_structure",),
                fix="write the draft decoder's config under `transformer_layer_config`",
            )
            return None
        self.visible = dict(layer)
        copied = self.value("speculators_copied_fields") or []
        for name in copied:
            if name == "norm_before_residual":
                default = self.value("speculators_norm_before_residual_default")
                self.visible[name] = cfg.get(name, default)
                if name not in cfg:
                    self.view.effective["norm_before_residual_defaulted"] = default
            elif name in ("target_hidden_size", "eagle_aux_hidden_state_layer_ids"):
                if cfg.get(name):
                    self.visible[name] = cfg[name]
            elif name in cfg:
                self.visible[name] = cfg[name]
        arch_map: dict[str, str] = self.value("speculators_architecture") or {}
        layer_type = layer.get("model_type") or "llama"
        arch = arch_map.get("*") or arch_map.get(layer_type)
        if arch is None:
            self.refuse(
                rule_ids.UNSUPPORTED_LAYER_MODEL_TYPE,
                f"`transformer_layer_config.model_type` is `{layer_type}`; {self.p.title} builds "
                "EAGLE-3 speculators only for " + ", ".join(f"`{k}`" for k in arch_map),
                config_at("/transformer_layer_config/model_type"),
                ("speculators_architecture",),
                fix="train the draft with a llama (or qwen3) decoder layer",
            )
            return None
        self.visible["architectures"] = [arch]
        return arch

    def _rewrite_architecture(self) -> str | None:
        arch_list = self.visible.get("architectures")
        rewrite = self.value(
            "eagle3_arch_rewrite" if self.method == EAGLE3 else "eagle_arch_rewrite"
        )
        key = "eagle3_arch_rewrite" if self.method == EAGLE3 else "eagle_arch_rewrite"
        if rewrite == "forced":
            forced = "Eagle3LlamaForCausalLM" if self.method == EAGLE3 else "EagleLlamaForCausalLM"
            self.view.effective["architecture_rewrite"] = f"forced to {forced}"
            return forced
        if not (isinstance(arch_list, list) and arch_list and isinstance(arch_list[0], str)):
            pointer = "/model/architectures" if self.route == "legacy-eagle" else "/architectures"
            self.refuse(
                rule_ids.MISSING_ARCHITECTURES,
                "`architectures` is missing or empty: vLLM's EAGLE config wrapper iterates it "
                "and fails",
                config_at(pointer),
                (key,),
                fix='set "architectures": ["LlamaForCausalLMEagle3"] (EAGLE-3) or '
                '["LlamaForCausalLM"] (EAGLE-1)',
            )
            return None
        arch = arch_list[0]
        prefix = "Eagle3" if self.method == EAGLE3 else "Eagle"
        keep = arch.startswith(prefix) or (
            rewrite == "prefix-unless-starts-or-ends" and arch.endswith(prefix)
        )
        resolved = arch if keep else prefix + arch
        if resolved != arch:
            self.view.effective["architecture_rewrite"] = f"{arch} -> {resolved}"
        return resolved

    def _registered(self, arch: str) -> bool:
        key = "eagle3_draft_architectures" if self.method == EAGLE3 else "eagle_draft_architectures"
        registered = self.value(key) or []
        if arch in registered:
            return True
        written = self.visible.get("architectures")
        written0 = written[0] if isinstance(written, list) and written else arch
        how = f"`{written0}` becomes `{arch}`" if written0 != arch else f"`{arch}`"
        pointer = "/model/architectures/0" if self.route == "legacy-eagle" else "/architectures/0"
        suggestion = _suggest_architecture(self.method, registered)
        fix = f'set "architectures": ["{suggestion}"]' if suggestion else None
        if is_eagle4_architecture(written0):
            fix = EAGLE4_SERVING
        elif fix and self.spec.dialect.name == NEMO_AUTOMODEL:
            if any(raw.startswith("model.") for raw in self.ckpt.tensors):
                fix += " and strip the `model.` prefix from the tensor names"
        elif non_eagle_kind(self.config) is not None:
            fix = "this is not an EAGLE draft: serve it with the method made for it"
        self.refuse(
            rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
            f"{how}, which {self.p.title} does not register for method `{self.method}` "
            f"(registered: {', '.join(sorted(registered)) or 'none'})",
            config_at(pointer),
            (key, "eagle3_arch_rewrite" if self.method == EAGLE3 else "eagle_arch_rewrite"),
            fix=fix,
        )
        return False

    def _dims_present(self) -> bool:
        act = self.visible.get("hidden_act", "silu")
        if act != "silu":
            self.refuse(
                rule_ids.UNSUPPORTED_ACTIVATION,
                f"`hidden_act` is `{act}`: vLLM's draft MLP supports only `silu` and fails "
                "while building the draft",
                config_at(f"{self.spec.layer_config_pointer}/hidden_act"),
                ("draft_activation",),
                fix='train the draft with "hidden_act": "silu"',
            )
            return False
        model_type = self.visible.get("model_type")
        if model_type in (self.value("mtp_model_types") or []):
            self.refuse(
                rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
                f"the draft's `model_type` is `{model_type}`: vLLM rewrites such drafts to its MTP "
                "model (`DeepSeekMTPModel`), and `Eagle3DeepSeekMTPModel` is not registered",
                config_at(f"{self.spec.layer_config_pointer}/model_type"),
                ("mtp_model_types",),
                fix='use "model_type": "kimi_k2" or "deepseek_v2" for an MLA EAGLE-3 draft',
            )
            return False
        return self._require_dims(
            self.spec.layer_config_pointer,
            (
                "eagle3_draft_architectures"
                if self.method == EAGLE3
                else "eagle_draft_architectures",
            ),
        )

    # ------------------------------------------------------------------ EAGLE-3 shapes
    def _target_hidden_size(self, H: int) -> int | None:
        if "target_hidden_size" in self.visible and self.visible["target_hidden_size"] is None:
            self.refuse(
                rule_ids.MISSING_CONFIG_FIELD,
                "`target_hidden_size` is null: vLLM multiplies it by the number of aux states "
                "to size `fc` and fails with a TypeError",
                config_at("/target_hidden_size"),
                ("aux_count_rule",),
                fix="remove the key, or set it to the target's hidden size",
            )
            return None
        return self.vint("target_hidden_size") or H

    def _draft_vocab(self, V: int | None) -> Vocab | None:
        Vd = self.vint("draft_vocab_size")
        if Vd is None:
            if self.value("draft_vocab_size_required"):
                present_null = "draft_vocab_size" in self.visible
                self.refuse(
                    rule_ids.MISSING_DRAFT_VOCAB_SIZE,
                    "`draft_vocab_size` is "
                    + ("null" if present_null else "missing")
                    + f": {self.p.title} reads it directly when building the draft lm_head",
                    config_at("/draft_vocab_size"),
                    ("draft_vocab_size_required",),
                    fix="set `draft_vocab_size` to the rows of `lm_head.weight`",
                )
                return None
            Vd = V
        return Vocab(Vd, head_from_target=False)

    def _layer_count(self) -> int:
        n_layers = self.vint("num_hidden_layers") or 1
        return n_layers if self.value("multi_layer_drafts") else 1

    def _eagle3_layer(self, k: int, d: Dims, citations: tuple[str, ...]) -> None:
        v = self.visible
        self._llama_layer(
            k,
            d,
            first_width=2 * d.hidden,
            citations=citations,
            attn_bias=bool(v.get("attention_bias"))
            and bool(self.value("attention_bias_supported")),
            o_bias=bool(v.get("attention_bias")),
            mlp_bias=bool(v.get("mlp_bias")),
            input_norm=True,
            hidden_norm=k == 0,
            qk_norm=self.family == QWEN3_EAGLE3,
        )

    def _fc(self, H: int, T: int, n_aux: int, count_from: str, use_aux: bool) -> None:
        if use_aux:
            self._expect(
                "fc.weight",
                shapes.fc(H, n_aux, T, count_from),
                UNINITIALISED,
                self.src("aux_count_rule", "eagle3_weight_mapping"),
            )

    def _norms(self) -> dict[str, bool]:
        return {
            "norm_before_fc": self._flag_visible("norm_before_fc"),
            "fc_norm": self._flag_visible("fc_norm"),
            "norm_output": self._flag_visible("norm_output"),
        }

    def _norm_before_residual(self) -> bool:
        return bool(self.value("norm_before_residual_supported")) and bool(
            self.visible.get("norm_before_residual", False)
        )

    def _embedding_if_missing(self, H: int, T: int, head_from_target: bool) -> str:
        return SHARED

    def _head(self, V: int | None, Vd: int | None, head_from_target: bool) -> Built:
        shared = self.value("lm_head_shared_when_missing")
        return Built(SHARED if shared else UNINITIALISED, self.src("lm_head_shared_when_missing"))

    def _d2t(self, V: int | None, Vd: int | None, reduced: bool) -> None:
        Vt = self.target.vocab_size if self.target else None
        d2t_rule = self.value("d2t_parameter")
        d2t_exists = d2t_rule == "always" or (
            d2t_rule == "when-reduced" and (Vd != (Vt if Vt is not None else V))
        )
        self.view.effective["d2t_parameter"] = d2t_exists
        if d2t_exists:
            d2t = shapes.d2t(Vd, unknown_mismatches=True)
            self._expect("d2t", d2t, None, self.src("d2t_parameter"))
        if reduced and "d2t" in self.spec.tensors and not self.value("d2t_loaded"):
            self.event(
                rule_ids.D2T_IGNORED_BY_ENGINE,
                f"{self.p.title} drops the stored `d2t` (it looks for the name after renaming "
                "it), so draft token i is proposed as target token i",
                Location(None, tensor=self.spec.raw("d2t")),
                ("d2t_loaded",),
                fix="use vLLM 0.9.1 or later",
            )

    def _after_eagle3(self) -> None:
        self.view.effective["max_position_raised"] = bool(self.value("max_position_raised"))
        self._quantized_parameters()
        self._head_share_check()

    def _head_share_check(self) -> None:
        """Whether the V2 model runner's lm_head sharing check fails on the draft's own
        quantized head (:mod:`.head_share`)."""
        q = read_draft_quant(self.config)
        if q is None:
            return
        event = head_share_event(self.p, q, self.spec.tensors, self.spec.raw, self._runner())
        if event is not None:
            self.view.add(event)

    # ------------------------------------------------------------------ quantized drafts
    def _quantized_parameters(self) -> None:
        """The parameters a quantized draft's linear layers register, when this version builds
        the draft with the draft's own `quantization_config` (`get_draft_quant_config`) and
        draftfit knows the scheme's parameters: `weight_scale`, `input_scale`, ... beside
        `weight`, or `weight_packed` instead of it. Their shapes are not checked."""
        q = read_draft_quant(self.config)
        if q is None:
            return
        self.view.effective["draft_quantization"] = q.method
        if self.value("draft_quant_config_source") != "draft":
            return
        if q.method not in (self.value("draft_quant_methods") or []) or q.scheme is None:
            return
        params: list[str] = (self.value("compressed_tensors_params") or {}).get(q.scheme) or []
        if not params:
            return
        lm_head = bool(self.value("draft_quant_lm_head"))
        citations = self.src("draft_quant_config_source", "draft_quant_methods")
        citations += self.src("compressed_tensors_params")
        add_quantized_parameters(
            self.view, q, params, lambda module: _is_quantizable(module, lm_head), citations
        )
        self.view.effective["draft_quantization_scheme"] = q.scheme

    def _quant_rejection(self, canonical: str, q: DraftQuant) -> tuple[str, str, tuple[str, ...]]:
        """Why this version has no parameter for a quantization tensor of a quantized draft,
        the fix right for this version, and the source lines."""
        suffix = canonical.rsplit(".", 1)[-1]
        module = canonical.rsplit(".", 1)[0]
        own = self._first_release("draft_quant_config_source", "draft")
        head = self._first_release("draft_quant_lm_head", True)
        if self.value("draft_quant_config_source") == "none":
            return (
                f"{self.p.title} builds the draft's decoder layers without a quantization "
                "config (unquantized; the draft's own `quantization_config` is read from "
                f"vLLM {own} on), so there is no `{suffix}` parameter",
                f"serve with vLLM >= {own}"
                + (f" (>= {head}: lm_head is quantized)" if head and q.covers("lm_head") else "")
                + ", or store the draft dequantized (bf16)",
                self.src("draft_quant_config_source"),
            )
        if self.value("draft_quant_config_source") != "draft":
            return (
                f"{self.p.title} builds the draft's layers with the target's quantization "
                "config, not the draft's own `quantization_config` (read for drafts from "
                f"vLLM {own} on), so there is no `{suffix}` parameter (the target's scheme "
                "would have to match the draft's; an unquantized target builds none)",
                f"serve with vLLM >= {own}"
                + (f" (>= {head}: lm_head is quantized)" if head and q.covers("lm_head") else "")
                + ", or store the draft dequantized (bf16)",
                self.src("draft_quant_config_source"),
            )
        if module == "lm_head" and not self.value("draft_quant_lm_head"):
            return (
                f"{self.p.title} builds the draft's lm_head unquantized (a compressed-tensors "
                f"lm_head is quantized from vLLM {head} on), so there is no `{suffix}` parameter",
                f"serve with vLLM >= {head}, or keep lm_head unquantized (list it in "
                "`quantization_config.ignore`)",
                self.src("draft_quant_lm_head"),
            )
        if q.method not in (self.value("draft_quant_methods") or []) or q.scheme is None:
            return (
                f"draftfit has no record of the parameters {self.p.title} builds for this "
                f"`quant_method` ({q.method}) and scheme, so it cannot say the `{suffix}` "
                "tensor loads",
                "check that this vLLM release supports the draft's quantization scheme",
                self.src("draft_quant_methods", "compressed_tensors_params"),
            )
        if module == "lm_head" and q.all_linear and "lm_head" not in q.ignore:
            return (
                f"{self.p.title} quantizes only the layers the draft's `quantization_config` "
                "targets, and its `Linear` target matches the engine's linear layer classes, "
                f"not its `ParallelLMHead`: lm_head is built unquantized, so there is no "
                f"`{suffix}` parameter",
                'name lm_head in the scheme\'s `targets` (e.g. ["Linear", "lm_head"]), or store '
                "lm_head unquantized and list it in `ignore`",
                self.src("draft_quant_lm_head", "draft_quant_methods"),
            )
        return (
            f"the draft's `quantization_config` leaves `{module}` unquantized (not targeted, "
            f"or in `ignore`), so it has no `{suffix}` parameter",
            f"remove `{module}` from `quantization_config.ignore`, or store it unquantized",
            self.src("draft_quant_config_source", "compressed_tensors_params"),
        )

    def _first_release(self, key: str, value: object) -> str | None:
        """The first release where fact `key` has `value`, from the data."""
        fact = self.p.data.facts.get(key)
        if fact is None:
            return None
        for entry in fact.entries:
            if entry.value == value and entry.since is not None:
                return str(entry.since)
        return None

    def _flag_visible(self, name: str) -> bool:
        """Whether a norm flag is on *and* this version implements it."""
        value = self.visible.get(name)
        nested = None
        ec = self.visible.get("eagle_config")
        if (
            isinstance(ec, dict)
            and name == "norm_before_fc"
            and self.value("norm_before_fc_nested")
        ):
            nested = ec.get(name)
        on = bool(nested) if nested is not None else bool(value)
        return on and bool(self.value(f"{name}_supported"))

    def _runner_from_env(self) -> tuple[str, str] | None:
        """The runner `VLLM_USE_V2_MODEL_RUNNER` in the launch picks, in the releases that
        read it (RUNNER_ENV_RELEASES) and whose V2 runner draftfit has data for; else None."""
        serve = self.inputs.serve
        wanted = serve.use_v2_model_runner if serve is not None else None
        if wanted is None or not self.p.fact("aux_ids_read_from_mrv2").known:
            return None
        from packaging.version import Version  # only where the launch sets the variable

        first, until = RUNNER_ENV_RELEASES
        if not Version(first) <= Version(self.p.version) < Version(until):
            return None
        runner = "mrv2" if wanted else "mrv1"
        return runner, (
            f"VLLM_USE_V2_MODEL_RUNNER={int(wanted)} makes {self.p.title} use its "
            f"{_RUNNER_NAMES[runner]}"
        )

    def _runner(self) -> tuple[str | None, str]:
        """Which model runner serves this target: "mrv1", "mrv2", or None when unknown.

        vLLM has two runners that read aux ids from different keys; which one runs depends
        on the version and, in 0.22-0.28, on the target's architecture (`runner_default`);
        a launch with pipeline stages runs EAGLE-3 on the V1 runner where the newer one
        declines it (`aux_states_over_pp` 'dropped').
        """
        rule = self.value("runner_default")
        serve = self.inputs.serve
        staged = serve is not None and (serve.pipeline_parallel_size or 1) > 1
        if staged and self.method == EAGLE3 and self.value("aux_states_over_pp") == "dropped":
            # the newer runner declines EAGLE-3 with pipeline stages (`aux_states_over_pp`)
            return "mrv1", (
                f"{self.p.title} serves EAGLE-3 with pipeline stages on its V1 model runner"
            )
        chosen = self._runner_from_env()
        if chosen is not None:
            return chosen
        if rule in ("mrv1", "mrv2"):
            return rule, f"{self.p.title} always uses its {_RUNNER_NAMES[rule]}"
        if not isinstance(rule, dict) or self.target is None:
            return None, "the model runner depends on the target"
        arch = self.target.architecture or ""
        moe, quantized = (
            target_is_moe(self.target),
            "quantization_config" in self.target.text_config
            or "quantization_config" in self.target.config,
        )
        v2 = arch in rule.get("archs", [])
        if rule.get("dense_only") and moe:
            v2 = False
        if rule.get("unquantized_only") and quantized:
            v2 = False
        if rule.get("or_dense") and not moe:
            v2 = True
        runner = "mrv2" if v2 else "mrv1"
        return runner, f"{self.p.title} serves a `{arch}` target with its {_RUNNER_NAMES[runner]}"

    def _aux_capture(self, n_aux: int, count_from: str, use_aux: bool) -> None:
        runner, why = self._runner()
        if runner is None:
            # Without knowing the runner, use the keys both runners read.
            k1 = self.value("aux_ids_read_from_mrv1") or []
            k2 = self.value("aux_ids_read_from_mrv2") or []
            keys = [k for k in k1 if k in k2] if self.p.fact("aux_ids_read_from_mrv2").known else k1
        else:
            keys = self.value(f"aux_ids_read_from_{runner}") or []
        self.view.effective["runner"] = runner
        self.view.effective["runner_reason"] = why
        read_from = None
        ids = None
        for key in keys:
            value = get_path(self.visible, key)
            if isinstance(value, list) and value and all(isinstance(i, int) for i in value):
                ids = tuple(value)
                read_from = "/" + key.replace(".", "/")
                break
        L = self.target.num_layers if self.target else None
        if ids is None and L is not None:
            ids = default_capture_ids(L)
        dedupes = bool(self.value("aux_ids_dedupe"))
        if ids is not None and dedupes:
            ids = tuple(sorted(set(ids)))
        rng = self.value("aux_ids_valid_range")
        valid = None
        range_sources: tuple[str, ...] = ()
        range_note = ""
        if L is not None and isinstance(rng, list):
            valid = (rng[0], L + rng[1])
            valid, range_sources, range_note = self._backbone_range(valid, L, ids or ())
        key_fact = f"aux_ids_read_from_{runner or 'mrv1'}"
        self.view.aux = AuxCapture(
            used=ids,
            read_from=read_from,
            keys_read=tuple("/" + k.replace(".", "/") for k in keys),
            expected_count=n_aux if use_aux else None,
            count_from=count_from,
            valid_range=valid,
            citations=range_sources + self.src(key_fact, "runner_default"),
            range_note=range_note,
            dedupes=dedupes,
            runner_note=why,
            read_convention="capture-before",
            write_pointer=_write_pointer(keys),
            encode=lambda ids: tuple(ids),
        )

    def _backbone_range(
        self, valid: tuple[int, int], L: int, ids: tuple[int, ...]
    ) -> tuple[tuple[int, int], tuple[str, ...], str]:
        """Narrow the capturable ids for targets whose backbone captures less than the Llama
        one: no id L before the final-layer capture (deepseek_v2 before 0.25.0), no id 0
        where the residual is still None before layer 0. Returns the range, and for the
        used `ids` it excludes the citations behind the narrowing and a note saying why."""
        arch = self.target.architecture if self.target else None
        if arch is None:
            return valid, (), ""
        low, high = valid
        citations: tuple[str, ...] = ()
        notes: list[str] = []
        if arch in (self.value("aux_first_layer_not_captured") or []) and low < 1:
            low = 1
        if low == 1 and 0 in ids and valid[0] < 1:
            citations += self.p.item_sources("aux_first_layer_not_captured", arch)
            notes.append(
                f"`{arch}` adds the residual to the state before each layer, and before "
                "layer 0 there is none, so id 0 fails"
            )
        if arch in (self.value("aux_final_layer_not_captured") or []) and high >= L:
            high = L - 1
        if high == L - 1 and L in ids and valid[1] >= L:
            citations += self.p.item_sources("aux_final_layer_not_captured", arch)
            fixed = self._first_release_without("aux_final_layer_not_captured", arch)
            notes.append(
                f"`{arch}` captures only the input of each layer in {self.p.title}, not the "
                f"output of the last one (id {L})"
                + (f"; vLLM {fixed} and later capture it" if fixed else "")
            )
        return (low, high), citations, "; ".join(notes)

    def _first_release_without(self, key: str, value: object) -> str | None:
        """The release where set item `value` of fact `key` stops applying (its `until`)."""
        fact = self.p.data.facts.get(key)
        if fact is None:
            return None
        untils = [e.until for e in fact.entries if e.value == value and e.until is not None]
        return str(max(untils)) if untils else None

    def _sliding_window_advice(self, size: int, how: Any) -> tuple[str, str]:
        """vLLM applies a draft's window from the release its class family reads it."""
        family = self.family

        def honours(later: Profile) -> bool:
            value = later.value(WINDOW_FACT)
            return isinstance(value, dict) and value.get(family, value.get("*")) is True

        first = first_release_where(self.p, honours)
        why = f"does not apply it to `{self.view.draft_class}`: {IGNORED_WINDOW}"
        if how == "index-error":
            why = (
                "indexes the draft's `layer_types` with the target-wide layer number: "
                "IndexError while building the draft"
            )
        if first is None:
            return why, (
                "no vLLM release read applies a sliding window to this draft class; expect "
                f"lower acceptance on prompts longer than {size} tokens"
            )
        return why, f"use vLLM {first} or later, which applies the draft's window"

    def _flags(self, norms: dict[str, bool]) -> None:
        """Norm flags the checkpoint sets but this version ignores or defaults differently."""
        cfg = self.config
        base = ""
        for name in ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_output"):
            raw = cfg.get(name)
            if raw is None and self.route != "speculators":
                raw = self.visible.get(name)
            nested = None
            ec = cfg.get("eagle_config")
            if isinstance(ec, dict) and name in ec:
                nested = ec.get(name)
            on = bool(raw) or bool(nested)
            if not on:
                continue
            supported = self.value(f"{name}_supported")
            copied = True
            if self.route == "speculators":
                copied = name in (self.value("speculators_copied_fields") or [])
            if not supported or not copied:
                where = f"{base}/{name}" if raw else f"/eagle_config/{name}"
                self.event(
                    rule_ids.NORM_FLAG_IGNORED,
                    f"`{name}` is true, but {self.p.title} "
                    + (
                        "does not implement it"
                        if not supported
                        else "does not copy it from speculators configs"
                    )
                    + ": the draft runs without the norm it was trained with",
                    config_at(where),
                    (f"{name}_supported",)
                    + (("speculators_copied_fields",) if self.route == "speculators" else ()),
                    fix="use a vLLM version that implements it",
                )
        if self.route == "speculators" and "norm_before_residual_defaulted" in self.view.effective:
            default = self.view.effective["norm_before_residual_defaulted"]
            self.event(
                rule_ids.NORM_BEFORE_RESIDUAL_DEFAULT,
                f"`norm_before_residual` is not written; vLLM's speculators adaptor defaults it to "
                f"`{str(default).lower()}`, while the speculators library's own default is `false`",
                config_at("/norm_before_residual"),
                ("speculators_norm_before_residual_default",),
                fix="write `norm_before_residual` explicitly with the value used in training",
            )

    # ------------------------------------------------------------------ EAGLE-1 shapes
    def _eagle1(self) -> None:
        H, V = self._eagle1_layers(self.src("eagle_weight_mapping"))
        embedding = shapes.embedding(V, H, values=False)
        self._expect("embed_tokens.weight", embedding, SHARED, self.src("embedding_sharing"))
        self._quantized_parameters()

    # ------------------------------------------------------------------ tensor fates
    def _fixed_fate(self, raw: str) -> bool:
        skip = self.value("skipped_tensor_names") or []
        canonical = _vllm_canonical(raw)
        if raw not in skip and canonical not in skip:
            return False
        self._fate(
            raw,
            canonical,
            "skipped",
            "always skipped by the loader",
            self.src("skipped_tensor_names"),
            cause=FateCause.SKIPPED_BY_LOADER,
        )
        return True

    def _engine_name(self, raw: str) -> Mapped:
        if raw.startswith("model.") and "lm_head" not in raw:
            return Mapped(
                None,
                f"vLLM prepends `model.` to every name, so `{raw}` becomes `model.{raw}`",
                FateCause.PREFIX_ADDED,
            )
        return Mapped(_vllm_canonical(raw))

    def _unmatched(self, raw: str, mapped: Mapped) -> None:
        """vLLM rejects every name that reaches no parameter, except those it drops on
        purpose: flag-gated parameters and (in some versions) stray biases."""
        canonical = _vllm_canonical(raw)
        if mapped.cause is FateCause.PREFIX_ADDED:
            mapping = (
                "eagle3_weight_mapping" if self.family != LLAMA_EAGLE else "eagle_weight_mapping"
            )
            self._fate(
                raw, canonical, "rejected", mapped.why, self.src(mapping), cause=mapped.cause
            )
            return
        gated = self._flag_gated(canonical)
        if gated:
            self._fate(
                raw,
                canonical,
                "skipped",
                gated,
                self.src("flag_gated_tensors"),
                cause=FateCause.NOT_BUILT,
            )
            return
        if canonical.endswith(".bias") and self.value("stray_bias_policy") == "ignored":
            self._fate(
                raw,
                canonical,
                "skipped",
                "the draft has no such bias parameter; the loader drops unknown `.bias` "
                "tensors silently",
                self.src("stray_bias_policy"),
                cause=FateCause.STRAY_BIAS,
            )
            return
        if canonical == "d2t" and self.family != LLAMA_EAGLE:
            self._fate(
                raw,
                canonical,
                "rejected",
                "the draft has no `draft_id_to_target_id` parameter when the draft "
                "vocabulary equals the target's",
                self.src("d2t_parameter"),
                cause=FateCause.NOT_BUILT,
            )
            return
        q = read_draft_quant(self.config)
        if q is not None and quant_suffix(canonical) is not None:
            reason, fix, citations = self._quant_rejection(canonical, q)
            self._fate(raw, canonical, "rejected", reason, citations, cause=mapped.cause, fix=fix)
            return
        reason, cause = "no parameter of the draft class has this name", mapped.cause
        n = self._layer_beyond(canonical)
        if n is not None:
            reason = (
                f"the draft builds {n} decoder layer(s) (`num_hidden_layers`"
                + ("" if self.value("multi_layer_drafts") else " is ignored: one layer only")
                + ")"
            )
            cause = FateCause.EXTRA_LAYER
        elif re.match(r"^layers\.\d+\.\d+\.", canonical):
            reason = (
                "`midlayer.` is replaced by `layers.0.` as a substring, so a multi-layer "
                "`midlayer.N.*` name becomes `layers.0.N.*`"
            )
            cause = FateCause.RENAMED
        self._fate(
            raw, canonical, "rejected", reason, self.src("unknown_tensor_policy"), cause=cause
        )

    def _flag_gated(self, canonical: str) -> str | None:
        """Why the loader drops a tensor whose parameter a config flag switched off."""
        if not self.p.fact("flag_gated_tensors").known or self.method != EAGLE3:
            return None
        if canonical.startswith("input_norm.") and not self._flag_visible("norm_before_fc"):
            return "`norm_before_fc` is off, so the loader drops `input_norm.*` silently"
        if canonical.startswith("fc.") and self.view.effective.get("use_aux_hidden_state") is False:
            return "`eagle_config.use_aux_hidden_state` is false, so there is no `fc`"
        return None

    # ------------------------------------------------------------------ target
    def _target_checks(self) -> None:
        t = self.target
        if t is None:
            return
        self._target_rotation()
        self._target_quantization(t)
        if self.method == EAGLE3:
            self._target_capable()
        self._target_width_checks(
            eagle1=self.family == LLAMA_EAGLE,
            embedding_shared="embed_tokens.weight" not in self.spec.tensors,
        )
        max_pos = self.vint("max_position_embeddings")
        t_max = t._int("max_position_embeddings")
        serve = self.inputs.serve
        asked = serve.context_length if serve is not None else None
        if asked is not None and max_pos and 0 < asked <= max_pos:
            t_max = None  # `--max-model-len` keeps prompts within the draft's positions
        if max_pos and t_max and max_pos < t_max and not self.value("max_position_raised"):
            self.event(
                rule_ids.DRAFT_CONTEXT_SHORTER_THAN_TARGET,
                f"the draft's max_position_embeddings is {max_pos}, the target's {t_max}: "
                f"{self.p.title} sizes the draft's rotary cache from the draft config, so prompts "
                f"longer than {max_pos} tokens draft garbage or fail",
                config_at(f"{self.spec.layer_config_pointer}/max_position_embeddings"),
                ("max_position_raised",),
                fix=f"set max_position_embeddings to {t_max} (or cap --max-model-len)",
            )
        if self.family not in self.mla_families:
            for event in kv_geometry_events(
                self.p, self.visible, t, self.spec.layer_config_pointer
            ):
                self.view.add(event)

    def _rotation_advice(self, compensated: str, rotation: Rotation) -> tuple[str, str] | None:
        """vLLM serves ModelSlim checkpoints only through the vllm-ascend plugin, whose
        releases from v0.16.0rc1 on anti-rotate an EAGLE-3 draft on load when the target's
        description names the rotation file."""
        plugin = self._first_release("draft_rotation_compensated", "ascend-plugin")
        trained = "use a draft trained on the rotated target"
        if compensated == "ascend-plugin":
            if self.method == EAGLE3 and rotation.rotation_map is not None:
                return None
            if self.method != EAGLE3:
                return (
                    f"the vllm-ascend release for {self.p.title} anti-rotates EAGLE-3 drafts "
                    "only, so for this EAGLE-1 draft it, like upstream vLLM,",
                    f"use an EAGLE-3 draft, or {trained}",
                )
            return (
                f"the vllm-ascend release for {self.p.title} anti-rotates the draft only when "
                f"`{DESCRIPTION_FILE}` names the rotation file "
                "(`optional.quarot.rotation_map.global_rotation`); it does not here, so the "
                "plugin, like upstream vLLM,",
                "re-export the target with msModelSlim's QuaRot `export_extra_info: true` (it "
                f"writes `{ROTATION_FILE}` and names it), or {trained}",
            )
        fix = trained
        if plugin is not None and self.method == EAGLE3:
            fix = (
                f"serve with vLLM {plugin} or later and the vllm-ascend release of the same "
                "number, which anti-rotates the draft's `fc` (and a borrowed embedding) on load"
                + (
                    ""
                    if rotation.rotation_map is not None
                    else " once the target is re-exported with msModelSlim's QuaRot "
                    f"`export_extra_info: true` (it writes `{ROTATION_FILE}` and names it)"
                )
                + f"; or {trained}"
            )
        return (f"{self.p.title} (upstream, and the vllm-ascend release of the same number)", fix)

    def _target_quantization(self, t: Target) -> None:
        """A quantized target next to an unquantized draft on a version that builds the
        draft's decoder layers with the target's quantization config (vLLM 0.11.0): what
        the target's method makes of the draft's weights (data: `target_quant_in_draft`)."""
        if self.value("draft_quant_config_source") != "target":
            return
        if read_draft_quant(self.config) is not None:
            return
        found = t.quantization
        if found is None:
            return
        qc, pointer = found
        method = qc.get("quant_method")
        method = method if isinstance(method, str) else None
        key = method.lower() if method else None
        shown = f"`{method}`" if method else "a `quantization_config` without `quant_method`"
        if key == "compressed-tensors":
            scheme = read_draft_quant({"quantization_config": qc})
            if scheme is not None and not _covers_decoder(scheme):
                return
            key = f"compressed-tensors:{scheme.scheme}" if scheme and scheme.scheme else None
            shown += f", {scheme.scheme} scheme" if scheme and scheme.scheme else ""
        outcomes = self.value("target_quant_in_draft") or {}
        outcome = outcomes.get(key) if key else None
        own = self._first_release("draft_quant_config_source", "draft")
        fix = f"serve with vLLM {own} or later, which builds the draft with its own (absent) " + (
            "quantization config"
        )
        where = target_config_at(f"{pointer}/quant_method" if method else pointer)
        keys = ("draft_quant_config_source", "target_quant_in_draft")
        built = (
            f"the target is quantized ({shown}) and the draft is not: {self.p.title} builds "
            "the draft's decoder layers with the target's quantization config"
        )
        if outcome is None:
            self.event(
                rule_ids.TARGET_QUANTIZATION_NOT_MODELLED,
                f"{built}; draftfit has no record of what that method makes of an "
                "unquantized draft's weights",
                where,
                keys,
                fix=fix,
            )
            return
        example = next(
            (n for n in self.spec.tensors if n.endswith("_proj.weight")), "*_proj.weight"
        )
        consequence = Consequence.REFUSES_TO_START
        if outcome == "no-weight":
            fused = re.sub(r"\.[qkv]_proj\.", ".qkv_proj.", example)
            fused = re.sub(r"\.(gate|up)_proj\.", ".gate_up_proj.", fused)
            what = (
                "whose layers hold packed weights (`qweight` / `weight_packed`) and no "
                f"`weight`, so loading the draft's `{example}` fails at start-up with "
                f"KeyError: '{fused}'"
            )
        else:
            what = (
                "whose layers take the draft's weights in the quantized dtype beside scales "
                "the draft does not store, left at their initial values: the loader does not "
                "notice, and the draft's proposals are garbage (acceptance near zero, no error)"
            )
            consequence = Consequence.DRAFTS_GARBAGE
        self.event(
            rule_ids.DRAFT_BUILT_WITH_TARGET_QUANTIZATION,
            f"{built}, {what}",
            where,
            keys,
            fix=fix,
            consequence=consequence,
        )

    def _target_capable(self) -> None:
        t = self.target
        assert t is not None
        if self.value("verifier_allow_list_enforced"):
            allowed = self.value("verifier_allow_list") or []
            model_type = t.model_type or ""
            if not any(sub in model_type for sub in allowed):
                self.refuse(
                    rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
                    f"the target's model_type `{model_type}` contains none of "
                    + ", ".join(f"`{a}`" for a in allowed)
                    + f": {self.p.title} refuses EAGLE-3 for it",
                    target_config_at(t.pointer("model_type")),
                    ("verifier_allow_list", "verifier_allow_list_enforced"),
                    fix="use a vLLM version that supports this target family",
                )
                return
        arch = t.architecture
        if arch is None:
            return
        classes = self.value("verifier_eagle3_classes") or []
        if arch in classes:
            return
        unknown_before = self.value("verifier_eagle3_unknown_before") or []
        known_no = arch in (self.value("verifier_not_eagle3_classes") or [])
        if arch in unknown_before or (not known_no and not self._ever_listed(arch)):
            self.event(
                rule_ids.TARGET_CAPABILITY_UNKNOWN,
                f"draftfit has no record of whether `{arch}` implements vLLM's EAGLE-3 "
                f"interface in {self.p.title}"
                + (" (it does from a later release on)" if arch in unknown_before else ""),
                target_config_at("/architectures/0"),
                ("verifier_eagle3_classes", "verifier_eagle3_unknown_before"),
                fix="check the target's model class in this vLLM release for SupportsEagle3",
            )
            return
        self.refuse(
            rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
            f"the target class `{arch}` does not implement vLLM's EAGLE-3 interface "
            f"(SupportsEagle3) in {self.p.title}, so it cannot return aux hidden states",
            target_config_at("/architectures/0"),
            ("verifier_eagle3_classes",) + (("verifier_not_eagle3_classes",) if known_no else ()),
            fix="use a vLLM version whose target class supports EAGLE-3, or EAGLE-1",
        )


# ---------------------------------------------------------------------- module helpers


def _vllm_canonical(raw: str) -> str:
    """vLLM's own renaming: `midlayer.` -> `layers.0.` as a substring (data:
    `eagle3_weight_mapping`, vllm/model_executor/models/llama_eagle3.py:224-229@v0.8.5)."""
    return raw.replace("midlayer.", "layers.0.", 1) if "midlayer." in raw else raw


def _is_quantizable(module: str, lm_head: bool) -> bool:
    """Whether the draft builds `module` as a linear layer with its quantization config:
    the decoder projections, `fc`, and `lm_head` where the version passes the config."""
    if module == "lm_head":
        return lm_head
    return module == "fc" or module.endswith("_proj")


def _write_pointer(keys: list[str]) -> str | None:
    """Where to write aux ids so this version reads them: the top-level key when it is read."""
    if "eagle_aux_hidden_state_layer_ids" in keys:
        return TOP_AUX
    return "/" + keys[0].replace(".", "/") if keys else None


def _speculators_structure_problem(cfg: Mapping[str, Any], p: Profile) -> tuple[str, str] | None:
    sc = cfg.get("speculators_config")
    if not isinstance(sc, dict):
        return "/speculators_config", "`speculators_config` is missing or not an object"
    methods = sc.get("proposal_methods")
    if not isinstance(methods, list) or not methods:
        return (
            "/speculators_config/proposal_methods",
            "`speculators_config.proposal_methods` is missing or empty",
        )
    if not isinstance(methods[0], dict) or "speculative_tokens" not in methods[0]:
        return (
            "/speculators_config/proposal_methods/0",
            "the first proposal method has no `speculative_tokens`",
        )
    verifier = sc.get("verifier")
    if not isinstance(verifier, dict) or "name_or_path" not in verifier:
        return (
            "/speculators_config/verifier",
            "`speculators_config.verifier.name_or_path` is missing",
        )
    return None


def _suggest_architecture(method: str | None, registered: list[str]) -> str | None:
    for preferred in ("LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "EagleLlamaForCausalLM"):
        if preferred in registered:
            if method == EAGLE and "Eagle3" in preferred:
                continue
            if method == EAGLE3 and "Eagle3" not in preferred:
                continue
            return preferred
    return None


Builder = _Builder


# Decoder projections every EAGLE draft builds, as draftfit names them (`DraftQuant.covers`).
_DECODER_PROJECTIONS = (
    "layers.0.self_attn.q_proj",
    "layers.0.self_attn.o_proj",
    "layers.0.mlp.gate_proj",
    "layers.0.mlp.down_proj",
)


def _covers_decoder(q: DraftQuant) -> bool:
    """Whether a compressed-tensors config quantizes the draft's decoder projections."""
    return q.all_linear or any(q.covers(m) for m in _DECODER_PROJECTIONS)
