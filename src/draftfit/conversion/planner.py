"""Plan a conversion into the convention an engine (or the speculators library) expects.

Conventions (the engine facts and their citations are in `engines/*/data.toml`; aux-id
counting in docs/aux-counting.md):

* **vllm** — a flat HF config whose `architectures` the chosen vLLM version registers, aux
  ids at the top level in capture-before counting (where every vLLM runner reads them),
  `num_aux_hidden_states` when `fc` takes other than 3 states, bare `layers.N.*` names,
  `d2t` kept (dropped when it is the identity and the version rejects it).
* **sglang** — `LlamaForCausalLMEagle3`, `midlayer.*` (single layer), aux ids in
  `eagle_config.eagle_aux_hidden_state_layer_ids` in SGLang's output-of counting,
  `draft_vocab_size` present.
* **speculators** — what the speculators library writes: `speculators_model_type`,
  `speculators_config` (algorithm, proposal methods, verifier), `transformer_layer_config`,
  top-level EAGLE fields, `layers.N.*` names, `t2d` next to `d2t`.

The planner never touches tensor values except to *derive* small vocabulary maps
(`d2t` ↔ `t2d`), which are exact, and to list aux ids written out of order ascending with
`fc`'s input blocks moved to match (:mod:`draftfit.conversion.aux_order`: the same values,
in the order the engines feed them).
"""

from __future__ import annotations

import re
from array import array
from typing import TYPE_CHECKING

from draftfit.checkpoint.model import Checkpoint, TensorInfo
from draftfit.checkpoint.values import DEFAULT_LIMIT, read_ints, read_mask
from draftfit.conversion.aux_order import REORDER_AUX_IDS, AuxOrder, block_order, reorder_tensors
from draftfit.conversion.dimensions import draft_fits
from draftfit.conversion.output import MARKER, MARKER_PART
from draftfit.conversion.plan import DISPLAY_ONLY, SAFE, UNSAFE, Edit, OutputTensor, Plan
from draftfit.draft.aux_counting import CAPTURE_BEFORE, default_capture_ids, resolve_with_target
from draftfit.draft.description import EAGLE, EAGLE_FIELDS, LAYER_FIELDS, DraftDescription
from draftfit.draft.target import Target
from draftfit.draft.tensor_names import fc_blocks_problem, is_known_role
from draftfit.draft.verifier_identity import MISMATCH, REVISION, check_verifier
from draftfit.engines.interface import ConventionLayout, Engine, engine_of
from draftfit.engines.profile import Profile
from draftfit.engines.registry import conventions, planning_engine
from draftfit.errors import EngineDataError, UsageError
from draftfit.rule_ids import VERIFIER_DIFFERS_FROM_TARGET

if TYPE_CHECKING:
    from typing import Any

# Each engine's own convention, then the other planned ones (see `Engine.layouts`).
CONVENTIONS = conventions()
# Keys that only make sense in one convention and are rebuilt by the planner.
SPECULATORS_KEYS = (
    "speculators_model_type",
    "speculators_version",
    "speculators_config",
    "transformer_layer_config",
    "auto_map",
    "has_no_defaults_at_init",
    "embed_requires_grad",
)
NORM_FLAGS = ("norm_before_fc", "fc_norm", "norm_output")
_LAYER = re.compile(r"^layers\.(\d+)\.(.*)$")


def plan_conversion(
    checkpoint: Checkpoint,
    draft: DraftDescription,
    to: str,
    profile: Profile | None,
    target: Target | None = None,
    unsafe: bool = False,
) -> Plan:
    """Plan the conversion of `checkpoint` into convention `to`, laid out as the engine that
    plans it says (`profile`'s engine where it plans `to`, else the registered one)."""
    engine = _planning_engine(to, profile)
    if engine is None:
        raise UsageError(f"unknown convention {to!r}; choose from {', '.join(CONVENTIONS)}")
    if checkpoint.config is None:
        raise UsageError(f"{checkpoint.origin} has no readable config.json; nothing to convert")
    if draft.method == EAGLE:
        raise UsageError(
            f"{checkpoint.origin} is an EAGLE-1 draft; draftfit converts EAGLE-3 drafts only"
        )
    planner = _Planner(checkpoint, draft, engine, to, profile, target, unsafe)
    return planner.run()


