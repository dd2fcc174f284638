"""What every engine module shares: a builder that turns a draft spec plus a versioned
:class:`Profile` into an :class:`EngineView`.

:class:`BaseBuilder` holds the procedure every engine follows (`run`: method, config route
and draft class, dimensions, the EAGLE-3 or EAGLE-1 parameters, the loader's walk over the
stored tensors, the target checks) as a template. Engine modules (:mod:`.vllm`,
:mod:`.sglang`, :mod:`.trtllm`) subclass it and implement only the hooks where their
engine differs; every version-dependent value comes from the engine's data file, with the
source line it was read from. The decoder-layer builders (Llama-style and MLA) are the same
in every engine, so they live here, with their shape formulas in :mod:`.shapes`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.draft.description import EAGLE, EAGLE3, DraftDescription
from draftfit.draft.target import Target
from draftfit.draft.target_rotation import Rotation
from draftfit.engines import shapes
from draftfit.engines.dimension_fit import fit_dimensions
from draftfit.engines.draft_quant import (
    QUANTIZED_DTYPES,
    MissingData,
    missing_quant_data,
    read_draft_quant,
)
from draftfit.engines.view import (
    FAILS,
    ONES,
    TRUNCATE_COLS,
    TRUNCATE_ROWS,
    UNINITIALISED,
    BuildInputs,
    EngineView,
    Event,
    Expectation,
    FateCause,
    TensorFate,
)
from draftfit.location import Location, config_at, in_target_file
from draftfit.records import frozen
from draftfit.rule_ids import Consequence, RuleId
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from typing import Any

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.MISSING_CONFIG_FIELD,
    rule_ids.DRAFT_SLIDING_WINDOW_IGNORED,
    rule_ids.QUANTIZATION_DATA_MISSING,
    rule_ids.VOCAB_SIZE_MISMATCH,
    rule_ids.TARGET_HIDDEN_SIZE_MISMATCH,
    rule_ids.SHARED_EMBEDDING_WIDTH_MISMATCH,
    rule_ids.TARGET_ROTATION_UNCOMPENSATED,
    rule_ids.TARGET_ROTATION_UNCHECKED,
)
EMITS_STAGE = "engine procedure: the steps every engine shares"

CONFIG = "config.json"
MOE_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
# Decoder layers whose tensors a view expects. Drafts have one to a few layers and the
# largest targets ~200; a config claiming 2**31 - 1 layers must not loop that many times.
MAX_EXPANDED_LAYERS = 256


# What an ignored draft window does, said by every engine's DF130 message.
IGNORED_WINDOW = (
    "the draft attends over the whole context, so acceptance drops on prompts longer than "
    "the window"
)


def draft_window(config: Mapping[str, Any]) -> tuple[int, str] | None:
    """The sliding window a draft was trained with, and the JSON pointer of its size: a
    `layer_types` list naming `sliding_attention` beside a positive integer
    `sliding_window`, at the top of the config or in a speculators
    `transformer_layer_config`. None when the draft has no window."""
    places: list[tuple[Mapping[str, Any], str]] = [(config, "")]
    nested = config.get("transformer_layer_config")
    if isinstance(nested, Mapping):
        places.append((nested, "/transformer_layer_config"))
    for cfg, base in places:
        types = cfg.get("layer_types")
        size = cfg.get("sliding_window")
        if (
            isinstance(types, list)
            and "sliding_attention" in types
            and isinstance(size, int)
            and not isinstance(size, bool)
            and size > 0
        ):
            return size, f"{base}/sliding_window"
    return None


@frozen
class Dims:
    """Decoder-layer dimensions: hidden, heads, kv heads, head_dim, intermediate."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int


@frozen
class Vocab:
    """The draft vocabulary: the head's rows (None: unknown) and whether the engine takes
    the head from the target instead."""

    size: int | None
    head_from_target: bool


@frozen
class Built:
    """How a parameter is built: what its absence does and the source lines behind it."""

    if_missing: str | None
    citations: tuple[str, ...]


@frozen
class Mapped:
    """Where the loader's renaming takes a stored name: the parameter name (None: none),
    why it reaches none, and the cause to record when no parameter has that name."""

    canonical: str | None
    why: str = ""
    cause: FateCause = FateCause.UNKNOWN_NAME


