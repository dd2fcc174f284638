"""The one interface every engine implements, and the serve recipe it produces.

The checker, the serve recipes, `convert` and `diff` reach an engine only through an
:class:`Engine` (listed in :mod:`draftfit.engines.registry`): its name and data file, its
procedure, the serve recipe, the convention `draftfit convert --to` writes for it, the
conventions it plans, how it names aux ids in that convention, which of its draft
classes are one class, and how its launch is read and judged (:meth:`Engine.launch`,
:meth:`Engine.judge_launch`). Nothing outside `draftfit.engines` asks which engine it is
holding.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING

from draftfit.engines.compiled import load_compiled, toml_path
from draftfit.engines.data_file import parse_engine_data
from draftfit.engines.profile import EngineData, Profile
from draftfit.engines.remote_code import RemoteCode
from draftfit.errors import EngineDataError, UsageError
from draftfit.records import field, frozen, record

if TYPE_CHECKING:
    from typing import Any

    from draftfit.draft.description import DraftDescription
    from draftfit.draft.target import Target
    from draftfit.engines.launch_judgement import ReleaseLaunch
    from draftfit.engines.launch_part import EngineLaunch
    from draftfit.engines.view import BuildInputs, EngineView
    from draftfit.serve.settings import ServeSettings


@record
class Recipe:
    """How to serve: optional preparation steps, the command, and notes.

    Attributes:
        config: the engine configuration the command carries (vLLM's
            `--speculative-config`, TensorRT-LLM's `spec.yaml`), or the SGLang flags.
        remaining: codes of the findings (errors and warnings) that a check of the draft
            the recipe serves, under the recipe's own launch, still finds.
        resolves_errors: whether that check finds no error. Only such a recipe is shown;
            for any other version a :class:`NoRecipe` says why.
    """

    engine: str
    version: str
    command: str
    steps: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    remaining: list[str] = field(default_factory=list)
    resolves_errors: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "version": self.version,
            "steps": list(self.steps),
            "command": self.command,
            "config": self.config,
            "notes": list(self.notes),
            "remaining": list(self.remaining),
            "resolves_errors": self.resolves_errors,
        }


@record
class NoRecipe:
    """Why a version gets no serve recipe: the errors its steps and launch would leave, or
    that the engine serves no draft of this kind.

    Attributes:
        remaining: codes of the findings (errors and warnings) the recipe's steps and
            launch would leave (empty when the engine serves no draft of this kind).
        reason: one line: the errors that remain and what would fix them.
    """

    engine: str
    version: str
    reason: str
    remaining: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "version": self.version,
            "remaining": list(self.remaining),
            "resolves_errors": False,
            "reason": self.reason,
        }


@frozen
class ServeRequest:
    """What an engine needs to write its serve command for one version.

    Attributes:
        draft: draftfit's description of the draft it is given.
        draft_path: the path the engine is given (the converted draft after a convert step).
        codes: the codes of every finding that applies to the draft it is given.
        notes: notes already made (the convert step's), kept first.
        remote_code: what this release does with the code the target's or the draft's
            config names (`auto_map.AutoConfig`): where it loads a config only with that
            code, the recipe passes the engine's trust-remote-code flag
            (:func:`draftfit.engines.remote_code.remote_code_at`, which the launch check
            DF560 asks too).

    `draft_path` and the target's `source` are a path or draftfit's `hf://OWNER/NAME[@REVISION]`;
    the recipe names a Hub repository by its id, with the engine's own revision setting
    (:func:`draftfit.engines.serve.model_source`), and adds an `hf download` step to
    :attr:`Recipe.steps` where the engine needs a local copy.
    """

    profile: Profile
    draft: DraftDescription
    draft_path: str
    target: Target | None
    codes: frozenset[str]
    notes: tuple[str, ...] = ()
    remote_code: RemoteCode = field(default_factory=RemoteCode)

    @property
    def trust_remote_code(self) -> bool:
        """Whether the recipe passes the engine's trust-remote-code flag."""
        return self.remote_code.flag_wanted

    def remote_code_note(self, flag: str) -> str | None:
        """Why the recipe carries `flag` (or leaves it out), None when no config names code
        of its own."""
        return self.remote_code.note(flag)


@frozen
class Served:
    """An engine's serve recipe and the finding codes its serve-time settings fix."""

    recipe: Recipe
    fixed_by_settings: frozenset[str] = frozenset()


@frozen
class ConventionChoice:
    """The draft class a convention writes, and why a human may still need to act.

    `problems` are `(JSON pointer, description)` pairs shown as display-only edits."""

    architecture: str
    problems: tuple[tuple[str, str], ...] = ()


@frozen
class ConventionLayout:
    """How a convention `draftfit convert --to` writes lays a draft out (the engine that
    plans the convention gives it: :attr:`Engine.layouts`).

    Attributes:
        name: the convention, as `--to` names it.
        speculators_config: the speculators library's config (`speculators_config`, the
            decoder fields nested in `transformer_layer_config`); else a flat HF config.
        single_layer_prefix: the name prefix of a single decoder layer's tensors (SGLang's
            `midlayer.`); None: the `layers.N.` names.
        drops_identity_d2t: a full-vocabulary draft's `d2t` is dropped where the version
            rejects it (`d2t_parameter = "when-reduced"`).
        derives_t2d: `t2d` is written next to `d2t` (derived from it, exactly).
    """

    name: str
    speculators_config: bool = False
    single_layer_prefix: str | None = None
    drops_identity_d2t: bool = False
    derives_t2d: bool = False


class Engine(ABC):
    """One serving engine: its data, its procedure and its serve recipe.

    Attributes:
        name: how `--engine` spells it; the stem of its data file.
        convention: the layout `draftfit convert --to` writes for it (a serve recipe's
            convert step).
        layouts: the conventions planned (and verified by default) with this engine's data,
            each with its layout; :attr:`plans` names them.
        edits_launch: whether a serve recipe edits the launch the check was given (the
            command line keeps every setting); False where the launch keeps its settings in
            a file the recipe writes anew (TensorRT-LLM's options YAML).
        distributions: the names it is published under on the package index, looked up
            (one by one) among the installed distributions for the default of `--engine`
            (:mod:`draftfit.engines.installed`); none: never found installed.
        product: its name as its data's title starts (`vLLM`), so that the default's reason
            names every engine without loading its data; empty: read from the title.

    An engine module keeps its imports of the procedure (its steps) inside the methods,
    so that listing the engines (`draftfit engines`, `draftfit rule`) loads only the data.
    """

    name: str
    convention: str
    layouts: tuple[ConventionLayout, ...] = ()
    edits_launch: bool = True
    distributions: tuple[str, ...] = ()
    product: str = ""

    @property
    def plans(self) -> tuple[str, ...]:
        """The conventions planned (and verified by default) with this engine's data."""
        return tuple(layout.name for layout in self.layouts)

    def layout(self, convention: str) -> ConventionLayout:
        """The layout of `convention`, one this engine plans."""
        found = next((layout for layout in self.layouts if layout.name == convention), None)
        if found is None:
            raise NotImplementedError(f"{self.name} does not plan {convention}")
        return found

    # ------------------------------------------------------------------ data
    def data_text(self) -> str:
        """The engine's TOML data (shipped as `engines/<name>/data.toml`)."""
        with open(toml_path(self.name), encoding="utf-8") as handle:
            return handle.read()

    @cached_property
    def data(self) -> EngineData:
        """The data, parsed and validated once: from the compiled form shipped beside the
        TOML when it was built from this TOML (:mod:`draftfit.engines.compiled`; its
        citations were checked when it was built), else from the TOML itself."""
        text = self.data_text()
        compiled = load_compiled(self.name, text)
        if compiled is not None:
            raw, ranks = compiled
            return parse_engine_data(self.name, raw, self, citations_checked=True, ranks=ranks)
        return parse_engine_data(self.name, parse_toml(self.name, text), self)

    @property
    def title(self) -> str:
        return self.data.title

    @property
    def versions(self) -> tuple[str, ...]:
        return self.data.versions

    def resolve(self, version: str) -> Profile:
        """This engine's expectations at `version` (refused when there is no data for it)."""
        return self.data.resolve(version)

    # ------------------------------------------------------------------ behaviour
    @abstractmethod
    def build_view(self, inputs: BuildInputs) -> EngineView:
        """What this engine builds from the draft at `profile.version`."""

    @abstractmethod
    def serve(self, request: ServeRequest) -> Served | None:
        """The serve recipe at `request.profile.version`, or None when the engine cannot
        serve this kind of draft at all."""

    def launch(self) -> EngineLaunch | None:
        """How draftfit reads this engine's launch (`--serve-args`, `--serve-config`): its
        launch part, loaded when asked for (a check without a launch never loads it); None
        where draftfit reads no launch of this engine."""
        return None

    def judge_launch(
        self, settings: ServeSettings, profile: Profile, target: Target | None
    ) -> ReleaseLaunch:
        """What `profile`'s release makes of the launch `settings` (this engine's), decided
        once by its launch part (:meth:`EngineLaunch.judge`): what its parser makes of each
        flag, the method the launch selects, and why the launch is not all judged there."""
        part = self.launch()
        if part is None:
            raise UsageError(f"draftfit reads no launch of {self.name}")
        return part.judge(settings, profile, target)

    def class_families(self) -> Mapping[str, str]:
        """Draft class -> the class it is registered to, where two names reach one class;
        `diff` treats any other pair of names as two classes. None by default."""
        return {}

    def same_class(self, a: str, b: str) -> bool:
        """Whether draft classes `a` and `b` are one class to this engine (for `diff`)."""
        families = self.class_families()
        return families.get(a, a) == families.get(b, b)

    def nested_aux_ids(
        self, profile: Profile, target: Target | None, capture_before: tuple[int, ...]
    ) -> tuple[int, ...] | None:
        """The ids to write at `eagle_config.eagle_aux_hidden_state_layer_ids` so that this
        engine captures `capture_before`; None when it cannot be made to. The default is
        the usual output-of counting."""
        return tuple(i - 1 for i in capture_before)

    def convention_architecture(
        self, layer: Mapping[str, Any], profile: Profile | None
    ) -> ConventionChoice:
        """The `architectures` entry `convert` writes in a convention this engine plans.

        `layer` is the decoder-layer config; `profile` the version planned for (None: the
        engine's usual classes)."""
        raise NotImplementedError(f"{self.name} plans no convention")

    def convention_limits(
        self,
        convention: str,
        config: Mapping[str, Any],
        layer: Mapping[str, Any],
        profile: Profile | None,
    ) -> tuple[tuple[str, str], ...]:
        """What `convention` (one this engine plans) cannot express for this draft, as
        `(JSON pointer, description)` pairs left to a human; `config` is the planned
        config, `layer` the decoder-layer config. None by default."""
        return ()


def engine_of(profile: Profile) -> Engine:
    """The engine whose data `profile` resolves."""
    impl = profile.data.impl
    if not isinstance(impl, Engine):
        raise EngineDataError(f"{profile.engine} data is not attached to an engine")
    return impl


def build_view(inputs: BuildInputs) -> EngineView:
    """What the profile's engine builds from the draft at the profile's version."""
    return engine_of(inputs.profile).build_view(inputs)


def parse_toml(name: str, text: str) -> dict[str, Any]:
    """Engine `name`'s TOML data text as tables (a EngineDataError when it is not TOML)."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EngineDataError(f"engines/{name}/data.toml: {exc}") from exc
