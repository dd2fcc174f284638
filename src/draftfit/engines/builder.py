"""What every engine module shares: a builder that turns a draft spec plus a versioned
:class:`Profile` into an :class:`EngineView`.

Engine modules (:mod:`.vllm`, :mod:`.sglang`, :mod:`.trtllm`) subclass :class:`BaseBuilder`
and encode only their engine's *procedure*; every version-dependent value comes from the
engine's data file, with the source line it was read from. The decoder-layer shapes
(Llama-style and MLA) are the same formulas in every engine, so they live here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from draftfit.checkpoint.model import Checkpoint
from draftfit.engines.profile import Profile
from draftfit.engines.view import (
    FAILS,
    ONES,
    TRUNCATE_COLS,
    TRUNCATE_ROWS,
    UNINITIALISED,
    EngineView,
    Event,
    Expectation,
    TensorFate,
)
from draftfit.location import Location, config_at
from draftfit.spec import DraftSpec
from draftfit.target import Target

CONFIG = "config.json"
TARGET_CONFIG = "target config.json"
MOE_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
# Decoder layers whose tensors a view expects. Drafts have one to a few layers and the
# largest targets ~200; a config claiming 2**31 - 1 layers must not loop that many times.
MAX_EXPANDED_LAYERS = 256


class Dims(NamedTuple):
    """Decoder-layer dimensions: hidden, heads, kv heads, head_dim, intermediate."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int