class BaseBuilder:
    """The procedure every engine's builder follows, its state and shared steps.

    `visible` is the config as the engine's draft class reads it (after any config route);
    engine modules fill it in `_resolve_class`. `family` is the resolved class's shape
    family (`_family`). Methods documented as hooks are where engines differ.
    """

    # Whether the engine's linear loaders narrow an oversized stored tensor silently
    # (vLLM-derived loaders do; a plain `copy_` raises instead).
    truncating_loader = True
    # Shape families (set by `_family`) built as EAGLE-1, EAGLE-3 and EAGLE-3 with MLA layers.
    eagle1_families: frozenset[str] = frozenset()
    eagle3_families: frozenset[str] = frozenset()
    mla_families: frozenset[str] = frozenset()
    # Whether the engine still loads tensors after a refusal while building the draft.
    maps_after_refusal = False
    # Whether `fc_norm` replaces `norm_before_fc`'s `input_norm` when both are set.
    fc_norm_replaces_input_norm = False

    @classmethod
    def build(cls, inputs: BuildInputs) -> EngineView:
        """Resolve the draft the way this engine at `inputs.profile.version` would."""
        p = inputs.profile
        view = EngineView(p.engine, p.version, p.title, cls.method_for(inputs.method, inputs.spec))
        builder = cls(inputs, view)
        builder.run()
        if inputs.serve is not None:
            builder.check_launch(inputs.serve)
        return view

    def check_launch(self, settings: ServeSettings) -> None:
        """Emit what this engine version does with the launch's serving settings (its
        folder's `launch_checks`); nothing by default."""

    @staticmethod
    def method_for(method: str | None, spec: DraftDescription) -> str | None:
        """The method the engine starts from. `auto` (no method given) means the checkpoint's
        own kind, except in engines that guess it themselves (vLLM, from the path)."""
        return spec.method if method == "auto" else method

    def __init__(self, inputs: BuildInputs, view: EngineView) -> None:
        self.inputs = inputs
        self.ckpt = inputs.checkpoint
        self.config: Mapping[str, Any] = inputs.spec.config  # wrong-typed values set aside
        self.spec = inputs.spec
        self.target = inputs.target
        self.p = inputs.profile
        self.view = view
        self.method = view.method
        self.method_explicit = inputs.method_explicit
        self.visible: dict[str, Any] = {}
        self.route = "hf"
        self.family = ""

    def src(self, *keys: str) -> tuple[str, ...]:
        return self.p.citations(*keys)

    def value(self, key: str) -> Any:
        return self.p.value(key)

    def refuse(
        self,
        rule: RuleId,
        message: str,
        location: Location,
        keys: tuple[str, ...],
        fix: str | None = None,
        consequence: Consequence | None = None,
    ) -> None:
        """Record a refusal; its consequence is `consequence`, else what the data says for
        `keys` at this version, else the rule's own."""
        stated = consequence or self.p.consequence(*keys)
        self.view.refuse(Event(rule, message, location, self.src(*keys), fix, stated))

    def event(
        self,
        rule: RuleId,
        message: str,
        location: Location,
        keys: tuple[str, ...],
        fix: str | None = None,
        consequence: Consequence | None = None,
    ) -> None:
        """Record an event; its consequence as for :meth:`refuse`."""
        stated = consequence or self.p.consequence(*keys)
        self.view.add(Event(rule, message, location, self.src(*keys), fix, stated))

    def family_value(self, key: str, family: str) -> Any:
        """A fact whose value is a `{class family: value, "*": value}` table, for `family`
        (a plain value is returned as is)."""
        value = self.value(key)
        if isinstance(value, dict):
            return value.get(family, value.get("*"))
        return value

    def _eagle_config(self) -> dict[str, Any]:
        """The visible config's `eagle_config` object (empty when absent or not an object)."""
        ec = self.visible.get("eagle_config")
        return ec if isinstance(ec, dict) else {}

    def layer_indices(self, n_layers: int) -> range:
        """The layers whose tensors are expected: at most :data:`MAX_EXPANDED_LAYERS`."""
        return range(min(n_layers, MAX_EXPANDED_LAYERS))

    def vint(self, key: str) -> int | None:
        value = self.visible.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    # ------------------------------------------------------------------ the procedure
    # Every engine resolves a draft the same way: settle the method, route the config to
    # the draft class, check the dimensions, build the parameters (EAGLE-3 or EAGLE-1),
    # walk the stored tensors through the loader's naming, then compare with the target.
    # Engine modules implement the hooks each step calls; everything else lives here.

    def run(self) -> None:
        """Fill `self.view` by the shared procedure."""
        if self.ckpt.config is None:
            return  # structure findings already say why; nothing to resolve
        if not self._method_ok():
            return
        arch = self._resolve_class()
        self.view.config = self.visible
        if arch is None:
            self._no_draft_class()
            return
        self.view.draft_class = arch
        self.family = self._family(arch)
        if not self._dims_present():
            return
        self.view.built = True
        if not self._build_draft():
            self.view.built = False
            if not self.maps_after_refusal:
                return
        self._map_tensors()
        if self.view.built and self.inputs.fit_dimensions:
            self.view.dimension_fits = fit_dimensions(self.inputs, self.view, type(self).build)
        self._quant_data_missing()
        self._target_checks()

    def _quant_data_missing(self) -> None:
        """DF211: linear layers the draft's `quantization_config` quantizes that store no
        scales (or zero points), and what this version does with them: a layer it builds
        with the scheme keeps the missing data at its initial values; one it builds
        unquantized takes the stored FP8/INT8 values as plain weights (fact
        `quantized_weight_in_unquantized_layer`: `cast`). Either way the draft loads and
        drafts garbage."""
        q = read_draft_quant(self.config)
        if q is None:
            return
        dtypes = {name: info.dtype for name, info in self.spec.tensors.items()}
        missing = missing_quant_data(q, dtypes)
        if not missing:
            return
        cast = (
            "quantized_weight_in_unquantized_layer" in self.p.data.facts
            and self.value("quantized_weight_in_unquantized_layer") == "cast"
        )
        scaled: list[MissingData] = []
        unscaled: list[MissingData] = []
        for item in missing:
            if any(f"{item.module}.{n}" in self.view.expectations for n in item.missing):
                scaled.append(item)
            elif cast and item.weight.endswith(".weight") and item.dtype in QUANTIZED_DTYPES:
                unscaled.append(item)
        declared = f"the draft's `quantization_config` declares {q.method} {q.scheme} weights"
        fix = (
            "store the tensors the quantization wrote beside each weight (re-export the "
            "quantized draft whole), or store the draft dequantized (bf16) without a "
            "`quantization_config`"
        )
        if scaled:
            first = scaled[0]
            names = _names(first.missing)
            expectation = self.view.expectations.get(f"{first.module}.{first.missing[0]}")
            self.view.add(
                Event(
                    rule_ids.QUANTIZATION_DATA_MISSING,
                    f"{declared}, but no {names} is stored for {_layers(scaled, self.spec.raw)}: "
                    f"{self.p.title} builds {_them(scaled)} with the {q.scheme} scheme and "
                    f"leaves each missing {names} at its initial value; it loads without an "
                    "error and drafts garbage (acceptance near zero)",
                    self._tensor_location(first.weight),
                    expectation.citations if expectation is not None else (),
                    fix,
                )
            )
        if unscaled:
            first = unscaled[0]
            self.event(
                rule_ids.QUANTIZATION_DATA_MISSING,
                f"{declared}, but no {_names(first.missing)} is stored for "
                f"{_layers(unscaled, self.spec.raw)}: {self.p.title} builds {_them(unscaled)} "
                f"unquantized and copies the stored {first.dtype} values into its weights as "
                "they are, without scales; it loads without an error and drafts garbage "
                "(acceptance near zero)",
                self._tensor_location(first.weight),
                ("draft_quant_config_source", "quantized_weight_in_unquantized_layer"),
                fix=fix,
            )

    def _tensor_location(self, canonical: str) -> Location:
        raw = self.spec.raw(canonical)
        info = self.ckpt.tensors.get(raw)
        return Location(info.file if info else None, tensor=raw)

    def _no_draft_class(self) -> None:
        """Hook: what the engine still checks when no draft class resolves (nothing here)."""

    def _method_ok(self) -> bool:
        """Whether the engine goes on with the method it serves the draft with."""
        self._settle_method()
        if self.method not in (EAGLE3, EAGLE):
            return False
        return self._method_supported() and self._method_matches()

    def _settle_method(self) -> None:
        """Hook: decide the method when the user gave none (vLLM guesses from the path)."""

    def _method_supported(self) -> bool:
        """Hook: refuse (and return False) when this version has no drafting for the method."""
        raise NotImplementedError

    def _method_matches(self) -> bool:
        """Hook: report a method that does not fit the checkpoint; False stops the engine."""
        return True

    def _resolve_class(self) -> str | None:
        """Hook: route the config (filling `self.visible`) and return the draft class the
        engine builds, or None after a refusal."""
        raise NotImplementedError

    def _family(self, arch: str) -> str:
        """Hook: the shape family of draft class `arch`."""
        raise NotImplementedError

    def _dims_present(self) -> bool:
        """Hook: refuse (and return False) when the draft layer cannot be built."""
        raise NotImplementedError

    def _build_draft(self) -> bool:
        """The parameters of the resolved class; False when a refusal stops the build."""
        if self.family in self.eagle1_families:
            self._eagle1()
            return True
        if self.family in self.eagle3_families:
            return self._eagle3()
        return True

    def _eagle1(self) -> None:
        """Hook: the parameters of an EAGLE-1 draft class."""
        raise NotImplementedError

    def _target_checks(self) -> None:
        """Hook: what the engine does with this draft next to the target."""
        raise NotImplementedError

    # ------------------------------------------------------------------ EAGLE-3 skeleton

    def _eagle3(self) -> bool:
        """EAGLE-3: widths, vocabulary, decoder layers, `fc` over N aux states and the norms
        before it, embedding, head and `d2t`, then the aux layers captured and the norm
        flags honoured. False when a refusal stops the build."""
        d = self._dims()
        H = d.hidden
        V = self.vint("vocab_size")
        T = self._target_hidden_size(H)
        if T is None:
            return False
        self.view.effective.update(
            {"hidden_size": H, "head_dim": d.head_dim, "target_hidden_size": T}
        )
        vocab = self._draft_vocab(V)
        if vocab is None:
            return False
        Vd = vocab.size
        self.view.effective["draft_vocab_size"] = Vd
        n_layers = self._layer_count()
        if n_layers is None:
            return False
        self.view.effective["num_layers"] = n_layers
        src = self._layer_sources()
        for k in self.layer_indices(n_layers):
            if self.family in self.mla_families:
                if not self._mla_layer(k, H, d.heads, d.intermediate):
                    return False
                continue
            self._eagle3_layer(k, d, src)
        self._extra_modules(H)
        self._expect("norm.weight", shapes.hidden_vector(H), ONES, src)

        n_aux, count_from = self._aux_states()
        use_aux = self._uses_aux()
        self._fc(H, T, n_aux, count_from, use_aux)
        norms = self._norms()
        input_norm = norms["norm_before_fc"] and use_aux
        if self.fc_norm_replaces_input_norm and norms["fc_norm"]:
            input_norm = False
        self._aux_norms(n_aux, T, input_norm=input_norm, fc_norm=norms["fc_norm"] and use_aux)

        embedding = self._embedding_if_missing(H, T, vocab.head_from_target)
        self._expect(
            "embed_tokens.weight",
            shapes.embedding(V, H),
            embedding,
            self.src("embedding_sharing"),
        )
        head = self._head(V, Vd, vocab.head_from_target)
        if head is not None:
            self._expect("lm_head.weight", shapes.lm_head(Vd, H), head.if_missing, head.citations)
        reduced = Vd is not None and V is not None and Vd != V
        self._d2t(V, Vd, reduced)
        self.view.effective["reduced_vocab"] = reduced

        self._aux_capture(n_aux, count_from, use_aux)
        if self.view.aux is not None:
            self.view.aux.concat_order = self.p.peek("aux_concat_order")
        self._flags(norms)
        self._sliding_window()
        self.view.effective["norms"] = {
            "norm_before_residual": self._norm_before_residual(),
            **norms,
        }
        self.view.effective["num_aux_states"] = n_aux if use_aux else 0
        self._after_eagle3()
        return True

    def _target_hidden_size(self, H: int) -> int | None:
        """Hook: the width of the target states `fc` reads, or None after a refusal."""
        raise NotImplementedError

    def _draft_vocab(self, V: int | None) -> Vocab | None:
        """Hook: the draft vocabulary the head is built for, or None after a refusal."""
        raise NotImplementedError

    def _layer_count(self) -> int | None:
        """Hook: how many decoder layers the draft builds, or None after a refusal."""
        raise NotImplementedError

    def _layer_sources(self) -> tuple[str, ...]:
        """The source lines behind the decoder layers' parameters."""
        return self.src("eagle3_weight_mapping")

    def _eagle3_layer(self, k: int, d: Dims, citations: tuple[str, ...]) -> None:
        """Hook: the parameters of Llama-style decoder layer `k`."""
        raise NotImplementedError

    def _extra_modules(self, H: int) -> None:
        """Hook: modules the engine builds beside the decoder layers (none by default)."""

    def _aux_states(self) -> tuple[int, str]:
        """N, the number of aux states `fc` is built for, and what decided it."""
        return self._aux_count(self.family)

    def _uses_aux(self) -> bool:
        """Whether the draft reads aux states at all: `eagle_config.use_aux_hidden_state`
        false switches them (and `fc`) off where the version reads it."""
        ec = self._eagle_config()
        use_aux = not (
            self.value("use_aux_hidden_state_supported") and ec.get("use_aux_hidden_state") is False
        )
        self.view.effective["use_aux_hidden_state"] = use_aux
        return use_aux

    def _fc(self, H: int, T: int, n_aux: int, count_from: str, use_aux: bool) -> None:
        """Hook: `fc` (and its bias) over the aux states."""
        raise NotImplementedError

    def _norms(self) -> dict[str, bool]:
        """Hook: which of `norm_before_fc`, `fc_norm`, `norm_output` are on *and* honoured."""
        raise NotImplementedError

    def _norm_before_residual(self) -> bool:
        """Whether the draft layer applies its norm before the residual (off by default)."""
        return False

    def _embedding_if_missing(self, H: int, T: int, head_from_target: bool) -> str:
        """Hook: what a missing `embed_tokens.weight` does (SHARED: the target's is used)."""
        raise NotImplementedError

    def _head(self, V: int | None, Vd: int | None, head_from_target: bool) -> Built | None:
        """Hook: how `lm_head.weight` is built, or None when the draft builds no head."""
        raise NotImplementedError

    def _d2t(self, V: int | None, Vd: int | None, reduced: bool) -> None:
        """Hook: the `d2t` parameter and what the engine does with a stored one."""
        raise NotImplementedError

    def _aux_capture(self, n_aux: int, count_from: str, use_aux: bool) -> None:
        """Hook: fill `self.view.aux`: the layers the engine captures and how."""
        raise NotImplementedError

    def _flags(self, norms: dict[str, bool]) -> None:
        """Hook: events for norm flags the checkpoint sets but the engine ignores."""
        raise NotImplementedError

    def _after_eagle3(self) -> None:
        """Hook: facts the engine records once the draft is built (none by default)."""

    def _sliding_window(self) -> None:
        """An event when the draft was trained with a sliding window (`draft_window`) that
        this version does not apply to the draft's attention (fact
        `draft_sliding_window_honoured`, per class family)."""
        found = draft_window(self.config)
        if found is None:
            return
        size, where = found
        honoured = self.family_value("draft_sliding_window_honoured", self.family)
        if honoured is None or honoured is True or self._launch_gives_window(size):
            return
        why, fix = self._sliding_window_advice(size, honoured)
        self.event(
            rule_ids.DRAFT_SLIDING_WINDOW_IGNORED,
            f"the draft was trained with a sliding window of {size} positions, but "
            f"{self.p.title} {why}",
            config_at(where),
            ("draft_sliding_window_honoured",),
            fix=fix,
            # a release that fails building the draft does not serve it at all
            consequence=Consequence.REFUSES_TO_START if honoured == "index-error" else None,
        )

    def _launch_gives_window(self, size: int) -> bool:
        """Hook: whether the launch itself gives the draft this window (no engine by
        default)."""
        return False

    def _sliding_window_advice(self, size: int, how: Any) -> tuple[str, str]:
        """Hook: why this version does not apply a draft window of `size` (`how`: the
        fact's value for the draft's class family), and the fix."""
        raise NotImplementedError

    # ------------------------------------------------------------------ weight names

    def _map_tensors(self) -> None:
        """What the loader does with each stored tensor: names it handles before renaming
        (`_fixed_fate`), then its renaming (`_engine_name`): a name that reaches a parameter
        loads, any other goes to the engine's policy (`_unmatched`)."""
        for raw in self.ckpt.tensors:
            if self._fixed_fate(raw):
                continue
            mapped = self._engine_name(raw)
            if mapped.canonical is not None and mapped.canonical in self.view.expectations:
                self._fate(raw, mapped.canonical, "loaded", cause=FateCause.MATCHED)
                continue
            self._unmatched(raw, mapped)

    def _fixed_fate(self, raw: str) -> bool:
        """Hook: record the fate of a name the loader handles before renaming; True if so."""
        raise NotImplementedError

    def _engine_name(self, raw: str) -> Mapped:
        """Hook: the parameter name the loader's renaming gives `raw`, or why none."""
        raise NotImplementedError

    def _unmatched(self, raw: str, mapped: Mapped) -> None:
        """Hook: record the fate of a name that reaches no parameter."""
        raise NotImplementedError

    def _layer_beyond(self, canonical: str) -> int | None:
        """The number of decoder layers built, when `canonical` names a later layer."""
        built = self.view.effective.get("num_layers", 1)
        n = built if isinstance(built, int) else 1
        m = re.match(r"^layers\.(\d+)\.", canonical)
        return n if m and int(m.group(1)) >= n else None

    # ------------------------------------------------------------------ decoder layers

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
                        rule_ids.MISSING_CONFIG_FIELD,
                        f"`q_lora_rank` is null: {self.p.title}'s MLA draft loader maps "
                        "`kv_a_proj_with_mqa` into the fused q-a/kv-a parameter, which a draft "
                        "without a q LoRA does not have, and the load fails",
                        config_at(f"{self.spec.layer_config_pointer}/q_lora_rank"),
                        ("mla_config_defaults",),
                        fix="train the MLA draft with a q LoRA (q_lora_rank set)",
                    )
                else:
                    self.refuse(
                        rule_ids.MISSING_CONFIG_FIELD,
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
        pre = f"layers.{k}.self_attn."
        width = 2 * H if k == 0 else H
        if f"{pre}fused_qkv_a_proj.weight" in self.spec.tensors:
            self._expect(
                pre + "fused_qkv_a_proj.weight",
                shapes.mla_fused_qkv_a(qr, kvr, dr, width, H),
                UNINITIALISED,
                src,
                oversize=TRUNCATE_ROWS,
            )
        else:
            q_a = shapes.mla_q_a(qr, width, H)
            self._expect(pre + "q_a_proj.weight", q_a, UNINITIALISED, src, TRUNCATE_ROWS)
            kv_a = shapes.mla_kv_a(kvr, dr, width, H)
            self._expect(pre + "kv_a_proj_with_mqa.weight", kv_a, UNINITIALISED, src, TRUNCATE_ROWS)
        self._expect(pre + "q_a_layernorm.weight", shapes.mla_q_a_norm(qr), ONES, src)
        q_b = shapes.mla_q_b(nh, dn, dr, qr)
        self._expect(pre + "q_b_proj.weight", q_b, UNINITIALISED, src, TRUNCATE_ROWS)
        self._expect(pre + "kv_a_layernorm.weight", shapes.mla_kv_a_norm(kvr), ONES, src)
        kv_b = shapes.mla_kv_b(nh, dn, dv, kvr)
        self._expect(pre + "kv_b_proj.weight", kv_b, UNINITIALISED, src, TRUNCATE_ROWS)
        o = shapes.mla_o(H, nh, dv)
        self._expect(pre + "o_proj.weight", o, UNINITIALISED, src, TRUNCATE_COLS)
        layer = f"layers.{k}."
        self._mlp(layer, H, inter, src, bias=False)
        for norm in ("input_layernorm", "post_attention_layernorm"):
            self._expect(layer + f"{norm}.weight", shapes.hidden_vector(H), ONES, src)
        hidden_norm = ONES if k == 0 else None
        self._expect(layer + "hidden_norm.weight", shapes.hidden_vector(H), hidden_norm, src)
        return True

    def _mlp(self, pre: str, H: int, inter: int, citations: tuple[str, ...], bias: bool) -> None:
        """gate/up/down projections; a stored pre-fused `gate_up_proj` loads as well."""
        if f"{pre}mlp.gate_up_proj.weight" in self.spec.tensors:
            fused = shapes.gate_up_fused(inter, H)
            self._expect(
                pre + "mlp.gate_up_proj.weight", fused, UNINITIALISED, citations, TRUNCATE_ROWS
            )
        else:
            for proj in ("gate_proj", "up_proj"):
                gate_up = shapes.gate_or_up(inter, H)
                self._expect(
                    pre + f"mlp.{proj}.weight", gate_up, UNINITIALISED, citations, TRUNCATE_ROWS
                )
        down = shapes.down(H, inter)
        self._expect(pre + "mlp.down_proj.weight", down, UNINITIALISED, citations, TRUNCATE_COLS)
        if bias:
            for proj, n in (("gate_proj", inter), ("up_proj", inter), ("down_proj", H)):
                self._expect(pre + f"mlp.{proj}.bias", shapes.out_bias(n), UNINITIALISED, citations)

    def _llama_layer(
        self,
        k: int,
        d: Dims,
        *,
        first_width: int,
        citations: tuple[str, ...],
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
        H, nh, nkv, hd, inter = d.hidden, d.heads, d.kv_heads, d.head_dim, d.intermediate
        pre = f"layers.{k}."
        attn = pre + "self_attn."
        width = first_width if k == 0 else (later_width or H)
        q = shapes.q_proj(nh, hd, width, H)
        self._expect(attn + "q_proj.weight", q, UNINITIALISED, citations, TRUNCATE_ROWS)
        for proj in ("k_proj", "v_proj"):
            kv = shapes.kv_proj(nkv, hd, width, H)
            self._expect(attn + f"{proj}.weight", kv, UNINITIALISED, citations, TRUNCATE_ROWS)
        o = shapes.o_proj(H, nh, hd)
        self._expect(attn + "o_proj.weight", o, UNINITIALISED, citations, TRUNCATE_COLS)
        if attn_bias:
            bias_src = self.src("attention_bias_supported")
            self._expect(attn + "q_proj.bias", shapes.q_bias(nh, hd), UNINITIALISED, bias_src)
            for proj in ("k_proj", "v_proj"):
                kv_bias = shapes.kv_bias(nkv, hd)
                self._expect(attn + f"{proj}.bias", kv_bias, UNINITIALISED, bias_src)
        if o_bias:
            self._expect(attn + "o_proj.bias", shapes.hidden_vector(H), UNINITIALISED, citations)
        self._mlp(pre, H, inter, citations, bias=mlp_bias)
        norm = shapes.hidden_vector(H)
        if input_norm:
            self._expect(pre + "input_layernorm.weight", norm, ONES, citations)
        self._expect(pre + "post_attention_layernorm.weight", norm, ONES, citations)
        if hidden_norm:
            self._expect(pre + "hidden_norm.weight", norm, ONES, citations)
        elif first_width == 2 * H:
            # EAGLE-3 layers >= 1 still build a hidden_norm they never use.
            self._expect(pre + "hidden_norm.weight", norm, None, citations)
        if qk_norm:
            for name in ("q_norm", "k_norm"):
                self._expect(
                    attn + f"{name}.weight",
                    shapes.head_norm(hd),
                    ONES,
                    self.src("eagle3_draft_architectures"),
                )

    def _expect(
        self,
        canonical: str,
        param: shapes.Param,
        if_missing: str | None,
        citations: tuple[str, ...],
        oversize: str = FAILS,
    ) -> None:
        """Record that the draft class builds parameter `canonical` with `param`'s shape."""
        if not self.truncating_loader:
            oversize = FAILS
        self.view.expectations[canonical] = Expectation(
            canonical,
            canonical,
            param.shape,
            param.formula,
            if_missing,
            oversize,
            citations,
            param.axes,
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
        citations: tuple[str, ...] = (),
        *,
        cause: FateCause,
        fix: str | None = None,
    ) -> None:
        """Record what the loader does with stored tensor `raw` (no parameter unless loaded)."""
        param = canonical if status == "loaded" else None
        self.view.fates.append(
            TensorFate(raw, canonical, status, param, reason, citations, cause=cause, fix=fix)
        )

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
            rule_ids.MISSING_CONFIG_FIELD,
            "the draft config has no usable "
            + ", ".join(f"`{k}`" for k in missing)
            + f", so {self.p.title} cannot build the draft layer",
            config_at(f"{base}/{missing[0]}"),
            keys,
            fix="write "
            + ", ".join(f"`{k}`" for k in missing)
            + " as positive integers, with the values the draft was trained with",
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
                shapes.aux_input_norm(n_aux, T),
                ONES,
                self.src("norm_before_fc_supported"),
            )
        if fc_norm:
            for k in self.layer_indices(n_aux):  # one aux state per captured layer
                self._expect(
                    f"fc_norm.{k}.weight",
                    shapes.aux_fc_norm(T),
                    ONES,
                    self.src("fc_norm_supported"),
                )

    def _eagle1_layers(self, src: tuple[str, ...], attn_bias: bool = False) -> tuple[int, int]:
        """EAGLE-1 decoder layers (layer 0 has no input norm) and `fc` [H, 2H]; returns
        (hidden_size, vocab_size)."""
        d = self._dims()
        n_layers = self.vint("num_hidden_layers") or 1
        self.view.effective.update(
            {"hidden_size": d.hidden, "head_dim": d.head_dim, "num_layers": n_layers}
        )
        for k in self.layer_indices(n_layers):
            self._llama_layer(
                k,
                d,
                first_width=d.hidden,
                citations=src,
                attn_bias=attn_bias,
                o_bias=False,
                mlp_bias=False,
                input_norm=k > 0,
                hidden_norm=False,
                qk_norm=False,
            )
        self._expect("fc.weight", shapes.eagle1_fc(d.hidden), UNINITIALISED, src)
        return d.hidden, self.vint("vocab_size") or 0

    # ------------------------------------------------------------------ target widths
    def _target_width_fix(self, width: int, target_width: int) -> str:
        """The fix for a draft that expects `width`-wide target states next to a
        `target_width`-wide target, as the stored `fc` shows it: trained on the target's
        width (the config is wrong: say `target_hidden_size`), or on the width the config
        says (the draft was trained for another target: no config edit serves it here)."""
        stored = next(
            (
                info.shape
                for name, info in self.ckpt.tensors.items()
                if (name == "fc.weight" or name.endswith(".fc.weight")) and len(info.shape) == 2
            ),
            None,
        )
        if stored is not None and stored[1] > 0:
            fits_target = stored[1] % target_width == 0
            fits_config = stored[1] % width == 0
            shown = f"`fc.weight` is [{stored[0]}, {stored[1]}]"
            if fits_target and not fits_config:
                return (
                    f"set `target_hidden_size` to {target_width}: {shown}, trained on "
                    f"{target_width}-wide states"
                )
            if fits_config and not fits_target:
                return (
                    f"use a draft trained for this target: {shown}, trained on {width}-wide "
                    f"states of another model, so no config edit serves it next to this one"
                )
        return (
            f"set `target_hidden_size` to {target_width} only if `fc` was trained on "
            f"{target_width}-wide states; otherwise the draft must be retrained for this target"
        )

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
                rule_ids.TARGET_HIDDEN_SIZE_MISMATCH,
                f"the draft expects target hidden states of width {T} "
                f"({'target_hidden_size' if explicit else 'hidden_size'}), but the target's "
                f"hidden_size is {Ht}: the `fc` matmul fails the first time the draft reads the "
                "target's states (in the start-up warm-up where the engine runs the draft on "
                "them, else at the first speculative step)",
                config_at(where),
                ("eagle3_weight_mapping",),
                fix=self._target_width_fix(T, Ht),
            )
        if eagle1 and Ht is not None and H is not None and Ht != H:
            self.event(
                rule_ids.TARGET_HIDDEN_SIZE_MISMATCH,
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
                rule_ids.VOCAB_SIZE_MISMATCH,
                f"the draft's vocab_size is {V} but the target's is {Vt}: token ids and logits "
                "do not line up (out-of-range ids or wrong tokens at the first forward)",
                config_at(f"{self.spec.layer_config_pointer}/vocab_size"),
                ("eagle3_weight_mapping" if not eagle1 else "eagle_weight_mapping",),
                fix="use a draft trained with this target's tokenizer",
            )
        # Embedding sharing: a draft without its own embedding borrows the target's.
        if embedding_shared and H is not None and Ht is not None and Ht != H:
            self.event(
                rule_ids.SHARED_EMBEDDING_WIDTH_MISMATCH,
                f"the draft stores no `embed_tokens.weight`, so {self.p.title} shares the target's "
                f"embedding ({Ht} wide) with a draft of hidden_size {H}: the width assert fails at "
                "start-up",
                Location(CONFIG, f"{self.spec.layer_config_pointer}/hidden_size"),
                ("embedding_sharing",),
                fix=f"store the draft's own `embed_tokens.weight` [{V}, {H}]",
            )

    # ------------------------------------------------------------------ rotated targets
    def _target_rotation(self) -> None:
        """A rotation-quantized (ModelSlim QuaRot) target: DF516 where this version leaves
        the draft in the unrotated basis, DF519 where draftfit could not tell. Quiet for an
        unrotated target, where the engine compensates, or when the draft's speculators
        config names this target as its verifier (it was trained on the rotated model)."""
        t = self.target
        if t is None:
            return
        check = t.rotation
        if check.unchecked is not None:
            self.event(
                rule_ids.TARGET_ROTATION_UNCHECKED,
                f"{check.unchecked}, so draftfit cannot tell whether the target was "
                "rotation-quantized (ModelSlim QuaRot), which would leave an unrotated "
                "draft's proposals almost all rejected",
                in_target_file(check.unchecked_file),
                (),
                fix=f"check with the target's `{check.unchecked_file}` readable as a regular "
                "file inside its folder (download it)",
            )
            return
        rotation = check.rotation
        if rotation is None or self._draft_names_target_as_verifier(t):
            return
        where = in_target_file(rotation.file, rotation.pointer)
        fact = self.p.fact("draft_rotation_compensated")
        if not fact.known:
            self.event(
                rule_ids.TARGET_ROTATION_UNCHECKED,
                f"{rotation.shown_by}: the target was rotation-quantized (ModelSlim QuaRot); "
                f"draftfit has no record of whether {self.p.title} serves the draft in the "
                "rotated basis",
                where,
                (),
                fix="check that the serving stack multiplies the draft's `fc` by the "
                "rotation, or use a draft trained on the rotated target",
            )
            return
        advice = self._rotation_advice(str(fact.value), rotation)
        if advice is None:
            return
        why, fix = advice
        borrowed = (
            " and gives it the target's rotated embedding"
            if "embed_tokens.weight" not in self.spec.tensors
            else ""
        )
        verifier = self.spec.get("verifier.name_or_path")
        trained = (
            f" (its speculators config names `{verifier}` as the verifier it was trained with)"
            if isinstance(verifier, str) and verifier.strip()
            else ""
        )
        self.event(
            rule_ids.TARGET_ROTATION_UNCOMPENSATED,
            f"{rotation.shown_by}: the target was rotation-quantized (ModelSlim QuaRot), so "
            f"its hidden states are in a rotated basis; {why} loads the draft's `fc` as "
            f"stored{borrowed}: the draft reads states it was not trained on{trained} and "
            "almost no proposal is accepted (no error)",
            where,
            ("draft_rotation_compensated",),
            fix=fix,
        )

    def _rotation_advice(self, compensated: str, rotation: Rotation) -> tuple[str, str] | None:
        """Hook: for fact `draft_rotation_compensated` = `compensated`, None when this
        version serves the draft in the rotated basis, else the subject of "loads the
        draft's `fc` as stored" (naming the engine and why) and the fix for this version."""
        raise NotImplementedError

    def _draft_names_target_as_verifier(self, t: Target) -> bool:
        """Whether the draft's `speculators_config.verifier.name_or_path` names this rotated
        target: the same last path component (ignoring case), and one that says QuaRot. The
        rotation is a seeded random matrix that can differ between exports, so only the very
        checkpoint counts; a folder that merely shares the base model's name does not."""
        verifier = self.spec.get("verifier.name_or_path")
        if not isinstance(verifier, str) or not verifier.strip():
            return False
        name = _model_name(verifier)
        return name == _model_name(t.origin) and "quarot" in name


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


def _model_name(reference: str) -> str:
    """The last path component of a model reference (`hf://org/name@rev` -> `name`),
    lower-cased."""
    text = reference.removeprefix("hf://").split("@", 1)[0].rstrip("/\\")
    return text.replace("\\", "/").rsplit("/", 1)[-1].lower()


def _names(names: tuple[str, ...]) -> str:
    """`` `weight_scale` `` or `` `weight_scale` and `weight_zero_point` ``."""
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _layers(items: list[MissingData], raw: Callable[[str], str]) -> str:
    """`9 quantized layers (first `midlayer.self_attn.q_proj`)` or `the quantized layer `fc``."""
    first = raw(items[0].weight).rsplit(".", 1)[0]
    if len(items) == 1:
        return f"the quantized layer `{first}`"
    return f"{len(items)} quantized layers (first `{first}`)"


def _them(items: list[MissingData]) -> str:
    return "it" if len(items) == 1 else "them"
