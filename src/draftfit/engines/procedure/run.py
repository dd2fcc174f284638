"""Steps, procedures, and the entry that builds an engine view by running them.

A :data:`Step` is a named function of the :class:`BuildState`; it returns False to stop
the procedure (a refusal the engine does not get past), anything else to go on. A
:class:`Procedure` is an ordered tuple of steps. Each engine declares an
:class:`EngineProcedure`: its traits, the steps that settle the method, one procedure per
drafting method it serves, and its launch step. A new drafting method is new step modules
in the engine's folder and one more entry of `by_method`; nothing here changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from draftfit.engines.procedure.state import BuildState, EngineTraits
from draftfit.engines.view import BuildInputs, EngineView
from draftfit.records import frozen

if TYPE_CHECKING:
    from draftfit.draft.description import DraftDescription

Step = Callable[[BuildState], "bool | None"]
Procedure = tuple[Step, ...]


def run(procedure: Procedure, state: BuildState) -> bool:
    """Run `procedure`'s steps in order; False when one of them stopped it."""
    return all(step(state) is not False for step in procedure)


def building(families: Callable[[EngineTraits], frozenset[str]], *steps: Step) -> Step:
    """The steps that build the draft's parameters, as one step. They run for a class of
    the engine's `families` (another class builds no parameter draftfit models). A False
    from one of them leaves the draft unbuilt (`view.built` False) and stops the procedure,
    unless the engine's loader still walks the stored tensors after such a refusal
    (`maps_after_refusal`)."""

    def build_draft(state: BuildState) -> bool:
        state.view.built = True
        if state.family not in families(state.traits) or run(steps, state):
            return True
        state.view.built = False
        return state.traits.maps_after_refusal

    return build_draft


def eagle3_families(traits: EngineTraits) -> frozenset[str]:
    return traits.eagle3_families


def eagle1_families(traits: EngineTraits) -> frozenset[str]:
    return traits.eagle1_families


def served_method(method: str | None, draft: DraftDescription) -> str | None:
    """The method the engine starts from: `auto` (no method given) means the checkpoint's
    own kind."""
    return draft.method if method == "auto" else method


@frozen
class EngineProcedure:
    """How one engine resolves a draft.

    Attributes:
        traits: the engine's own constants.
        by_method: the procedure for each drafting method it serves; a method without one
            builds nothing (no finding: the method's own checks say why).
        settle: steps run before the method is known (vLLM guesses it from the path).
        launch: the step that judges the launch's settings, run when there are any.
        method_for: the method the engine starts from, given the user's and the draft.
        finish: what the engine adds to the finished view (nothing by default).
    """

    traits: EngineTraits
    by_method: Mapping[str, Procedure]
    launch: Step
    settle: Procedure = ()
    method_for: Callable[[str | None, DraftDescription], str | None] = served_method
    finish: Callable[[BuildInputs, EngineView], None] | None = None


def build(engine: EngineProcedure, inputs: BuildInputs) -> EngineView:
    """Resolve the draft the way `engine` at `inputs.profile.version` would."""
    p = inputs.profile
    method = engine.method_for(inputs.method, inputs.draft)
    view = EngineView(p.engine, p.version, p.title, method)

    def rebuild(edited: BuildInputs) -> EngineView:
        return build(engine, edited)

    state = BuildState(inputs, engine.traits, view, rebuild, method)
    if inputs.checkpoint.config is not None and run(engine.settle, state):
        # no config: structure findings already say why; nothing to resolve
        procedure = engine.by_method.get(state.method or "")
        if procedure is not None:
            run(procedure, state)
    if inputs.serve is not None:
        engine.launch(state)
    if engine.finish is not None:
        engine.finish(inputs, view)
    return view