class BaseBuilder:
    """State and helpers every engine's builder uses.

    `visible` is the config as the engine's draft class reads it (after any config route);
    engine modules fill it before computing shapes.
    """

    # Whether the engine's linear loaders narrow an oversized stored tensor silently
    # (vLLM-derived loaders do; a plain `copy_` raises instead).
    truncating_loader = True

    @classmethod
    def build(
        cls,
        checkpoint: Checkpoint,
        spec: DraftSpec,
        target: Target | None,
        profile: Profile,
        method: str | None,
        method_explicit: bool,
    ) -> EngineView:
        """Resolve the draft the way this engine at `profile.version` would."""
        view = EngineView(
            profile.engine, profile.version, profile.title, cls.method_for(method, spec)
        )
        cls(checkpoint, spec, target, profile, view, method_explicit).run()
        return view

    @staticmethod
    def method_for(method: str | None, spec: DraftSpec) -> str | None:
        """The method the engine starts from. `auto` (no method given) means the checkpoint's
        own kind, except in engines that guess it themselves (vLLM, from the path)."""
        return spec.method if method == "auto" else method

    def run(self) -> None:
        """Fill `self.view`; each engine module implements its procedure here."""
        raise NotImplementedError

    def __init__(
        self,
        checkpoint: Checkpoint,
        spec: DraftSpec,
        target: Target | None,
        profile: Profile,
        view: EngineView,
        method_explicit: bool = False,
    ) -> None:
        self.ckpt = checkpoint
        self.config: Mapping[str, Any] = spec.config  # wrong-typed values set aside
        self.spec = spec
        self.target = target
        self.p = profile
        self.view = view
        self.method = view.method
        self.method_explicit = method_explicit
        self.visible: dict[str, Any] = {}
        self.route = "hf"

    def src(self, *keys: str) -> tuple[str, ...]:
        return self.p.sources(*keys)

    def value(self, key: str) -> Any:
        return self.p.value(key)

    def refuse(
        self,
        rule: str,
        message: str,
        location: Location,
        keys: tuple[str, ...],
        fix: str | None = None,
    ) -> None:
        self.view.refuse(Event(rule, message, location, self.src(*keys), fix))

    def event(
        self,
        rule: str,
        message: str,
        location: Location,
        keys: tuple[str, ...],
        fix: str | None = None,
    ) -> None:
        self.view.add(Event(rule, message, location, self.src(*keys), fix))

    def family_value(self, key: str, family: str) -> Any:
        """A fact whose value is a `{class family: value, "*": value}` table, for `family`
        (a plain value is returned as is)."""
        value = self.value(key)
        if isinstance(value, dict):
            return value.get(family, value.get("*"))
        return value

    def layer_indices(self, n_layers: int) -> range:
        """The layers whose tensors are expected: at most :data:`MAX_EXPANDED_LAYERS`."""
        return range(min(n_layers, MAX_EXPANDED_LAYERS))

    def vint(self, key: str) -> int | None:
        value = self.visible.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    # ------------------------------------------------------------------ method

    def _mla_layer(self, k: int, H: int, nh: int, inter: int) -> bool:
        """Expectations for layer `k` of an MLA draft (Eagle3DeepseekV2ForCausalLM).

        Missing MLA dims take transformers' DeepseekV3Config defaults (fact
        `mla_config_defaults`); a null `q_lora_rank` cannot load, because the loader always
        maps `kv_a_proj_with_mqa` into a fused q-a/kv-a parameter that then does not exist.
        """
        defaults = self.value("mla_config_defaults") or {}
        dims: dict[str, int] = {}
        for key, default in defaults.items():
            raw = self.visible.get(key, default)
            if raw is None:
                if key == "q_lora_rank":
                    self.refuse(
                        "missing-config-field",
                        f"`q_lora_rank` is null: {self.p.title}'s MLA draft loader maps "
                        "`kv_a_proj_with_mqa` into the fused q-a/kv-a parameter, which a draft "
                        "without a q LoRA does not have, and the load fails",
                        config_at(f"{self.spec.layer_config_pointer}/q_lora_rank"),
                        ("mla_config_defaults",),
                        fix="train the MLA draft with a q LoRA (q_lora_rank set)",
                    )
                else:
                    self.refuse(
                        "missing-config-field",
                        f"`{key}` is null: the DeepSeek-V3 config class refuses null integers",
                        config_at(f"{self.spec.layer_config_pointer}/{key}"),
                        ("mla_config_defaults",),
                        fix=f"write `{key}` (default {default}) or remove the key",
                    )
                return False
            dims[key] = raw
        qr, kvr = dims["q_lora_rank"], dims["kv_lora_rank"]
        dn, dr, dv = dims["qk_nope_head_dim"], dims["qk_rope_head_dim"], dims["v_head_dim"]
        src = self.src("mla_config_defaults", "eagle3_weight_mapping")
        pre = f"layers.{k}."
        width = 2 * H if k == 0 else H
        w = "2H" if k == 0 else "H"
        if f"{pre}self_attn.fused_qkv_a_proj.weight" in self.spec.tensors:
            self._expect(
                pre + "self_attn.fused_qkv_a_proj.weight",
                (qr + kvr + dr, width),
                f"[q_lora_rank + kv_lora_rank + qk_rope_head_dim, {w}]",
                UNINITIALISED,
                src,
                oversize=TRUNCATE_ROWS,
            )
        else:
            self._expect(
                pre + "self_attn.q_a_proj.weight",
                (qr, width),
                f"[q_lora_rank, {w}] = [{qr}, {width}]",
                UNINITIALISED,
                src,
                oversize=TRUNCATE_ROWS,
            )
            self._expect(
                pre + "self_attn.kv_a_proj_with_mqa.weight",
                (kvr + dr, width),
                f"[kv_lora_rank + qk_rope_head_dim, {w}] = [{kvr + dr}, {width}]",
                UNINITIALISED,
                src,
                oversize=TRUNCATE_ROWS,
            )
        self._expect(pre + "self_attn.q_a_layernorm.weight", (qr,), "[q_lora_rank]", ONES, src)
        self._expect(
            pre + "self_attn.q_b_proj.weight",
            (nh * (dn + dr), qr),
            f"[num_attention_heads·(qk_nope + qk_rope), q_lora_rank] = [{nh * (dn + dr)}, {qr}]",
            UNINITIALISED,
            src,
            oversize=TRUNCATE_ROWS,
        )
        self._expect(pre + "self_attn.kv_a_layernorm.weight", (kvr,), "[kv_lora_rank]", ONES, src)
        self._expect(
            pre + "self_attn.kv_b_proj.weight",
            (nh * (dn + dv), kvr),
            f"[num_attention_heads·(qk_nope + v_head), kv_lora_rank] = [{nh * (dn + dv)}, {kvr}]",
            UNINITIALISED,
            src,
            oversize=TRUNCATE_ROWS,
        )
        self._expect(
            pre + "self_attn.o_proj.weight",
            (H, nh * dv),
            f"[hidden_size, num_attention_heads·v_head_dim] = [{H}, {nh * dv}]",
            UNINITIALISED,
            src,
            oversize=TRUNCATE_COLS,
        )
        self._mlp(pre, H, inter, src, bias=False)
        for norm in ("input_layernorm", "post_attention_layernorm"):
            self._expect(pre + f"{norm}.weight", (H,), "[hidden_size]", ONES, src)
        self._expect(
            pre + "hidden_norm.weight", (H,), "[hidden_size]", ONES if k == 0 else None, src
        )
        return True

    def _mlp(self, pre: str, H: int, inter: int, sources: tuple[str, ...], bias: bool) -> None:
        """gate/up/down projections; a stored pre-fused `gate_up_proj` loads as well."""
        if f"{pre}mlp.gate_up_proj.weight" in self.spec.tensors:
            self._expect(
                pre + "mlp.gate_up_proj.weight",
                (2 * inter, H),
                f"[2·intermediate_size, hidden_size] = [{2 * inter}, {H}]",
                UNINITIALISED,
                sources,
                oversize=TRUNCATE_ROWS,
            )
        else:
            for proj in ("gate_proj", "up_proj"):
                self._expect(
                    pre + f"mlp.{proj}.weight",
                    (inter, H),
                    f"[intermediate_size, hidden_size] = [{inter}, {H}]",
                    UNINITIALISED,
                    sources,
                    oversize=TRUNCATE_ROWS,
                )
        self._expect(
            pre + "mlp.down_proj.weight",
            (H, inter),
            f"[hidden_size, intermediate_size] = [{H}, {inter}]",
            UNINITIALISED,
            sources,
            oversize=TRUNCATE_COLS,
        )
        if bias:
            for proj, n in (("gate_proj", inter), ("up_proj", inter), ("down_proj", H)):
                self._expect(
                    pre + f"mlp.{proj}.bias", (n,), "[out features]", UNINITIALISED, sources
                )

    def _llama_layer(
        self,
        k: int,
        d: Dims,
        *,
        first_width: int,
        sources: tuple[str, ...],
        attn_bias: bool,
        o_bias: bool,
        mlp_bias: bool,
        input_norm: bool,
        hidden_norm: bool,
        qk_norm: bool,
        later_width: int | None = None,
    ) -> None:
        """Expectations for decoder layer `k` of a Llama-style draft.

        Layer 0's attention reads `first_width` inputs (2H for EAGLE-3: embedding and fc
        output side by side); later layers read H. With one process (TP=1) vLLM's column-
        parallel loaders narrow oversized q/k/v/gate/up rows and its row-parallel loaders
        narrow oversized o/down columns without complaint, so those are "truncated".
        """
        H, nh, nkv, hd, inter = d
        pre = f"layers.{k}."
        width = first_width if k == 0 else (later_width or H)
        w = "2H" if width == 2 * H else "H"
        q_rows, kv_rows = nh * hd, nkv * hd
        self._expect(
            pre + "self_attn.q_proj.weight",
            (q_rows, width),
            f"[num_attention_heads·head_dim, {w}] = [{nh}·{hd}, {width}]",
            UNINITIALISED,
            sources,
            oversize=TRUNCATE_ROWS,
        )
        for proj in ("k_proj", "v_proj"):
            self._expect(
                pre + f"self_attn.{proj}.weight",
                (kv_rows, width),
                f"[num_key_value_heads·head_dim, {w}] = [{nkv}·{hd}, {width}]",
                UNINITIALISED,
                sources,
                oversize=TRUNCATE_ROWS,
            )
        self._expect(
            pre + "self_attn.o_proj.weight",
            (H, q_rows),
            f"[hidden_size, num_attention_heads·head_dim] = [{H}, {nh}·{hd}]",
            UNINITIALISED,
            sources,
            oversize=TRUNCATE_COLS,
        )
        if attn_bias:
            bias_src = self.src("attention_bias_supported")
            self._expect(
                pre + "self_attn.q_proj.bias",
                (q_rows,),
                "[num_attention_heads·head_dim]",
                UNINITIALISED,
                bias_src,
            )
            for proj in ("k_proj", "v_proj"):
                self._expect(
                    pre + f"self_attn.{proj}.bias",
                    (kv_rows,),
                    "[num_key_value_heads·head_dim]",
                    UNINITIALISED,
                    bias_src,
                )
        if o_bias:
            self._expect(
                pre + "self_attn.o_proj.bias", (H,), "[hidden_size]", UNINITIALISED, sources
            )
        self._mlp(pre, H, inter, sources, bias=mlp_bias)
        if input_norm:
            self._expect(pre + "input_layernorm.weight", (H,), "[hidden_size]", ONES, sources)
        self._expect(pre + "post_attention_layernorm.weight", (H,), "[hidden_size]", ONES, sources)
        if hidden_norm:
            self._expect(pre + "hidden_norm.weight", (H,), "[hidden_size]", ONES, sources)
        elif first_width == 2 * H:
            # EAGLE-3 layers >= 1 still build a hidden_norm they never use.
            self._expect(pre + "hidden_norm.weight", (H,), "[hidden_size]", None, sources)
        if qk_norm:
            for norm in ("q_norm", "k_norm"):
                self._expect(
                    pre + f"self_attn.{norm}.weight",
                    (hd,),
                    "[head_dim]",
                    ONES,
                    self.src("eagle3_draft_architectures"),
                )

    def _expect(
        self,
        canonical: str,
        shape: tuple[int, ...] | None,
        formula: str,
        if_missing: str | None,
        sources: tuple[str, ...],
        oversize: str = FAILS,
    ) -> None:
        param = canonical
        if not self.truncating_loader:
            oversize = FAILS
        self.view.expectations[canonical] = Expectation(
            canonical, param, shape, formula, if_missing, oversize, sources
        )

    def _ever_listed(self, arch: str) -> bool:
        """Whether the data mentions `arch` for any version (else draftfit knows nothing)."""
        for key in ("verifier_eagle3_classes", "verifier_not_eagle3_classes"):
            fact = self.p.data.facts.get(key)
            if fact is not None and any(e.value == arch for e in fact.entries):
                return True
        return False

    def _aux_count(self, family: str) -> tuple[int, str]:
        """N, the number of aux states `fc` is built for: fact `aux_count_rule` lists, per
        class family, the config keys tried in order (an int is N, a list gives its length);
        none means a fixed 3."""
        keys = self.family_value("aux_count_rule", family)
        if not keys:
            return 3, "a fixed count of 3"
        for key in keys:
            value = get_path(self.visible, key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value, f"`{key}`"
            if isinstance(value, list) and value:
                return len(value), f"the length of `{key}`"
        return 3, "the default of 3 (" + ", ".join(f"`{k}`" for k in keys) + " not set)"

    def _fate(
        self,
        raw: str,
        canonical: str,
        status: str,
        reason: str = "",
        sources: tuple[str, ...] = (),
    ) -> None:
        """Record what the loader does with stored tensor `raw` (no parameter unless loaded)."""
        param = canonical if status == "loaded" else None
        self.view.fates.append(TensorFate(raw, canonical, status, param, reason, sources))

    # ------------------------------------------------------------------ shared procedure steps
    def _require_dims(self, base: str, keys: tuple[str, ...]) -> bool:
        """Refuse (missing-config-field) when a dimension every draft layer needs is absent."""
        missing = [
            k
            for k in ("hidden_size", "num_attention_heads", "intermediate_size")
            if self.vint(k) is None
        ]
        if not missing:
            return True
        self.refuse(
            "missing-config-field",
            "the draft config lacks "
            + ", ".join(f"`{k}`" for k in missing)
            + f": {self.p.title} cannot build the draft layer",
            config_at(f"{base}/{missing[0]}"),
            keys,
        )
        return False

    def _dims(self) -> Dims:
        """The decoder dimensions, after `_require_dims` passed: `head_dim` is the declared
        one or hidden_size / num_attention_heads, KV heads default to the heads."""
        H = self.vint("hidden_size")
        nh = self.vint("num_attention_heads")
        inter = self.vint("intermediate_size")
        assert H is not None and nh is not None and inter is not None
        nkv = self.vint("num_key_value_heads") or nh
        return Dims(H, nh, nkv, self.vint("head_dim") or H // nh, inter)

    def _aux_norms(self, n_aux: int, T: int, *, input_norm: bool, fc_norm: bool) -> None:
        """Norms over the aux states before `fc`: `input_norm` [N·T] over their concatenation
        (`norm_before_fc`), or one `fc_norm.k` [T] per state (`fc_norm`)."""
        if input_norm:
            self._expect(
                "input_norm.weight",
                (n_aux * T,),
                f"[N·target_hidden_size] = [{n_aux * T}]",
                ONES,
                self.src("norm_before_fc_supported"),
            )
        if fc_norm:
            for k in self.layer_indices(n_aux):  # one aux state per captured layer
                self._expect(
                    f"fc_norm.{k}.weight",
                    (T,),
                    "[target_hidden_size]",
                    ONES,
                    self.src("fc_norm_supported"),
                )

    def _eagle1_layers(self, src: tuple[str, ...], attn_bias: bool = False) -> tuple[int, int]:
        """EAGLE-1 decoder layers (layer 0 has no input norm) and `fc` [H, 2H]; returns
        (hidden_size, vocab_size)."""
        H, nh, nkv, hd, inter = self._dims()
        n_layers = self.vint("num_hidden_layers") or 1
        self.view.effective.update({"hidden_size": H, "head_dim": hd, "num_layers": n_layers})
        for k in self.layer_indices(n_layers):
            self._llama_layer(
                k,
                Dims(H, nh, nkv, hd, inter),
                first_width=H,
                sources=src,
                attn_bias=attn_bias,
                o_bias=False,
                mlp_bias=False,
                input_norm=k > 0,
                hidden_norm=False,
                qk_norm=False,
            )
        self._expect(
            "fc.weight",
            (H, 2 * H),
            f"[hidden_size, 2·hidden_size] = [{H}, {2 * H}]",
            UNINITIALISED,
            src,
        )
        return H, self.vint("vocab_size") or 0

    # ------------------------------------------------------------------ target widths
    def _target_width_checks(self, *, eagle1: bool, embedding_shared: bool) -> None:
        """Engine-neutral width checks against the target: fc input, vocab, shared embedding."""
        t = self.target
        if t is None:
            return
        H = self.vint("hidden_size")
        T = self.vint("target_hidden_size") or H
        Ht = t.hidden_size
        if Ht is not None and not eagle1 and T is not None and Ht != T:
            explicit = "target_hidden_size" in self.visible
            where = (
                "/target_hidden_size"
                if explicit
                else f"{self.spec.layer_config_pointer}/hidden_size"
            )
            self.event(
                "target-hidden-size-mismatch",
                f"the draft expects target hidden states of width {T} "
                f"({'target_hidden_size' if explicit else 'hidden_size'}), but the target's "
                f"hidden_size is {Ht}: the `fc` matmul fails at the first speculative step",
                config_at(where),
                ("eagle3_weight_mapping",),
                fix=f"set `target_hidden_size` to {Ht} only if `fc` was trained on {Ht}-wide "
                "states; otherwise the draft must be retrained for this target",
            )
        if eagle1 and Ht is not None and H is not None and Ht != H:
            self.event(
                "target-hidden-size-mismatch",
                f"EAGLE-1 drafts concatenate the token embedding with the target's hidden state, "
                f"so hidden_size {H} must equal the target's {Ht}",
                config_at(f"{self.spec.layer_config_pointer}/hidden_size"),
                ("eagle_weight_mapping",),
                fix="retrain the draft for this target",
            )
        V = self.vint("vocab_size")
        Vt = t.vocab_size
        if V is not None and Vt is not None and Vt != V:
            self.event(
                "vocab-size-mismatch",
                f"the draft's vocab_size is {V} but the target's is {Vt}: token ids and logits "
                "do not line up (out-of-range ids or wrong tokens at the first forward)",
                config_at(f"{self.spec.layer_config_pointer}/vocab_size"),
                ("eagle3_weight_mapping" if not eagle1 else "eagle_weight_mapping",),
                fix="use a draft trained with this target's tokenizer",
            )
        # Embedding sharing: a draft without its own embedding borrows the target's.
        if embedding_shared and H is not None and Ht is not None and Ht != H:
            self.event(
                "shared-embedding-width-mismatch",
                f"the draft stores no `embed_tokens.weight`, so {self.p.title} shares the target's "
                f"embedding ({Ht} wide) with a draft of hidden_size {H}: the width assert fails at "
                "start-up",
                Location(CONFIG, f"{self.spec.layer_config_pointer}/hidden_size"),
                ("embedding_sharing",),
                fix=f"store the draft's own `embed_tokens.weight` [{V}, {H}]",
            )


def get_path(mapping: Mapping[str, Any], dotted: str) -> Any:
    """`mapping["a"]["b"]` for `"a.b"`, or None when any part is missing."""
    value: Any = mapping
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def target_is_moe(target: Target) -> bool:
    """Whether the target config describes a mixture-of-experts model."""
    for config in (target.text_config, target.config):
        for key in MOE_KEYS:
            value = config.get(key)
            if isinstance(value, int) and value > 1:
                return True
    return False
