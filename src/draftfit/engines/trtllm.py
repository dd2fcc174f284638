"""What TensorRT-LLM's PyTorch backend builds from an EAGLE-3 draft at one version.

TensorRT-LLM's procedure (`dev/sglang-trtllm-procedure.md` §2): the user's
`speculative_config` selects EAGLE-3; from 0.21 the one-model path always builds
`Eagle3ForCausalLM`, whatever `architectures` says; tensor names are `midlayer[.i].*` with
`model.` prepended by the loader; names that match no module are ignored; the aux layers
come ONLY from the user's `eagle3_layers_to_capture` (output-of counting) — the draft's own
ids are never read — else the default {1, L//2-1, L-4}. EAGLE-1 drafts are not supported
on the PyTorch backend. Every version-dependent value comes from `data/trtllm.toml`; many
boundaries there are approximate and findings built on them say so.
"""

from __future__ import annotations

import re

from draftfit.engines.builder import CONFIG, TARGET_CONFIG, BaseBuilder, Dims
from draftfit.engines.view import (
    FAILS,
    ONES,
    SHARED,
    UNINITIALISED,
    AuxCapture,
)
from draftfit.location import Location, config_at
from draftfit.spec import EAGLE, EAGLE3, canonical_name, default_capture_ids

USER_SETTING = "speculative_config.eagle3_layers_to_capture"
PREFIX_REASON = (
    "TensorRT-LLM prepends `model.` to every name without `lm_head`, so `model.`-prefixed "
    "names become `model.model.*` and match no module; its fused q/k/v and gate/up loaders "
    "then find no weights and fail (AssertionError)"
)


