"""The one state every step of an engine's procedure reads and writes: :class:`BuildState`.

It holds the inputs (the checkpoint, the draft description, the target, the engine data at
one version, the method and the launch's settings), the config as the engine's draft class
reads it (`visible`, filled by the engine's route step), the config route and the class
family resolved, and the :class:`EngineView` being built. What one step settles for a later
one (dimensions, vocabulary, what `fc` reads) lives in the view's typed parts, so rules read
the same facts the steps used. The helpers here are about the state itself: recording an
event or a refusal with the data's source lines and consequence, reading a data fact or a
config integer, and recording an expected parameter or a stored tensor's fate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from draftfit.engines import shapes
from draftfit.engines.view import (
    FAILS,
    BuildInputs,
    EngineView,
    Event,
    Expectation,
    FateCause,
    TensorFate,
)
from draftfit.location import Location
from draftfit.records import field, frozen, record
from draftfit.rule_ids import Consequence, RuleId

if TYPE_CHECKING:
    from typing import Any

    from draftfit.checkpoint.model import Checkpoint
    from draftfit.draft.description import DraftDescription
    from draftfit.draft.target import Target
    from draftfit.engines.profile import Profile
    from draftfit.serve.settings import ServeSettings

CONFIG = "config.json"
# Decoder layers whose tensors a view expects. Drafts have one to a few layers and the
# largest targets ~200; a config claiming 2**31 - 1 layers must not loop that many times.
MAX_EXPANDED_LAYERS = 256

Rebuild = Callable[[BuildInputs], EngineView]


@frozen
class EngineTraits:
    """What one engine's procedure does alike at every version (its data says the rest).

    Attributes:
        truncating_loader: whether its linear loaders narrow an oversized stored tensor
            silently (vLLM-derived loaders do; a plain `copy_` raises instead).
        eagle1_families, eagle3_families: the class families it builds as EAGLE-1 and as
            EAGLE-3 drafts (another family builds no parameter draftfit models).
        mla_families: the EAGLE-3 families built with MLA decoder layers.
        maps_after_refusal: whether its loader still walks the stored tensors after a
            refusal while building the draft.
        fc_norm_replaces_input_norm: whether `fc_norm` replaces `norm_before_fc`'s
            `input_norm` when both are set.
    """

    truncating_loader: bool = True
    eagle1_families: frozenset[str] = frozenset()
    eagle3_families: frozenset[str] = frozenset()
    mla_families: frozenset[str] = frozenset()
    maps_after_refusal: bool = False
    fc_norm_replaces_input_norm: bool = False


@record
class BuildState:
    """One engine version resolving one draft: the inputs, what the steps settled so far,
    and the view they write.

    Attributes:
        inputs: what the draft is resolved from.
        traits: the engine's own constants.
        view: the engine view being built.
        rebuild: the engine's whole procedure, to build the draft again with an edit.
        method: the method the engine serves the draft with (settled by its first steps).
        visible: the config as the engine's draft class reads it (after any config route).
        route: the config route taken (`hf`, `speculators`, `legacy-eagle`).
        family: the resolved draft class's shape family.
    """

    inputs: BuildInputs
    traits: EngineTraits
    view: EngineView
    rebuild: Rebuild
    method: str | None
    visible: dict[str, Any] = field(default_factory=dict)
    route: str = "hf"
    family: str = ""

    # ------------------------------------------------------------------ the inputs
    @property
    def checkpoint(self) -> Checkpoint:
        return self.inputs.checkpoint

    @property
    def draft(self) -> DraftDescription:
        return self.inputs.draft

    @property
    def config(self) -> Mapping[str, Any]:
        """The draft's config.json as read (wrong-typed values set aside)."""
        return self.inputs.draft.config

    @property
    def target(self) -> Target | None:
        return self.inputs.target

    @property
    def profile(self) -> Profile:
        return self.inputs.profile

    @property
    def title(self) -> str:
        """The engine release as messages name it (`vLLM 0.34.0`)."""
        return self.inputs.profile.title

    @property
    def method_explicit(self) -> bool:
        return self.inputs.method_explicit

    @property
    def serve(self) -> ServeSettings | None:
        """The launch's settings for this engine, or None (a default launch)."""
        return self.inputs.serve

    # ------------------------------------------------------------------ the data
    def citations(self, *keys: str) -> tuple[str, ...]:
        """The source lines behind facts `keys` at this version."""
        return self.profile.citations(*keys)

    def value(self, key: str) -> Any:
        """Fact `key`'s value at this version."""
        return self.profile.value(key)

    def family_value(self, key: str, family: str) -> Any:
        """A fact whose value is a `{class family: value, "*": value}` table, for `family`
        (a plain value is returned as is)."""
        value = self.value(key)
        if isinstance(value, dict):
            return value.get(family, value.get("*"))
        return value

    # ------------------------------------------------------------------ the config
    def vint(self, key: str) -> int | None:
        """An integer of the visible config (a bool is none)."""
        value = self.visible.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def eagle_config(self) -> dict[str, Any]:
        """The visible config's `eagle_config` object (empty when absent or not an object)."""
        ec = self.visible.get("eagle_config")
        return ec if isinstance(ec, dict) else {}

    def tensor_location(self, canonical: str) -> Location:
        """Where the stored tensor draftfit names `canonical` is."""
        raw = self.draft.raw(canonical)
        info = self.checkpoint.tensors.get(raw)
        return Location(info.file if info else None, tensor=raw)

    # ------------------------------------------------------------------ findings
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
        stated = consequence or self.profile.consequence(*keys)
        self.view.refuse(Event(rule, message, location, self.citations(*keys), fix, stated))

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
        stated = consequence or self.profile.consequence(*keys)
        self.view.add(Event(rule, message, location, self.citations(*keys), fix, stated))

    # ------------------------------------------------------------------ parameters, tensors
    def expect(
        self,
        canonical: str,
        param: shapes.Param,
        if_missing: str | None,
        citations: tuple[str, ...],
        oversize: str = FAILS,
    ) -> None:
        """Record that the draft class builds parameter `canonical` with `param`'s shape."""
        if not self.traits.truncating_loader:
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

    def fate(
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


def layer_indices(n_layers: int) -> range:
    """The layers whose tensors are expected: at most :data:`MAX_EXPANDED_LAYERS`."""
    return range(min(n_layers, MAX_EXPANDED_LAYERS))


def get_path(mapping: Mapping[str, Any], dotted: str) -> Any:
    """`mapping["a"]["b"]` for `"a.b"`, or None when any part is missing."""
    value: Any = mapping
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value