def _planning_engine(to: str, profile: Profile | None) -> Engine | None:
    if profile is not None and to in engine_of(profile).plans:
        return engine_of(profile)
    return planning_engine(to)


class _Planner:
    def __init__(
        self,
        checkpoint: Checkpoint,
        draft: DraftDescription,
        engine: Engine,
        to: str,
        profile: Profile | None,
        target: Target | None,
        unsafe: bool,
    ) -> None:
        self.ckpt = checkpoint
        self.draft = draft
        self.engine = engine  # the engine that plans the convention
        self.to = to
        self.layout: ConventionLayout = engine.layout(to)
        self.profile = profile
        self.target = target
        self.edits: list[Edit] = []
        self.unsafe = unsafe
        # Top-level config keys corrected to the value the stored tensors imply.
        self.corrected: dict[str, Any] = {}
        self.aux_order: AuxOrder | None = None  # set where the aux ids are put in order

    def edit(self, action: str, target: str, description: str, safety: str = SAFE) -> bool:
        """Record an edit; return whether it is applied."""
        item = Edit(action, target, description, safety)
        self.edits.append(item)
        return safety == SAFE or (safety == UNSAFE and self.unsafe)

    # ------------------------------------------------------------------ driver
    def run(self) -> Plan:
        for problem in self.draft.config_problems:
            self.edit(
                "none",
                problem.pointer,
                f"`{problem.pointer}` is {problem.shown()}, not a {problem.expected}: it is "
                f"left out of the output; write it as a {problem.expect.kind}",
                DISPLAY_ONLY,
            )
        layer = self._layer_config()
        eagle = self._eagle_fields(layer)
        aux = self._aux_ids(layer)
        tensors = self._tensors(layer)
        config = self._config(layer, eagle, aux)
        self._engine_limits(config, layer)
        plan = Plan(
            convention=self.to,
            origin=self.ckpt.origin,
            config=config,
            tensors=tensors,
            edits=self.edits,
            copy_files=self._copy_files(config),
            shards=max((t.shard for t in tensors), default=0) + 1,
            unsafe_allowed=self.unsafe,
        )
        return plan

    # ------------------------------------------------------------------ config parts
    def _layer_config(self) -> dict[str, Any]:
        """The decoder fields, wherever the source keeps them."""
        draft = self.draft
        layer: dict[str, Any] = {}
        for name in LAYER_FIELDS:
            field = draft.field(name)
            if field.present:
                layer[name] = field.value
        layer.setdefault("model_type", "llama")
        implied = draft.undeclared_head_dim
        if implied is not None:
            self.edit(
                "set-config",
                draft.pointer("head_dim"),
                f"declare `head_dim: {implied}`: the stored q_proj is {implied}-wide per head, "
                f"while hidden_size/num_attention_heads gives {draft.head_dim}",
            )
            layer["head_dim"] = implied
        self._dimension_fits(layer)
        if draft.layer_config_pointer and not self.layout.speculators_config:
            self.edit(
                "move-config",
                draft.layer_config_pointer,
                f"flatten `{draft.layer_config_pointer}` into the top level",
            )
        elif not draft.layer_config_pointer and self.layout.speculators_config:
            self.edit(
                "move-config",
                "/transformer_layer_config",
                "move the decoder fields into `transformer_layer_config`",
            )
        return layer

    def _dimension_fits(self, layer: dict[str, Any]) -> None:
        """Correct a decoder dimension that contradicts the stored tensors (the tensors are
        right): the value they imply, verified by the engine's own derivation of the layer's
        shapes. When the shapes fit two dimensions equally, nothing is guessed."""
        fits = draft_fits(self.ckpt, self.draft, self.target, self.profile)
        for fit in fits:
            if fit.ambiguous:
                options = ", or ".join(f"`{e.key}` to {e.value}" for e in fit.edits)
                self.edit(
                    "none",
                    fit.edits[0].pointer,
                    f"the stored tensors fit either edit: set {options}; the shapes cannot "
                    "tell which value is wrong: take it from the training configuration",
                    DISPLAY_ONLY,
                )
                continue
            edit = fit.edits[0]
            was = edit.declared if edit.declared is not None else "not written"
            self.edit(
                "set-config",
                edit.pointer,
                f"set `{edit.key}` to {edit.value} (was {was}): the stored tensors were trained "
                f"with it ({edit.evidence}); the tensors are kept as stored",
            )
            if edit.key in LAYER_FIELDS:
                layer[edit.key] = edit.value
            else:  # an MLA dimension: a top-level key of the flat config
                self.corrected[edit.key] = edit.value

    def _eagle_fields(self, layer: dict[str, Any]) -> dict[str, Any]:
        draft = self.draft
        out: dict[str, Any] = {}
        for name in EAGLE_FIELDS:
            field = draft.field(name)
            if field.present and name not in ("architectures", "dtype", "torch_dtype", "bias"):
                out[name] = field.value
        for name in NORM_FLAGS:
            nested = draft.field(f"eagle_config.{name}")
            if nested.present and name not in out:
                out[name] = nested.value
        if out.get("target_hidden_size") is None:
            out.pop("target_hidden_size", None)
        # norm_before_residual: write the value the draft was trained with, explicitly.
        trained_nbr = self._trained_norm_before_residual()
        if "norm_before_residual" not in out or out["norm_before_residual"] != trained_nbr:
            self.edit(
                "set-config",
                "/norm_before_residual",
                f"write `norm_before_residual: {str(trained_nbr).lower()}` explicitly (the value "
                f"{draft.dialect.title} trains with); engines default it differently",
            )
        out["norm_before_residual"] = trained_nbr
        if out.get("draft_vocab_size") is None:
            vd = self._draft_vocab_from_tensors()
            if vd is not None:
                self.edit(
                    "set-config",
                    "/draft_vocab_size",
                    f"write `draft_vocab_size: {vd}` (the rows of `lm_head.weight`)",
                )
                out["draft_vocab_size"] = vd
        self._target_hidden_size(out, layer)
        n = self._num_aux_states(out, layer)
        if n is not None and n != 3:
            layer["num_aux_hidden_states"] = n
        return out

    def _trained_norm_before_residual(self) -> bool:
        value = self.draft.get("norm_before_residual")
        if isinstance(value, bool):
            return value
        # Missing: speculators' config class and every other producer default to false.
        return False

    def _draft_vocab_from_tensors(self) -> int | None:
        head = self.draft.tensors.get("lm_head.weight")
        return head.shape[0] if head is not None and len(head.shape) == 2 else None

    def _target_hidden_size(self, eagle: dict[str, Any], layer: dict[str, Any]) -> None:
        if self.target is None or self.target.hidden_size is None:
            return
        H, Ht = layer.get("hidden_size"), self.target.hidden_size
        current = eagle.get("target_hidden_size", H)
        if current == Ht:
            return
        width = self.draft.fc_input_width
        if width and Ht and width % Ht == 0 and current != Ht and "target_hidden_size" not in eagle:
            self.edit(
                "set-config",
                "/target_hidden_size",
                f"write `target_hidden_size: {Ht}` (the target's hidden size; `fc` takes "
                f"{width // Ht} states of that width)",
            )
            eagle["target_hidden_size"] = Ht
        else:
            self.edit(
                "none",
                "/hidden_size",
                f"the draft expects target states of width {current} but the target's hidden "
                f"size is {Ht}: the draft must be retrained for this target",
                DISPLAY_ONLY,
            )

    def _num_aux_states(self, eagle: dict[str, Any], layer: dict[str, Any]) -> int | None:
        width = self.draft.fc_input_width
        t = eagle.get("target_hidden_size") or layer.get("hidden_size")
        if not width or not isinstance(t, int) or not t or width % t:
            return None
        n: int = width // t
        if n != 3 and layer.get("num_aux_hidden_states") != n:
            self.edit(
                "set-config",
                f"{self.draft.layer_config_pointer}/num_aux_hidden_states",
                f"write `num_aux_hidden_states: {n}` (`fc` takes {n} aux states; engines "
                "otherwise assume 3)",
            )
        return n

    def _aux_ids(self, layer: dict[str, Any]) -> tuple[int, ...] | None:
        """The trained aux ids in capture-before counting (None when none are known)."""
        draft = self.draft
        layers = self.target.num_layers if self.target else None
        trained = draft.trained_aux
        if trained is not None:
            resolved = resolve_with_target(trained, layers)
            ids = resolved.capture_before()
            if resolved.convention != CAPTURE_BEFORE:
                self.edit(
                    "move-aux-ids",
                    trained.pointer,
                    f"aux ids {list(trained.ids)} at `{trained.pointer}` are {resolved.convention} "
                    f"counting: they are capture-before {list(ids)}",
                )
            return self._ascending(ids)
        if layers:
            ids = default_capture_ids(layers)
            applied = self.edit(
                "set-config",
                "/eagle_aux_hidden_state_layer_ids",
                f"write the default aux ids {list(ids)} for a {layers}-layer target (no ids are "
                "written; this assumes the draft was trained on the default layers)",
                UNSAFE,
            )
            return ids if applied else None
        return None

    def _ascending(self, ids: tuple[int, ...]) -> tuple[int, ...]:
        """`ids` (capture-before) listed ascending, with `fc`'s input blocks moved to match
        (:mod:`draftfit.conversion.aux_order`), where the engines concatenate the captured
        states in ascending layer order; `ids` as they are where `fc` cannot be rearranged."""
        blocks = block_order(ids)
        if blocks is None or self._concat_order() not in (None, "ascending"):
            return ids
        ascending = tuple(sorted(ids))
        target = self.target.hidden_size if self.target is not None else None
        width = target or self.draft.int_field("target_hidden_size")
        problem = fc_blocks_problem(self.draft.tensors, len(ids), width)
        if problem is not None:
            self.edit(
                "none",
                "fc.weight",
                f"the aux ids {list(ids)} (capture-before) are not ascending, but engines feed "
                f"`fc` the captured states in ascending layer order {list(ascending)}; "
                f"{problem}: the ids are written as they are (`fc` gets its input blocks "
                "permuted: retrain, or rearrange `fc` by hand)",
                DISPLAY_ONLY,
            )
            return ids
        fc = self.draft.tensors["fc.weight"]
        self.aux_order = AuxOrder(ascending, blocks, fc.shape[1] // len(ids))
        moved = ["`fc.weight`"]
        moved += ["`input_norm.weight`"] if "input_norm.weight" in self.draft.tensors else []
        norms = any(name.startswith("fc_norm.") for name in self.draft.tensors)
        self.edit(
            REORDER_AUX_IDS,
            "fc.weight",
            f"list the aux ids ascending, {list(ascending)} (capture-before; written "
            f"{list(ids)}), and move {' and '.join(moved)}'s input blocks ({len(ids)} of "
            f"{self.aux_order.width} columns, one per aux layer) into that order, source blocks "
            f"{list(blocks)}" + (", with the `fc_norm` weights" if norms else "") + ": engines "
            "feed `fc` the captured states in ascending layer order, so the draft, trained "
            "with them in the written order, then gets them in its own order (new bytes for "
            "those weights, the columns moved, values unchanged)",
        )
        return ascending

    def _concat_order(self) -> str | None:
        """The order in which the planned version feeds `fc` the captured states (None: not
        planned for a version, or its data does not say; every engine draftfit has read
        feeds them in ascending layer order)."""
        if self.profile is None:
            return None
        try:
            value = self.profile.peek("aux_concat_order").value
        except EngineDataError:
            return None
        return value if isinstance(value, str) else None

    # ------------------------------------------------------------------ config assembly
    def _config(
        self, layer: dict[str, Any], eagle: dict[str, Any], aux: tuple[int, ...] | None
    ) -> dict[str, Any]:
        source = self.draft.config  # wrong-typed values set aside
        dtype_key = "dtype" if "dtype" in source else "torch_dtype"
        dtype = source.get(dtype_key) or (source.get("transformer_layer_config") or {}).get(
            dtype_key
        )
        if self.layout.speculators_config:
            return self._speculators_config(layer, eagle, aux, dtype_key, dtype)
        config: dict[str, Any] = {"architectures": [self._architecture(layer)]}
        config.update(layer)
        config.update(eagle)
        # Keep unrelated keys of a flat source (bos/eos, rope extras, quantization, ...).
        for key, value in source.items():
            if key in config or key in SPECULATORS_KEYS or key in ("eagle_config",):
                continue
            if key == "eagle_aux_hidden_state_layer_ids":
                continue
            if self.draft.layer_config_pointer == "":
                config[key] = value
        config.update(self.corrected)
        for key in SPECULATORS_KEYS:
            if key in source:
                self.edit("delete-config", f"/{key}", f"remove `{key}` (speculators-only)")
        if dtype is not None:
            config[dtype_key] = dtype
        eagle_config = dict(source.get("eagle_config") or {})
        for name in NORM_FLAGS:
            eagle_config.pop(name, None)
        if aux is not None:
            output_of = self._nested_ids(aux)
            config["eagle_aux_hidden_state_layer_ids"] = list(aux)
            if list(source.get("eagle_aux_hidden_state_layer_ids") or []) != list(aux):
                self.edit(
                    "move-aux-ids",
                    "/eagle_aux_hidden_state_layer_ids",
                    f"write `eagle_aux_hidden_state_layer_ids: {list(aux)}` (capture-before; "
                    "read by vLLM)",
                )
            eagle_config["eagle_aux_hidden_state_layer_ids"] = output_of
            eagle_config.setdefault("use_aux_hidden_state", True)
            nested = (source.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
            if nested is None or list(nested) != output_of:
                self.edit(
                    "move-aux-ids",
                    "/eagle_config/eagle_aux_hidden_state_layer_ids",
                    f"write `eagle_config.eagle_aux_hidden_state_layer_ids: {output_of}` "
                    "(output-of counting; read by SGLang)",
                )
        if eagle_config:
            config["eagle_config"] = eagle_config
        return config

    def _nested_ids(self, aux: tuple[int, ...]) -> list[int]:
        """`eagle_config` ids (output-of for most targets; SGLang's per-target rule when
        converting for an SGLang version next to a known target)."""
        output_of = [i - 1 for i in aux]
        if self.profile is None or self.to not in engine_of(self.profile).plans:
            return output_of
        ids = engine_of(self.profile).nested_aux_ids(self.profile, self.target, aux)
        if ids is None:
            self.edit(
                "none",
                "/eagle_config/eagle_aux_hidden_state_layer_ids",
                f"{self.profile.title} cannot be made to capture {list(aux)} (capture-before) "
                "next to this target; the output-of ids are written anyway",
                DISPLAY_ONLY,
            )
            return output_of
        return list(ids)

    def _architecture(self, layer: dict[str, Any]) -> str:
        """The draft class the convention's engine writes (see `Engine.plans`)."""
        current = self.draft.get("architectures")
        current0 = current[0] if isinstance(current, list) and current else None
        choice = self.engine.convention_architecture(layer, self.profile)
        arch = choice.architecture
        for pointer, description in choice.problems:
            self.edit("none", pointer, description, DISPLAY_ONLY)
        if current0 != arch:
            self.edit(
                "set-config",
                "/architectures",
                f'set `architectures` to ["{arch}"] (was {current!r})',
            )
        return arch

    def _records_another_verifier(self) -> bool:
        """Whether the draft records a verifier that names another model than the target
        (DF507) and the user did not say it is meant for the target: a conversion keeps
        that record rather than write the target over the model it was trained for."""
        if self.target is None:
            return False
        check = check_verifier(self.draft, self.target)
        return check.outcome in (MISMATCH, REVISION) and not check.declared

    def _speculators_config(
        self,
        layer: dict[str, Any],
        eagle: dict[str, Any],
        aux: tuple[int, ...] | None,
        dtype_key: str,
        dtype: Any,
    ) -> dict[str, Any]:
        source = self.draft.config  # wrong-typed values set aside
        found = source.get("speculators_config")
        spec_cfg: dict[str, Any] = found if isinstance(found, dict) else {}
        tokens = self.draft.get("speculative_tokens")
        verifier = dict(spec_cfg.get("verifier") or {})
        if self.target is not None and self._records_another_verifier():
            self.edit(
                "none",
                "/speculators_config/verifier",
                "keep the recorded verifier: it names another model than the target "
                f"({VERIFIER_DIFFERS_FROM_TARGET.code}); the draft was trained for it",
                DISPLAY_ONLY,
            )
        elif self.target is not None:
            verifier["name_or_path"] = self.target.origin
            verifier["architectures"] = self.target.architectures
        verifier.setdefault("name_or_path", None)
        verifier.setdefault("architectures", [])
        if verifier["name_or_path"] is None:
            self.edit(
                "none",
                "/speculators_config/verifier/name_or_path",
                "no verifier is known: pass --target so `vllm serve <draft>` can find it",
                DISPLAY_ONLY,
            )
        config: dict[str, Any] = {
            "architectures": ["Eagle3Speculator"],
            "speculators_model_type": "eagle3",
            "speculators_config": {
                "algorithm": "eagle3",
                "default_proposal_method": "greedy",
                "proposal_methods": [
                    {
                        "proposal_type": "greedy",
                        "speculative_tokens": tokens if isinstance(tokens, int) else 3,
                        "verifier_accept_k": 1,
                        "accept_tolerance": 0.0,
                    }
                ],
                "verifier": verifier,
            },
            "transformer_layer_config": layer,
        }
        config.update(eagle)
        config.setdefault("target_hidden_size", None)
        if aux is not None:
            config["eagle_aux_hidden_state_layer_ids"] = list(aux)
            if list(source.get("eagle_aux_hidden_state_layer_ids") or []) != list(aux):
                self.edit(
                    "move-aux-ids",
                    "/eagle_aux_hidden_state_layer_ids",
                    f"write `eagle_aux_hidden_state_layer_ids: {list(aux)}` (capture-before)",
                )
        if "speculators_model_type" not in source:
            self.edit(
                "set-config",
                "/speculators_config",
                "write the speculators structure (type, proposal methods, verifier)",
            )
        config["tie_word_embeddings"] = False
        if dtype is not None:
            config[dtype_key] = dtype
        return config

    def _engine_limits(self, config: dict[str, Any], layer: dict[str, Any]) -> None:
        """What the chosen convention cannot express (its engine says): left to a human."""
        limits = self.engine.convention_limits(self.to, config, layer, self.profile)
        for pointer, description in limits:
            self.edit("none", pointer, description, DISPLAY_ONLY)

    # ------------------------------------------------------------------ tensors
    def _tensors(self, layer: dict[str, Any]) -> list[OutputTensor]:
        draft = self.draft
        shard_of = {f: i for i, f in enumerate(self.ckpt.weight_files)}
        single = len(draft.layer_indices) <= 1 and (layer.get("num_hidden_layers") or 1) <= 1
        out: list[OutputTensor] = []
        renames: list[tuple[str, str]] = []
        for canonical, info in draft.tensors.items():
            raw = draft.raw(canonical)
            if not is_known_role(canonical) and self.edit(
                "drop-tensor",
                raw,
                f"drop `{raw}`: no engine draft class has such a parameter",
                UNSAFE,
            ):
                continue
            name = self._output_name(canonical, single)
            if name != raw:
                renames.append((raw, name))
            out.append(
                OutputTensor(name, info.dtype, info.shape, info, None, shard_of.get(info.file, 0))
            )
        for raw in draft.unrecognised:
            if raw not in {draft.raw(c) for c in draft.tensors}:
                self.edit(
                    "drop-tensor", raw, f"drop `{raw}` (a second spelling of a tensor)", UNSAFE
                )
        if renames:
            first_raw, first_new = renames[0]
            self.edit(
                "rename-tensor",
                first_raw,
                f"rename {len(renames)} tensor(s) to the {self.to} naming (e.g. "
                f"`{first_raw}` -> `{first_new}`); bytes copied verbatim",
            )
        self._vocab_maps(out)
        if self.aux_order is not None:
            reorder_tensors(out, self.aux_order, draft)
        return out

    def _output_name(self, canonical: str, single: bool) -> str:
        prefix = self.layout.single_layer_prefix
        if prefix is not None and single:
            match = _LAYER.match(canonical)
            if match and match.group(1) == "0":
                return prefix + match.group(2)
        return canonical

    def _vocab_maps(self, out: list[OutputTensor]) -> None:
        draft = self.draft
        vocab, draft_vocab = draft.vocab_size, draft.draft_vocab_size
        if not vocab or not draft_vocab:
            return
        names = {t.name for t in out}
        last_shard = max((t.shard for t in out), default=0)
        if draft_vocab == vocab:
            vt = self.target.vocab_size if self.target else vocab
            if (
                "d2t" in names
                and self.layout.drops_identity_d2t
                and self.profile is not None
                and self.profile.value("d2t_parameter") == "when-reduced"
                and draft_vocab == vt
            ):
                d2t = read_ints(self.ckpt, draft.tensors["d2t"])
                identity = d2t is not None and not any(d2t)
                if self.edit(
                    "drop-tensor",
                    draft.raw("d2t"),
                    f"drop `d2t`: the draft vocabulary is the full vocabulary and "
                    f"{self.profile.title} rejects a `d2t` then"
                    + ("" if identity else " (it is not the identity map!)"),
                    SAFE if identity else DISPLAY_ONLY,
                ):
                    out[:] = [t for t in out if t.name != "d2t"]
            return
        if "d2t" not in names and "t2d" in names:
            mask = read_mask(self.ckpt, draft.tensors["t2d"])
            if mask is not None and mask.count(1) == draft_vocab:
                chosen = [i for i, bit in enumerate(mask) if bit]
                d2t = array("q", (t - i for i, t in enumerate(chosen)))
                self.edit("add-tensor", "d2t", "derive `d2t` from `t2d` (sorted target ids; exact)")
                out.append(
                    OutputTensor(
                        "d2t", "I64", (draft_vocab,), None, _little_endian(d2t), last_shard
                    )
                )
            else:
                self.edit(
                    "none", "d2t", "no `d2t`, and `t2d` cannot give one (wrong count)", DISPLAY_ONLY
                )
        elif "d2t" not in names:
            self.edit(
                "none",
                "d2t",
                f"no `d2t` for a {draft_vocab}-token draft vocabulary: engines will map "
                "draft id i to target id i; the map used in training is needed",
                DISPLAY_ONLY,
            )
        if "t2d" not in names and "d2t" in names and self.layout.derives_t2d:
            d2t_info: TensorInfo = draft.tensors["d2t"]
            offsets = read_ints(self.ckpt, d2t_info)
            # `vocab` comes from the config: a mask is built only for a vocabulary whose
            # t2d is small enough to read back (a claimed 2**31 must not allocate 2 GB).
            if offsets is not None and len(offsets) == draft_vocab and vocab <= DEFAULT_LIMIT:
                derived = bytearray(vocab)
                valid = True
                for i, offset in enumerate(offsets):
                    target = i + offset
                    if not 0 <= target < vocab:
                        valid = False
                        break
                    derived[target] = 1
                if valid:
                    self.edit("add-tensor", "t2d", "derive `t2d` from `d2t` (exact)")
                    t2d = OutputTensor("t2d", "BOOL", (vocab,), None, bytes(derived), last_shard)
                    out.append(t2d)

    def _copy_files(self, config: dict[str, Any]) -> list[str]:
        skip = (
            set(self.ckpt.weight_files)
            | set(self.ckpt.ignored_weight_files)
            | {
                "config.json",
                "model.safetensors.index.json",
                "pytorch_model.bin.index.json",
                MARKER,  # a previous convert's record, not the draft's
                MARKER_PART,
            }
        )
        files = []
        for name in self.ckpt.files:
            if name in skip:
                continue
            if name.endswith(".py") and "auto_map" not in config:
                continue  # custom config code of the source convention
            refusal = self._outside(name)
            if refusal is not None:
                self.edit("none", name, f"`{name}` is not copied: {refusal}", DISPLAY_ONLY)
                continue
            files.append(name)
        return files

    def _outside(self, name: str) -> str | None:
        """Why `name` may not be read (a symlink out of the checkpoint folder), or None."""
        access = self.ckpt.access
        if access is None:
            return None
        try:
            access.local_path(name)
        except OSError as exc:
            return str(exc.strerror or exc)
        return None


def _little_endian(values: array[int]) -> bytes:
    import sys

    if sys.byteorder == "big":  # pragma: no cover
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()
