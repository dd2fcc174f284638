"""What SGLang builds from a draft checkpoint at one version (EAGLE-3 and EAGLE-1).

SGLang's procedure, as read from every release wheel 0.4.4-0.5.23 (`dev/sglang-trtllm-
procedure.md` walks through it): the method comes from `--speculative-algorithm`, the draft
config goes through transformers as is (no speculators reader), `architectures[0]` picks the
class with no rewrite, the decoder layer is `midlayer` before 0.5.12 and `layers.{i}` after,
unknown tensor names are skipped silently from 0.4.9, and the TARGET runner reads aux ids
only from `eagle_config.eagle_aux_hidden_state_layer_ids`, adding 1 (with per-target
exceptions). Every version-dependent value comes from `data/sglang.toml`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.draft.aux_counting import default_capture_ids
from draftfit.draft.description import EAGLE, EAGLE3
from draftfit.draft.dialects import is_eagle4_architecture, non_eagle_kind
from draftfit.draft.target import Target
from draftfit.draft.target_rotation import Rotation
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
    get_path,
)
from draftfit.engines.draft_quant import (
    ONLINE_QUANTIZATION,
    add_quantized_parameters,
    quant_suffix,
    read_draft_quant,
)
from draftfit.engines.profile import Profile
from draftfit.engines.serve import first_release_where
from draftfit.engines.view import (
    FAILS,
    SHARED,
    UNINITIALISED,
    AuxCapture,
    Event,
    FateCause,
)
from draftfit.location import Location, config_at, target_config_at
from draftfit.rule_ids import Consequence
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from typing import Any

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
    rule_ids.MISSING_ARCHITECTURES,
    rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
    rule_ids.METHOD_MISMATCH,
    rule_ids.METHOD_UNSUPPORTED,
    rule_ids.MISSING_DRAFT_VOCAB_SIZE,
    rule_ids.MISSING_CONFIG_FIELD,
    rule_ids.UNSUPPORTED_ACTIVATION,
    rule_ids.MULTI_LAYER_DRAFT_UNSUPPORTED,
    rule_ids.DRAFT_KV_LAYER_COUNT,
    rule_ids.AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS,
    rule_ids.LM_HEAD_MISSING_REDUCED_VOCAB,
    rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
    rule_ids.DRAFT_CONTEXT_SHORTER_THAN_TARGET,
    rule_ids.TARGET_CAPABILITY_UNKNOWN,
    rule_ids.DRAFT_CONTEXT_REFUSED,
    rule_ids.DRAFT_INHERITS_TARGET_QUANTIZATION,
    rule_ids.NORM_FLAG_IGNORED,
)
EMITS_STAGE = "engine procedure: SGLang's steps"

# How an EAGLE-4 draft is served: only through the eagle-harness plugin (its documentation:
# eagle-hq/EAGLE-4 docs/architecture.md), never by renaming its architecture.
EAGLE4_SERVING = (
    "install the eagle-harness plugin and launch with `--speculative-algorithm "
    "EAGLE_HARNESS` (an EAGLE-4 draft is not an EAGLE-3 draft: renaming its architecture does "
    "not make SGLang load it)"
)

LLAMA_EAGLE3 = "llama_eagle3"
MLA_EAGLE3 = "mla_eagle3"
LLAMA_EAGLE = "llama_eagle"
# The server flag that gives a Llama EAGLE-3 draft a sliding window (the recipe in
# `sglang.engine` passes it; it imports this module, so the name is spelled in both).
DRAFT_WINDOW_FLAG = "--speculative-draft-window-size"
AUTOTUNE_FLAG = "--disable-flashinfer-autotune"

CLASS_FAMILY = {
    "LlamaForCausalLMEagle3": LLAMA_EAGLE3,
    "Eagle3DeepseekV2ForCausalLM": MLA_EAGLE3,
    "LlamaForCausalLMEagle": LLAMA_EAGLE,
    "Qwen2ForCausalLMEagle": LLAMA_EAGLE,
}
NESTED_IDS_POINTER = "/eagle_config/eagle_aux_hidden_state_layer_ids"
_STACKED = re.compile(r"\.(q_proj|k_proj|v_proj|gate_proj|up_proj)\.")


class _SGLangBuilder(BaseBuilder):
    eagle1_families = frozenset({LLAMA_EAGLE})
    eagle3_families = frozenset({LLAMA_EAGLE3, MLA_EAGLE3})
    mla_families = frozenset({MLA_EAGLE3})

    # ------------------------------------------------------------------ method

    def check_launch(self, settings: ServeSettings) -> None:
        from draftfit.engines.sglang.launch_checks import check_settings

        check_settings(self, settings)

    def _method_matches(self) -> bool:
        if self.spec.method is None or self.spec.method == self.method:
            return True
        assert self.method is not None
        worker = self._algorithm(self.method)
        serve = self.inputs.serve
        named = (serve.method or "").strip().upper() if serve is not None else ""
        # an alias (NEXTN) is named as written, with the worker it runs
        alias = f" (SGLang's {worker} worker)" if named and named != worker else ""
        self.refuse(
            rule_ids.METHOD_MISMATCH,
            f"the checkpoint is an {self.spec.method} draft, but it is served with "
            f"`--speculative-algorithm {named if alias else worker}`{alias}: SGLang runs the "
            "wrong speculative worker for it",
            Location(CONFIG, "/architectures"),
            ("algorithm_names",),
            fix=f"serve it with --speculative-algorithm {self._algorithm(self.spec.method)}",
        )
        return False

    def _no_draft_class(self) -> None:
        """No draft class resolves, but the target checks need none: report them too."""
        self.family = LLAMA_EAGLE if self.method == EAGLE else LLAMA_EAGLE3
        self._target_checks()

    @staticmethod
    def _algorithm(method: str) -> str:
        return "EAGLE3" if method == EAGLE3 else "EAGLE"

    def _method_supported(self) -> bool:
        key = "eagle3_supported" if self.method == EAGLE3 else "eagle_supported"
        if self.value(key):
            return True
        self.refuse(
            rule_ids.METHOD_UNSUPPORTED,
            f"{self.p.title} has no `--speculative-algorithm "
            f"{self._algorithm(self.method or EAGLE3)}`",
            Location(CONFIG),
            (key,),
            fix="use SGLang 0.4.4.post2 or later",
        )
        return False

    # ------------------------------------------------------------------ config
    def _resolve_class(self) -> str | None:
        if not self._config_route():
            return None
        return self._draft_class()

    def _family(self, arch: str) -> str:
        return CLASS_FAMILY[arch]

    def _config_route(self) -> bool:
        cfg = self.config
        if "speculators_config" in cfg or "speculators_model_type" in cfg:
            self.refuse(
                rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
                f"{self.p.title} parses the draft config with transformers as is and does not "
                "understand speculators-format configs (`speculators_config`, "
                "`transformer_layer_config`)",
                config_at("/speculators_model_type"),
                ("speculators_format",),
                fix="rewrite it as a plain config: `draftfit convert DRAFT --to sglang -o OUT`",
            )
            return False
        self.visible = dict(cfg)
        if "model_type" not in cfg:
            self.refuse(
                rule_ids.MISSING_CONFIG_FIELD,
                "the draft config has no `model_type`: SGLang loads it with transformers' "
                "AutoConfig, which needs one",
                config_at("/model_type"),
                ("draft_config_loader",),
                fix='add "model_type": "llama" (for MLA drafts, the target\'s model_type)',
            )
            return False
        return True

    def _draft_class(self) -> str | None:
        archs = self.config.get("architectures")
        if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
            self.refuse(
                rule_ids.MISSING_ARCHITECTURES,
                f"`architectures` is missing or empty: {self.p.title} picks the draft class "
                "from `architectures[0]` and fails building the draft's model config "
                "(TypeError on None, IndexError on an empty list)",
                config_at("/architectures"),
                ("missing_architectures",),
                fix='set "architectures": ["LlamaForCausalLMEagle3"] (EAGLE-3) or '
                '["LlamaForCausalLMEagle"] (EAGLE-1)',
            )
            return None
        arch = archs[0]
        key = "eagle3_draft_architectures" if self.method == EAGLE3 else "eagle_draft_architectures"
        registered = [a for a in (self.value(key) or []) if a in CLASS_FAMILY]
        if arch in registered:
            return arch
        mla = bool(self.visible.get("kv_lora_rank"))
        if self.method == EAGLE3:
            want = "Eagle3DeepseekV2ForCausalLM" if mla else "LlamaForCausalLMEagle3"
        else:
            want = "LlamaForCausalLMEagle"
        if arch in (self.value("eagle_draft_architectures") or []) + (
            self.value("eagle3_draft_architectures") or []
        ):
            why = (
                f"`{arch}` is SGLang's "
                + ("EAGLE-1" if self.method == EAGLE3 else "EAGLE-3")
                + " draft class, which builds other parameters than this draft has"
            )
        elif re.fullmatch(r"[A-Za-z0-9_]+For(CausalLM|ConditionalGeneration)", arch) and (
            "eagle" not in arch.lower()
        ):
            why = (
                f"`{arch}` is a regular model class in SGLang: it builds a plain model that "
                "binds none of the draft's weights (or the EAGLE worker fails on the missing "
                "`hot_token_id`)"
            )
        else:
            why = (
                f"`{arch}` is not registered in {self.p.title}: it falls back to the "
                "Transformers backend and fails ('Cannot find model module')"
            )
        if want not in registered:
            fix = (
                f"{self.p.title} has no draft class for this checkpoint; use a later SGLang "
                f"(`{want}`)"
            )
        else:
            fix = f'set "architectures": ["{want}"] (`draftfit convert --to sglang` does it)'
        if is_eagle4_architecture(arch):
            fix = EAGLE4_SERVING
        elif non_eagle_kind(self.config) is not None:
            fix = "this is not an EAGLE draft: serve it with the algorithm made for it"
        self.refuse(
            rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
            why,
            config_at("/architectures/0"),
            (key, "eagle3_arch_rewrite") if self.method == EAGLE3 else (key,),
            fix=fix,
        )
        return None

    def _dims_present(self) -> bool:
        act = self.visible.get("hidden_act", "silu")
        if act not in (self.value("draft_activation") or ["silu"]):
            self.refuse(
                rule_ids.UNSUPPORTED_ACTIVATION,
                f"`hidden_act` is `{act}`: SGLang's draft MLP supports only `silu` and raises "
                "'Unsupported activation' while building the draft",
                config_at("/hidden_act"),
                ("draft_activation",),
                fix='train the draft with "hidden_act": "silu"',
            )
            return False
        return self._require_dims("", ("draft_config_loader",))

    # ------------------------------------------------------------------ EAGLE-3
    def _target_hidden_size(self, H: int) -> int | None:
        v = self.visible
        if (
            "target_hidden_size" in v
            and v["target_hidden_size"] is None
            and self.family == LLAMA_EAGLE3
        ):
            self.refuse(
                rule_ids.MISSING_CONFIG_FIELD,
                "`target_hidden_size` is null: SGLang reads it with hasattr and multiplies it "
                "by the number of aux states to size `fc` (TypeError)",
                config_at("/target_hidden_size"),
                ("target_hidden_size_supported",),
                fix="remove the key, or set it to the target's hidden size",
            )
            return None
        return self.vint("target_hidden_size") or H

    def _draft_vocab(self, V: int | None) -> Vocab | None:
        """`draft_vocab_size` missing or null: refused where the class reads it; a null one
        with an untied head otherwise takes the target's head."""
        v = self.visible
        tied = bool(v.get("tie_word_embeddings", False))
        rule = self.family_value("draft_vocab_size_required", self.family) or "never"
        if "draft_vocab_size" not in v:
            if rule == "always" or (rule == "untied-only" and not tied):
                self.refuse(
                    rule_ids.MISSING_DRAFT_VOCAB_SIZE,
                    f"`draft_vocab_size` is missing: {self.p.title} reads `config."
                    "draft_vocab_size` while building the draft (AttributeError)",
                    config_at("/draft_vocab_size"),
                    ("draft_vocab_size_required",),
                    fix="set `draft_vocab_size` to the rows of `lm_head.weight`",
                )
                return None
            return Vocab(V, head_from_target=False)
        if v["draft_vocab_size"] is None and not tied:
            if self.value("draft_vocab_size_null") == "error":
                self.refuse(
                    rule_ids.MISSING_DRAFT_VOCAB_SIZE,
                    f"`draft_vocab_size` is null: {self.p.title} builds the draft head with "
                    "None rows and fails",
                    config_at("/draft_vocab_size"),
                    ("draft_vocab_size_null",),
                    fix="set `draft_vocab_size` to the rows of `lm_head.weight`",
                )
                return None
            return Vocab(V, head_from_target=True)
        return Vocab(self.vint("draft_vocab_size") or V, head_from_target=False)

    def _layer_count(self) -> int | None:
        n_layers = self.vint("num_hidden_layers") or 1
        policy = self.family_value("multi_layer_policy", self.family)
        if n_layers != 1 and policy == "refused":
            self.refuse(
                rule_ids.MULTI_LAYER_DRAFT_UNSUPPORTED,
                f"`num_hidden_layers` is {n_layers}: {self.p.title} raises `ValueError: EAGLE3 "
                "currently only supports 1 layer`",
                config_at("/num_hidden_layers"),
                ("multi_layer_policy",),
                fix="use SGLang 0.5.12 or later (Llama-style drafts), or a one-layer draft",
            )
            return None
        self._kv_pool_layers(n_layers)
        return n_layers

    def _layer_sources(self) -> tuple[str, ...]:
        return self.src(
            "mla_weight_mapping" if self.family == MLA_EAGLE3 else "eagle3_weight_mapping"
        )

    def _eagle3_layer(self, k: int, d: Dims, citations: tuple[str, ...]) -> None:
        v = self.visible
        self._llama_layer(
            k,
            d,
            first_width=2 * d.hidden,
            citations=citations,
            attn_bias=False,
            o_bias=any(bool(v.get(key)) for key in self.value("o_proj_bias_keys") or []),
            mlp_bias=False,
            input_norm=k == 0,
            hidden_norm=True,
            qk_norm=False,
        )
        if k > 0:  # built, loaded if stored, never applied (later_layer_pre_norm)
            self._expect(
                f"layers.{k}.input_layernorm.weight",
                shapes.hidden_vector(d.hidden),
                None,
                self.src("later_layer_pre_norm"),
            )

    def _fc(self, H: int, T: int, n_aux: int, count_from: str, use_aux: bool) -> None:
        self._expect(
            "fc.weight",
            shapes.fc(H, n_aux, T, count_from),
            UNINITIALISED if use_aux else None,
            self.src("aux_count_rule", "eagle3_weight_mapping"),
        )
        bias_rule = self.value("fc_bias_rule")
        if bias_rule == "always" or (bias_rule == "config-bias" and self.visible.get("bias")):
            bias = shapes.hidden_vector(H)
            self._expect("fc.bias", bias, UNINITIALISED, self.src("fc_bias_rule"))

    def _embedding_if_missing(self, H: int, T: int, head_from_target: bool) -> str:
        own = "target_hidden_size" in self.visible and T != H and not head_from_target
        self.view.effective["embedding_shared"] = not own
        return UNINITIALISED if own else SHARED

    def _head(self, V: int | None, Vd: int | None, head_from_target: bool) -> Built | None:
        tied = bool(self.visible.get("tie_word_embeddings", False))
        if tied and Vd is not None and V is not None and Vd != V:
            self.event(
                rule_ids.LM_HEAD_MISSING_REDUCED_VOCAB,
                f"`tie_word_embeddings` is true: {self.p.title} makes the draft head its "
                f"embedding, which it replaces by the target's ({V} rows), so a draft vocabulary "
                f"of {Vd} and its `d2t` no longer line up with the logits",
                config_at("/tie_word_embeddings"),
                ("tied_lm_head",),
                fix='set "tie_word_embeddings": false and store the trained `lm_head.weight`',
            )
        if tied or head_from_target:
            return None
        return Built(UNINITIALISED, self.src("lm_head_shared_when_missing"))

    def _after_eagle3(self) -> None:
        """The parameters a quantized draft's layers register: SGLang builds the decoder
        layers (and, from the version in `draft_quant_lm_head`, lm_head) with the draft's
        own quantization config on a launch without `--quantization`; fc never."""
        q = read_draft_quant(self.config)
        if q is None or self.value("draft_quant_config_source") != "draft":
            return
        if q.method not in (self.value("draft_quant_methods") or []) or q.scheme is None:
            return
        params: list[str] = (self.value("compressed_tensors_params") or {}).get(q.scheme) or []
        if not params:
            return
        lm_head = bool(self.value("draft_quant_lm_head"))
        citations = self.src("draft_quant_config_source", "compressed_tensors_params")

        def quantizable(module: str) -> bool:
            return module.endswith("_proj") or (module == "lm_head" and lm_head)

        add_quantized_parameters(self.view, q, params, quantizable, citations)
        self.view.effective["draft_quantization_scheme"] = q.scheme

    def _rotation_advice(self, compensated: str, rotation: Rotation) -> tuple[str, str] | None:
        """SGLang reads a ModelSlim target's description to serve it, but no release
        draftfit has read anti-rotates the draft (sgl-project/sglang#30524 is open)."""
        if compensated != "none":  # pragma: no cover - no other value in the data
            return None
        return (
            self.p.title,
            "use a draft trained on the rotated target, or serve with vLLM 0.16.0 or later "
            "and its vllm-ascend release"
            + (
                ""
                if rotation.rotation_map is not None
                else " after re-exporting the target with msModelSlim's QuaRot "
                "`export_extra_info: true`"
            )
            + ", which anti-rotates an EAGLE-3 draft's `fc` on load",
        )

    def _inherited_quantization(self, t: Target) -> None:
        """A quantized target next to an unquantized draft: SGLang gives the draft the
        target's `--quantization`, which an unquantized draft cannot satisfy (methods that
        quantize online, such as `fp8`, can). Only for a launch draftfit was not shown."""
        if not self.value("draft_quantization_inherited") or self.inputs.serve is not None:
            return  # with the launch's settings, DF554 says whether it happens
        if read_draft_quant(self.config) is not None:
            return
        method = t.quantization_method
        if method is None or method.lower() in ONLINE_QUANTIZATION:
            return
        opt_out = bool(self.value("draft_quantization_opt_out"))
        self.event(
            rule_ids.DRAFT_INHERITS_TARGET_QUANTIZATION,
            f"the target is quantized (`{method}`) and the draft is not: if the launch passes "
            f"`--quantization {method}`, {self.p.title} builds the draft with it too and "
            f"start-up fails looking for the draft's `{method}` config",
            target_config_at("/quantization_config/quant_method"),
            ("draft_quantization_inherited", "draft_quantization_opt_out"),
            fix="leave `--quantization` out (SGLang reads the target's method from its "
            "config.json)"
            + (", or pass `--speculative-draft-model-quantization unquant`" if opt_out else ""),
        )

    def _quant_skip_reason(self, canonical: str) -> tuple[str, tuple[str, ...]] | None:
        """Why a quantization tensor of a quantized draft has no parameter here (fc, or an
        lm_head this version builds unquantized), or None when no specific reason applies."""
        q = read_draft_quant(self.config)
        if q is None or quant_suffix(canonical) is None:
            return None
        module = canonical.rsplit(".", 1)[0]
        if module == "fc" and not self.value("draft_quant_fc"):
            return (
                f"{self.p.title} builds `fc` as a plain torch Linear, without the draft's "
                "quantization config (a quantized `fc.weight` then loads without its scale)",
                self.src("draft_quant_fc"),
            )
        head = self.p.fact("draft_quant_lm_head")
        if module == "lm_head" and head.known and not head.value:
            return (
                f"{self.p.title} builds lm_head unquantized (its compressed-tensors scheme "
                "covers linear layers only; a quantized `lm_head.weight` then loads without "
                "its scale)",
                self.src("draft_quant_lm_head"),
            )
        if module == "lm_head" and head.known and not q.covers("lm_head"):
            return (
                f"{self.p.title} quantizes lm_head only when a `targets` entry of the draft's "
                "`quantization_config` names it (`Linear` does not); it builds lm_head "
                "unquantized, and a quantized `lm_head.weight` then loads without its scale",
                self.src("draft_quant_lm_head"),
            )
        return None

    def _d2t(self, V: int | None, Vd: int | None, reduced: bool) -> None:
        required = self.value("d2t_handling") == "required"
        self._expect("d2t", shapes.d2t(Vd), FAILS if required else None, self.src("d2t_handling"))
        self.view.effective["d2t_parameter"] = True

    def _kv_pool_layers(self, n_layers: int) -> None:
        """The draft worker sizes its KV pool from `num_nextn_predict_layers` when present."""
        nextn = self.visible.get("num_nextn_predict_layers")
        rule = self.value("draft_kv_layers_source")
        if not isinstance(nextn, int) or isinstance(nextn, bool) or nextn >= n_layers:
            return
        if rule == "num_nextn_predict_layers-if-positive" and nextn <= 0:
            return
        if rule not in (
            "num_nextn_predict_layers-if-present",
            "num_nextn_predict_layers-if-positive",
        ):
            return
        self.refuse(
            rule_ids.DRAFT_KV_LAYER_COUNT,
            f"`num_nextn_predict_layers` is {nextn}: {self.p.title} sizes the draft's KV cache "
            f"with it instead of the {n_layers} decoder layer(s), "
            + (
                "a zero-layer pool: IndexError the first time the draft runs (while start-up "
                "captures its CUDA graphs, else at the first request)"
                if nextn == 0
                else "too few layers for the draft"
            ),
            config_at("/num_nextn_predict_layers"),
            ("draft_kv_layers_source",),
            fix="remove `num_nextn_predict_layers` from the draft config (it is the target's "
            "MTP setting, copied over)",
        )

    def _norms(self) -> dict[str, bool]:
        """Which norm flags are on *and* implemented by this version's class."""
        v = self.visible
        fam = self.family
        ec = self._eagle_config()
        nested = ec.get("norm_before_fc") if self.value("norm_before_fc_nested") else None
        before_fc = bool(nested) if nested is not None else bool(v.get("norm_before_fc"))
        return {
            "norm_before_fc": before_fc
            and bool(self.family_value("norm_before_fc_supported", fam)),
            "fc_norm": bool(v.get("fc_norm") or v.get("use_aux_norm"))
            and bool(self.family_value("fc_norm_supported", fam)),
            "norm_output": bool(v.get("norm_output"))
            and bool(self.family_value("norm_output_supported", fam)),
        }

    # ------------------------------------------------------------------ aux capture
    def _shift_mode(self) -> str:
        """How this target class turns written ids into capture-before indices."""
        arch = self.target.architecture if self.target else None
        for cls, mode in self.value("aux_ids_shift_exceptions") or []:
            if cls == arch:
                return str(mode)
        return "plus-one"

    def _aux_capture(self, n_aux: int, count_from: str, use_aux: bool) -> None:
        keys = list(self.value("aux_ids_read_from") or [])
        ids: tuple[int, ...] | None = None
        read_from = None
        for key in keys:
            value = get_path(self.visible, key)
            if isinstance(value, list) and value and all(isinstance(i, int) for i in value):
                ids, read_from = tuple(value), "/" + key.replace(".", "/")
                break
        L = self.target.num_layers if self.target else None
        mode = self._shift_mode()
        used: tuple[int, ...] | None = None
        if not use_aux:
            used = ()
        elif ids is not None:
            used = _decode(ids, mode, L)
        elif L is not None:
            used = default_capture_ids(L)
            if mode == "plus-one-default-too":
                used = tuple(i + 1 for i in used)
        rng = self.value("aux_ids_valid_range")
        valid = None
        if L is not None and isinstance(rng, list):
            high = L if mode == "as-is-if-max-is-L" else L + rng[1]
            valid = (rng[0], high)
        convention = {
            "plus-one": "output-of",
            "plus-one-default-too": "output-of",
            "plus-one-if-first-is-1": "output-of when the first id is 1, else capture-before",
            "as-is-if-max-is-L": "output-of unless the last id is the layer count",
        }[mode]
        self.view.aux = AuxCapture(
            used=used,
            read_from=read_from,
            keys_read=tuple("/" + k.replace(".", "/") for k in keys),
            expected_count=n_aux if use_aux else None,
            count_from=count_from,
            valid_range=valid,
            citations=self.src("aux_ids_read_from", "aux_ids_convention", "aux_ids_default")
            + (self.src("aux_ids_shift_exceptions") if mode != "plus-one" else ()),
            read_convention=convention,
            write_pointer=NESTED_IDS_POINTER if keys else None,
            encode=(lambda cb: _encode(cb, mode, L)) if keys else None,
        )
        if ids is None or not used or L is None:
            return
        defaults: tuple[int, ...] = default_capture_ids(L)
        if mode == "plus-one-default-too":
            defaults = tuple(i + 1 for i in defaults)
        if tuple(sorted(set(used))) == tuple(sorted(set(defaults))):
            return
        sticky = (self.target.architecture if self.target else None) in (
            self.value("aux_capture_flags_sticky") or []
        )
        if self.value("aux_ids_cuda_graph_ignored") and not self._graphs_off(sticky):
            if sticky:
                # Flags set for the defaults are never cleared: eager passes capture both.
                assert self.view.aux is not None
                self.view.aux.used = tuple(sorted(set(defaults) | set(used)))
            self.event(
                rule_ids.AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS,
                f"{self.p.title}'s CUDA-graph runner re-sets the captured layers to the default "
                f"{list(defaults)} (capture-before), "
                + (
                    f"and `{self.target.architecture if self.target else ''}` never clears a "
                    "layer once flagged, so eager passes capture the defaults and the draft's "
                    f"layers {list(used)} together"
                    if sticky
                    else "so graphed decode/verify steps do not use the draft's layers "
                    + str(list(used))
                ),
                config_at(read_from or NESTED_IDS_POINTER),
                ("aux_ids_cuda_graph_ignored",) + (("aux_capture_flags_sticky",) if sticky else ()),
                fix="use SGLang 0.5.11 or later, or serve with --disable-cuda-graph",
            )

    def _graphs_off(self, sticky: bool) -> bool:
        """Whether the launch turns CUDA graphs off (`--disable-cuda-graph`), so no graph
        runner re-sets the captured layers; where FlashInfer's autotune also flags the
        default layers of a sticky target, `--disable-flashinfer-autotune` is needed too."""
        serve = self.inputs.serve
        if serve is None or serve.cuda_graphs is not False:
            return False
        autotune = self.value("aux_ids_autotune_reset") == "sticky-flags-only"
        return not (sticky and autotune and AUTOTUNE_FLAG not in serve.words)

    # ------------------------------------------------------------------ flags
    def _launch_gives_window(self, size: int) -> bool:
        """`--speculative-draft-window-size SIZE` in the launch, on a Llama EAGLE-3 draft of a
        version that has the flag: the draft runs with the window it was trained with."""
        serve = self.inputs.serve
        return (
            serve is not None
            and serve.draft_window_size == size
            and self.family == LLAMA_EAGLE3
            and self.value("sliding_window_source") == "server-flag"
        )

    def _sliding_window_advice(self, size: int, how: Any) -> tuple[str, str]:
        """SGLang reads no window from the draft config; Llama EAGLE-3 drafts take one from
        `--speculative-draft-window-size` where the version has that flag."""
        why = f"reads no sliding window from the draft config: {IGNORED_WINDOW}"
        if self.family != LLAMA_EAGLE3:
            return why, (
                "SGLang applies `--speculative-draft-window-size` to Llama EAGLE-3 drafts "
                f"only; `{self.view.draft_class}` has no setting for it: expect lower "
                f"acceptance on prompts longer than {size} tokens"
            )
        if self.value("sliding_window_source") == "server-flag":
            return why, f"launch SGLang with `{DRAFT_WINDOW_FLAG} {size}`"
        first = first_release_where(
            self.p, lambda later: later.value("sliding_window_source") == "server-flag"
        )
        where = f"SGLang {first} or later" if first else "an SGLang version that has it"
        return why, (
            f"this version has no `{DRAFT_WINDOW_FLAG}`: use {where} and launch it with "
            f"`{DRAFT_WINDOW_FLAG} {size}`"
        )

    def _flags(self, norms: dict[str, bool]) -> None:
        v = self.visible
        ec = self._eagle_config()
        never = set(self.value("flags_never_read") or [])
        checks = [
            ("norm_before_residual", bool(v.get("norm_before_residual")), False),
            (
                "norm_before_fc",
                bool(v.get("norm_before_fc") or ec.get("norm_before_fc")),
                norms["norm_before_fc"],
            ),
            ("fc_norm", bool(v.get("fc_norm") or v.get("use_aux_norm")), norms["fc_norm"]),
            ("norm_output", bool(v.get("norm_output")), norms["norm_output"]),
            ("eagle_config.eh_proj_before_attn", bool(ec.get("eh_proj_before_attn")), False),
            (
                "eagle_config.return_hidden_post_norm",
                bool(ec.get("return_hidden_post_norm")),
                False,
            ),
        ]
        for name, on, honoured in checks:
            if not on or honoured:
                continue
            if name in never:
                citations = self.p.item_sources("flags_never_read", name)
            else:
                citations = self.src(f"{name}_supported")
            where = "/" + name.replace(".", "/")
            if name == "norm_before_fc" and not v.get(name):
                where = "/eagle_config/norm_before_fc"
            self.view.add(
                Event(
                    rule_ids.NORM_FLAG_IGNORED,
                    f"`{name.split('.')[-1]}` is true, but {self.p.title}'s "
                    f"`{self.view.draft_class}` does not implement it: the draft runs without "
                    "the norm it was trained with",
                    config_at(where),
                    citations,
                    "use an SGLang version that implements it, or another engine",
                )
            )

    # ------------------------------------------------------------------ EAGLE-1
    def _eagle1(self) -> None:
        src = self.src("eagle_weight_mapping")
        qwen2 = self.view.draft_class == "Qwen2ForCausalLMEagle"
        H, V = self._eagle1_layers(src, attn_bias=qwen2)
        bias = shapes.hidden_vector(H)
        self._expect("fc.bias", bias, UNINITIALISED, self.src("eagle_fc_bias"))
        self._expect("embed_tokens.weight", shapes.embedding(V, H, values=False), SHARED, src)

    # ------------------------------------------------------------------ tensor fates
    def _engine_name(self, raw: str) -> Mapped:
        """The canonical parameter a stored name reaches in this version, or None and why."""
        name = raw
        if self.family == MLA_EAGLE3:
            if name.startswith("model."):
                return Mapped(
                    None,
                    "the MLA draft loader prepends `model.` to every name, so `model.`-prefixed "
                    "names are skipped ('Eagle3 MLA: skipping unexpected weight')",
                    FateCause.PREFIX_ADDED,
                )
            return Mapped(canonical_name(name)[0])
        if self.family == LLAMA_EAGLE:
            if name.startswith("model."):
                return Mapped(
                    None,
                    "the EAGLE-1 loader prepends `model.` itself (`model.model.*`)",
                    FateCause.PREFIX_ADDED,
                )
            return Mapped(canonical_name(name)[0])
        mapping = self.value("eagle3_weight_mapping") or {}
        for old, new in (self.value("legacy_name_map") or {}).items():
            name = name.replace(old, new)
        if name.startswith("model."):
            if not self.value("model_prefix_accepted"):
                return Mapped(
                    None,
                    "this version prepends `model.` to every name, so `model.`-prefixed names "
                    "become `model.model.*`",
                    FateCause.PREFIX_ADDED,
                )
            name = name[len("model.") :]
        if mapping.get("layer_module") == "midlayer":
            if name.startswith("layers."):
                return Mapped(
                    None,
                    "this version names the decoder layer `midlayer`, so `layers.*` names match "
                    "no parameter",
                    FateCause.RENAMED,
                )
            if re.match(r"^midlayer\.\d+\.", name):
                return Mapped(
                    None, "`midlayer.N.*` (several layers) matches no parameter", FateCause.RENAMED
                )
            if name.startswith("midlayer."):
                name = "layers.0." + name[len("midlayer.") :]
        elif re.match(r"^layers\.0\.\d+\.", name):
            return Mapped(
                None,
                "`midlayer` is replaced by `layers.0` as a substring, so `midlayer.N.*` becomes "
                "`layers.0.N.*` and matches no parameter",
                FateCause.RENAMED,
            )
        return Mapped(canonical_name(name)[0])

    def _mapping_sources(self) -> tuple[str, ...]:
        return self.src(
            "eagle_weight_mapping"
            if self.family == LLAMA_EAGLE
            else "mla_weight_mapping"
            if self.family == MLA_EAGLE3
            else "eagle3_weight_mapping",
        )

    def _fixed_fate(self, raw: str) -> bool:
        """EAGLE-3 loaders take any `d2t` as the vocabulary map and may skip `t2d`."""
        if self.family == LLAMA_EAGLE:
            return False
        if "d2t" in raw.split(".")[-1] or raw == "d2t":
            self._fate(raw, "d2t", "loaded", cause=FateCause.MATCHED)
            return True
        if "t2d" in (self.value("skipped_tensor_names") or []) and "t2d" in raw:
            self._fate(
                raw,
                canonical_name(raw)[0],
                "skipped",
                "always skipped by the loader",
                self.src("skipped_tensor_names"),
                cause=FateCause.SKIPPED_BY_LOADER,
            )
            return True
        return False

    def _unmatched(self, raw: str, mapped: Mapped) -> None:
        """SGLang skips unknown names silently (from 0.4.9; before, the stacked q/k/v and
        gate/up loader raises on them); a name meant for a parameter stays unbound."""
        spec_canonical = canonical_name(raw)[0]
        if self.family == LLAMA_EAGLE and raw.startswith("lm_head"):
            self._fate(
                raw,
                spec_canonical,
                "skipped",
                "EAGLE-1 drafts use the target's lm_head; the stored one is ignored",
                self._mapping_sources(),
                cause=FateCause.TARGET_HEAD,
            )
            return
        meant = spec_canonical in self.view.expectations
        stacked = _STACKED.search("." + (mapped.canonical or raw))
        if self.value("unknown_tensor_policy") == "error-if-stacked" and stacked:
            self._fate(
                raw,
                spec_canonical,
                "rejected",
                (mapped.why or "no parameter of the draft class has this name")
                + "; the stacked q/k/v/gate/up loader raises KeyError",
                self.src("unknown_tensor_policy"),
                cause=mapped.cause,
            )
            return
        if meant:
            cause = mapped.cause if mapped.canonical is None else FateCause.RENAMED
            self._fate(
                raw, spec_canonical, "unbound", mapped.why, self._mapping_sources(), cause=cause
            )
            return
        reason = mapped.why or "no parameter of the draft class has this name"
        cause = mapped.cause
        citations = self.src("unknown_tensor_policy")
        quant = self._quant_skip_reason(spec_canonical)
        if quant is not None:
            reason, citations = quant
        elif spec_canonical.endswith(".bias"):
            reason = "the draft has no such bias parameter; the loader drops it silently"
            cause = FateCause.STRAY_BIAS
        n = self._layer_beyond(spec_canonical)
        if n is not None:
            reason = f"the draft builds {n} decoder layer(s) (`num_hidden_layers`)"
            cause = FateCause.EXTRA_LAYER
        self._fate(
            raw,
            spec_canonical,
            "skipped",
            reason + ", so it is skipped silently",
            citations,
            cause=cause,
        )

    # ------------------------------------------------------------------ target
    def _context_under_launch(self, rule: Any, max_pos: int) -> Any:
        """What this version does with a draft context shorter than the target's under the
        launch's settings: None when the launch runs it correctly (`--context-length` within
        the draft's positions; SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 where it also
        raises the draft's rotary cache), 'overwritten-silently' where the variable lets it
        run with its short rotary cache, 'error-unless-env' where it is refused (the
        variable set to false where it defaults to true), else `rule` unchanged."""
        serve = self.inputs.serve
        if serve is None:
            return rule
        if serve.context_length is not None and serve.context_length <= max_pos:
            return None
        allowed = serve.allow_longer_context
        if allowed is None:
            return rule
        if rule == "error-unless-env-then-raised" and allowed:
            return None
        if rule == "error-unless-env" and allowed:
            return "overwritten-silently"
        if rule == "overwritten-silently" and not allowed:
            return "error-unless-env"
        return rule

    def _target_checks(self) -> None:
        t = self.target
        if t is None:
            return
        self._inherited_quantization(t)
        self._target_rotation()
        if self.method == EAGLE3:
            self._target_capable()
        self._target_width_checks(
            eagle1=self.family == LLAMA_EAGLE,
            embedding_shared=bool(self.view.effective.get("embedding_shared", True))
            and "embed_tokens.weight" not in self.spec.tensors,
        )
        max_pos = self.vint("max_position_embeddings")
        t_max = t._int("max_position_embeddings")
        if not (max_pos and t_max and max_pos < t_max):
            return
        rule = self.value("draft_context_shorter_than_target")
        rule = self._context_under_launch(rule, max_pos)
        if rule is None:
            return
        where = config_at("/max_position_embeddings")
        keys = ("draft_context_shorter_than_target",)
        fix = f"set the draft's max_position_embeddings to {t_max}, or cap --context-length"
        if rule == "overwritten-silently":
            self.event(
                rule_ids.DRAFT_CONTEXT_SHORTER_THAN_TARGET,
                f"the draft's max_position_embeddings is {max_pos}, the target's {t_max}: "
                f"{self.p.title} raises the draft's context to the target's with only a warning "
                "(SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN defaults to true) but keeps its "
                f"rotary cache at {max_pos} positions, so longer prompts draft garbage or hit "
                "illegal memory accesses",
                where,
                keys,
                fix=fix,
            )
            return
        self.refuse(
            rule_ids.DRAFT_CONTEXT_REFUSED,
            f"the draft's max_position_embeddings is {max_pos}, the target's {t_max}: "
            f"{self.p.title} builds the draft with the target's context length and raises "
            "ValueError unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
            + (
                ", which does not enlarge the draft's rotary cache in this version (long "
                "prompts then fail with illegal memory accesses)"
                if rule == "error-unless-env"
                else ""
            ),
            where,
            keys,
            fix=fix,
        )

    def _target_capable(self) -> None:
        t = self.target
        assert t is not None
        arch = t.architecture
        if arch is None:
            return
        broken = self.value("verifier_eagle3_broken") or []
        if arch in broken:
            self.refuse(
                rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
                f"`{arch}` has SGLang's capture hook in {self.p.title}, but its forward does "
                "not capture aux hidden states: the first EAGLE-3 step fails",
                target_config_at("/architectures/0"),
                ("verifier_eagle3_broken",),
                fix="use SGLang 0.5.22 or later for this target",
                # it starts: the missing states are found when the draft first reads them
                consequence=Consequence.FAILS_AT_FIRST_REQUEST,
            )
            return
        if arch in (self.value("verifier_eagle3_classes") or []):
            return
        if not self._ever_listed(arch):
            self.event(
                rule_ids.TARGET_CAPABILITY_UNKNOWN,
                f"draftfit has no record of `{arch}` implementing SGLang's EAGLE-3 capture "
                f"(set_eagle3_layers_to_capture) in any release",
                target_config_at("/architectures/0"),
                ("verifier_eagle3_classes",),
                fix="check the target's model class for set_eagle3_layers_to_capture",
            )
            return
        failure = (
            "ValueError: Model ... does not implement set_eagle3_layers_to_capture"
            if self.value("target_without_capture") == "value-error"
            else "an AttributeError on set_eagle3_layers_to_capture"
        )
        self.refuse(
            rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
            f"the target class `{arch}` cannot capture aux hidden states in {self.p.title}: "
            f"start-up fails with {failure}",
            target_config_at("/architectures/0"),
            ("verifier_eagle3_classes", "target_without_capture"),
            fix="use an SGLang version whose target class supports EAGLE-3",
        )