class _TrtllmBuilder(BaseBuilder):
    mla = False
    truncating_loader = False  # fact oversized_weight_policy: copy_ raises on a mismatch

    def run(self) -> None:
        if self.ckpt.config is None or self.method not in (EAGLE3, EAGLE):
            return
        key = "eagle3_supported" if self.method == EAGLE3 else "eagle_supported"
        if not self.value(key):
            self.refuse(
                "method-unsupported",
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
            return
        cfg = self.config
        if "speculators_config" in cfg or "speculators_model_type" in cfg:
            self.refuse(
                "speculators-format-unsupported",
                f"{self.p.title} loads the draft config with transformers and does not "
                "understand speculators-format configs",
                config_at("/speculators_model_type"),
                ("speculators_format",),
                fix="rewrite it as a plain config: `draftfit convert DRAFT --to sglang -o OUT` "
                "(the SGLang layout, `midlayer.*`, is also TensorRT-LLM's)",
            )
            return
        self.visible = dict(cfg)
        self.view.config = self.visible
        if not self._draft_class():
            return
        if not self._dims_present():
            return
        self.view.built = True
        if not self._eagle3():
            self.view.built = False
            return
        self._map_tensors()
        self._target_checks()

    # ------------------------------------------------------------------ class
    def _draft_class(self) -> bool:
        selection = self.value("draft_class_selection")
        self.mla = bool(self.visible.get("kv_lora_rank")) and bool(
            self.value("mla_when_kv_lora_rank")
        )
        if selection == "always-eagle3":
            self.view.draft_class = "Eagle3ForCausalLM"
            return True
        archs = self.config.get("architectures")
        if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
            return False
        arch = archs[0]
        if "draft_vocab_size" in self.visible:
            arch = "EAGLE3" + arch.replace("Eagle3", "")
        if arch in (self.value("eagle3_draft_architectures") or []):
            self.view.draft_class = arch
            return True
        self.refuse(
            "unsupported-draft-architecture",
            f"{self.p.title} (two-model EAGLE-3) looks up `{arch}` with AutoModelForCausalLM "
            "and fails ('Unknown architecture for AutoModelForCausalLM')",
            config_at("/architectures/0"),
            ("draft_class_selection", "eagle3_draft_architectures"),
            fix='set "architectures": ["LlamaForCausalLMEagle3"] and `draft_vocab_size`',
        )
        return False

    def _dims_present(self) -> bool:
        return self._require_dims("", ("draft_class_selection",))

    # ------------------------------------------------------------------ shapes
    def _eagle3(self) -> bool:
        v = self.visible
        H, nh, nkv, hd, inter = self._dims()
        V = self.vint("vocab_size")
        tsh_supported = bool(self.value("target_hidden_size_supported"))
        if tsh_supported and "target_hidden_size" in v and v["target_hidden_size"] is None:
            self.refuse(
                "missing-config-field",
                f"`target_hidden_size` is null: {self.p.title} reads it with hasattr and "
                "multiplies it by the number of aux states (TypeError)",
                config_at("/target_hidden_size"),
                ("target_hidden_size_supported",),
                fix="remove the key, or set it to the target's hidden size",
            )
            return False
        T = (self.vint("target_hidden_size") or H) if tsh_supported else H
        self.view.effective.update({"hidden_size": H, "head_dim": hd, "target_hidden_size": T})

        if "draft_vocab_size" not in v:
            if self.value("draft_vocab_size_required"):
                self.refuse(
                    "missing-draft-vocab-size",
                    f"`draft_vocab_size` is missing: {self.p.title} reads "
                    "`config.draft_vocab_size` while building the draft (AttributeError)",
                    config_at("/draft_vocab_size"),
                    ("draft_vocab_size_required",),
                    fix="set `draft_vocab_size` to the rows of `lm_head.weight`",
                )
                return False
            Vd = V
        else:  # null: the full vocabulary, no d2t
            Vd = self.vint("draft_vocab_size") or V
        self.view.effective["draft_vocab_size"] = Vd

        # layers
        n_layers = self.vint("num_hidden_layers") or 1
        if self.value("multi_layer_policy") != "supported":
            n_layers = 1
        self.view.effective["num_layers"] = n_layers
        ec = v.get("eagle_config") if isinstance(v.get("eagle_config"), dict) else {}
        flags = set(self.value("eagle_config_flags_supported") or [])
        eh_proj = bool(ec.get("eh_proj_before_attn")) and (
            "eagle_config.eh_proj_before_attn" in flags
        )
        later = self.value("later_layer_input")
        regular_next = later == "next-layer-regular" and ec.get("next_layer_regular", True)
        attn_bias = bool(v.get("attention_bias")) and bool(self.value("attention_bias_supported"))
        mlp_bias = bool(v.get("mlp_bias")) and bool(self.value("attention_bias_supported"))
        src = self.src("eagle3_weight_mapping")
        for k in self.layer_indices(n_layers):
            regular = eh_proj or (regular_next and k > 0)
            if self.mla:
                if not self._mla_layer(k, H, nh, inter):
                    return False
                continue
            self._llama_layer(
                k,
                Dims(H, nh, nkv, hd, inter),
                first_width=H if regular else 2 * H,
                later_width=H if regular else 2 * H,
                sources=src,
                attn_bias=attn_bias,
                o_bias=attn_bias,
                mlp_bias=mlp_bias,
                input_norm=not regular,
                hidden_norm=True,
                qk_norm=False,
            )
        if eh_proj:
            self._expect(
                "enorm.weight",
                (H,),
                "[hidden_size]",
                ONES,
                self.src("eagle_config_flags_supported"),
            )
            self._expect(
                "eh_proj.weight",
                (H, 2 * H),
                "[hidden_size, 2·hidden_size]",
                UNINITIALISED,
                self.src("eagle_config_flags_supported"),
            )
        self._expect("norm.weight", (H,), "[hidden_size]", ONES, src)

        # aux states (the default user config: 3 layers) and fc
        n_aux, count_from = (
            3,
            (
                "the default of 3 (no `eagle3_layers_to_capture` passed)"
                if self.value("aux_ids_user_key")
                else "a fixed count of 3"
            ),
        )
        fc_exists = self.value("fc_exists_when") == "always" or n_aux > 1
        if fc_exists:
            self._expect(
                "fc.weight",
                (H, n_aux * T),
                f"[hidden_size, N·target_hidden_size] = [{H}, {n_aux}·{T}] (N = {n_aux} from "
                f"{count_from})",
                UNINITIALISED,
                self.src("aux_count_rule", "fc_exists_when"),
            )
            if self.value("fc_bias_rule") == "config-bias" and v.get("bias"):
                self._expect(
                    "fc.bias", (H,), "[hidden_size]", UNINITIALISED, self.src("fc_bias_rule")
                )
        norms = self._norms()
        self._aux_norms(
            n_aux,
            T,
            input_norm=norms["norm_before_fc"] and not norms["fc_norm"],
            fc_norm=norms["fc_norm"],
        )

        # vocabulary
        own_embedding = (
            self.value("embedding_sharing") == "shared-unless-target-hidden-differs" and T != H
        )
        self.view.effective["embedding_shared"] = not own_embedding
        self._expect(
            "embed_tokens.weight",
            (V, H) if V else None,
            f"[vocab_size, hidden_size] = [{V}, {H}]",
            UNINITIALISED if own_embedding else SHARED,
            self.src("embedding_sharing"),
        )
        head_rule = self.value("lm_head_rule")
        has_head = any("lm_head" in name for name in self.ckpt.tensors)
        self._expect(
            "lm_head.weight",
            (Vd, H),
            f"[draft_vocab_size, hidden_size] = [{Vd}, {H}]",
            SHARED if head_rule == "checkpoint-else-target" and not has_head else UNINITIALISED,
            self.src("lm_head_rule"),
        )
        d2t_rule = self.value("d2t_parameter")
        d2t_exists = d2t_rule == "always" or (d2t_rule == "when-reduced" and Vd != V)
        self.view.effective["d2t_parameter"] = d2t_exists
        if d2t_exists:
            self._expect(
                "d2t",
                (Vd,) if Vd else None,
                "[draft_vocab_size]",
                FAILS,
                self.src("d2t_parameter", "missing_tensor_policy"),
            )
        self.view.effective["reduced_vocab"] = Vd is not None and V is not None and Vd != V

        self._aux_capture(n_aux, count_from)
        self._flags(norms)
        self.view.effective["norms"] = {"norm_before_residual": False, **norms}
        self.view.effective["num_aux_states"] = n_aux
        return True

    def _norms(self) -> dict[str, bool]:
        v = self.visible
        ec = v.get("eagle_config") if isinstance(v.get("eagle_config"), dict) else {}
        return {
            "norm_before_fc": bool(ec.get("norm_before_fc"))
            and bool(self.value("norm_before_fc_supported")),
            "fc_norm": bool(v.get("fc_norm")) and bool(self.value("fc_norm_supported")),
            "norm_output": bool(v.get("norm_output") or ec.get("return_hidden_post_norm"))
            and bool(self.value("norm_output_supported")),
        }

    def _flags(self, norms: dict[str, bool]) -> None:
        v = self.visible
        ec = v.get("eagle_config") if isinstance(v.get("eagle_config"), dict) else {}
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
                "norm-flag-ignored",
                f"`{name}` is true, but {self.p.title} {why}: the draft runs without the norm "
                "it was trained with",
                config_at(where),
                (f"{name}_supported",),
                fix="use a TensorRT-LLM version that implements it, or another engine",
            )

    # ------------------------------------------------------------------ aux
    def _aux_capture(self, n_aux: int, count_from: str) -> None:
        L = self.target.num_layers if self.target else None
        user_key = self.value("aux_ids_user_key") or None
        self.view.aux = AuxCapture(
            used=default_capture_ids(L) if L is not None else None,
            read_from=None,
            keys_read=(),
            expected_count=n_aux,
            count_from=count_from,
            valid_range=(1, L) if L is not None else None,
            sources=self.src("aux_ids_read_from", "aux_ids_default", "aux_ids_user_key"),
            read_convention="output-of",
            write_pointer=None,
            user_setting=USER_SETTING if user_key else None,
            encode=(lambda cb: tuple(i - 1 for i in cb)) if user_key else None,
        )

    # ------------------------------------------------------------------ tensor fates
    def _engine_canonical(self, raw: str) -> tuple[str | None, str]:
        name = raw
        if "lm_head" not in name and name.startswith("model."):
            return None, PREFIX_REASON
        remap = (self.value("eagle3_weight_mapping") or {}).get("layers_remap") or {}
        n_layers = self.view.effective.get("num_layers", 1)
        if name.startswith("layers."):
            if not remap:
                return (
                    None,
                    "this version names the decoder layer `midlayer`; `layers.*` matches nothing",
                )
            pattern, repl = remap["single" if n_layers == 1 else "multi"]
            name = re.sub(pattern, repl.replace("\\1", r"\1"), name, count=1)
        m = re.match(r"^midlayer\.(\d+)\.", name)
        if m:
            if n_layers == 1:
                return None, "a one-layer draft's module is `midlayer`, not `midlayer.N`"
            return "layers." + name[len("midlayer.") :], ""
        if name.startswith("midlayer."):
            if n_layers > 1:
                return None, "a multi-layer draft's modules are `midlayer.N`"
            return "layers.0." + name[len("midlayer.") :], ""
        return canonical_name(name)[0], ""

    def _map_tensors(self) -> None:
        src_unknown = self.src("unknown_tensor_policy")
        for raw in self.ckpt.tensors:
            spec_canonical = canonical_name(raw)[0]
            if raw == "t2d":
                self._fate(
                    raw,
                    "t2d",
                    "skipped",
                    "always skipped by the loader",
                    self.src("skipped_tensor_names"),
                )
                continue
            if raw == "d2t" and "d2t" not in self.view.expectations:
                self._fate(
                    raw, "d2t", "skipped", "always skipped by the loader", self.src("d2t_parameter")
                )
                continue
            canonical, why = self._engine_canonical(raw)
            if why == PREFIX_REASON:
                self._fate(raw, spec_canonical, "rejected", why, self.src("model_prefix_accepted"))
                continue
            if canonical is not None and canonical in self.view.expectations:
                self._fate(raw, canonical, "loaded")
                continue
            if spec_canonical in self.view.expectations:
                self._fate(
                    raw,
                    spec_canonical,
                    "unbound",
                    why or "the loader maps it to no module",
                    self.src("eagle3_weight_mapping"),
                )
                continue
            reason = why or "no module of the draft class has this name"
            if spec_canonical.endswith(".bias"):
                reason = "the draft has no such bias parameter"
            m = re.match(r"^layers\.(\d+)\.", spec_canonical)
            n = self.view.effective.get("num_layers", 1)
            if m and int(m.group(1)) >= n:
                reason = f"the draft builds {n} decoder layer(s)" + (
                    "" if self.value("multi_layer_policy") == "supported" else " (one only)"
                )
            self._fate(
                raw,
                spec_canonical,
                "skipped",
                reason + "; the loader ignores it silently",
                src_unknown,
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
                    "target-not-eagle3-capable",
                    f"TensorRT-LLM's supported-models matrix marks `{arch}` as not supporting "
                    f"EAGLE-3 in {self.p.title}",
                    Location(TARGET_CONFIG, "/architectures/0"),
                    ("verifier_not_eagle3_classes",),
                    fix="use another engine for this target",
                )
            else:
                self.event(
                    "target-capability-unknown",
                    f"draftfit has no record of whether `{arch}` captures aux hidden states in "
                    f"{self.p.title} (its TensorRT-LLM target list comes from documentation)",
                    Location(TARGET_CONFIG, "/architectures/0"),
                    ("verifier_eagle3_classes",),
                    fix="check TensorRT-LLM's supported-models matrix for EAGLE-3",
                )
        self._target_width_checks(
            eagle1=False,
            embedding_shared=bool(self.view.effective.get("embedding_shared", True))
            and "embed_tokens.weight" not in self.spec.tensors,
        )


Builder = _TrtllmBuilder