def aux_ids_to_write(
    profile: Profile, target: Target | None, capture_before: tuple[int, ...]
) -> tuple[int, ...] | None:
    """The ids to write at `eagle_config.eagle_aux_hidden_state_layer_ids` so that SGLang at
    `profile.version` captures exactly `capture_before` next to `target` (which decides
    the counting rule); None when this target class cannot be made to capture them."""
    arch = target.architecture if target else None
    mode = "plus-one"
    for cls, rule in profile.value("aux_ids_shift_exceptions") or []:
        if cls == arch:
            mode = rule
    return _encode(tuple(capture_before), mode, target.num_layers if target else None)


def _decode(ids: tuple[int, ...], mode: str, L: int | None) -> tuple[int, ...]:
    """Written ids -> the capture-before indices this target class captures."""
    if mode == "plus-one-if-first-is-1":
        return tuple(i + 1 for i in ids) if ids and ids[0] == 1 else tuple(ids)
    if mode == "as-is-if-max-is-L":
        return tuple(ids) if L is not None and max(ids) == L else tuple(i + 1 for i in ids)
    return tuple(i + 1 for i in ids)


def _encode(cb: tuple[int, ...], mode: str, L: int | None) -> tuple[int, ...] | None:
    """Capture-before indices -> ids to write so that `_decode` gives them back, or None."""
    for candidate in (tuple(i - 1 for i in cb), tuple(cb)):
        if candidate and min(candidate) >= 0 and _decode(candidate, mode, L) == tuple(cb):
            return candidate
    return None


Builder = _SGLangBuilder
