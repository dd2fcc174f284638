"""Whether a release needs `--trust-remote-code` to load the target's or the draft's config.

A `config.json` may name code of its own for Transformers' `AutoConfig` (`auto_map`:
Kimi-K2's `configuration_deepseek.DeepseekV3Config`, Kimi-K2.5's
`configuration_kimi_k25.KimiK25Config`). The engines build the model config with
`AutoConfig`, which runs that code only when told to trust it and otherwise refuses the
config, unless the config's `model_type` is one the release reads natively: a type of the
engine's own config registry or of the Transformers release it runs with. The engine data's
`config_model_types` lists those types per release read (`dev/config_model_types.py` prints
them); a release without an entry was not read. The draft's config is built with the same
setting as the target's (vLLM passes the target's `trust_remote_code` on; SGLang's server
arguments hold one for both), so one flag answers for both configs.

The serve recipe and the launch check (DF560) both ask :func:`remote_code_at`, so a recipe
adds the flag exactly where a launch without it is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit.escape import clip
from draftfit.records import frozen

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.profile import Profile

# The engine data's fact: the config model types each release reads natively.
FACT = "config_model_types"
# The type vLLM gives a speculators-format config, which names no model type of its own.
SPECULATORS_TYPE = "speculators"


@frozen
class OwnCode:
    """A config that names code of its own for `AutoConfig`.

    Attributes:
        whose: `target` or `draft`.
        model_type: the config's `model_type` (None: it names none).
        code: the class its `auto_map.AutoConfig` names (`configuration_kimi_k25.KimiK25Config`).
    """

    whose: str
    model_type: str | None
    code: str

    @property
    def shown_type(self) -> str:
        """`model_type `kimi_k25`` as a message names the config's type."""
        return f"model_type `{clip(self.model_type)}`" if self.model_type else "no model_type"


@frozen
class RemoteCode:
    """What a release does with the configs' own code.

    Attributes:
        needed: the configs the release loads only with the flag (refused without it).
        native: the configs that name code of their own which the release does not run: it
            reads their model type with its own or Transformers' class.
        unread: the configs that name code of their own where the release's config loading
            was not read (the fact has no entry): whether the flag is needed is not known.
        release: the release, as messages name it (`vLLM 0.10.2`).
        transformers: the Transformers release the data's list of native types was taken with.
    """

    needed: tuple[OwnCode, ...] = ()
    native: tuple[OwnCode, ...] = ()
    unread: tuple[OwnCode, ...] = ()
    release: str = ""
    transformers: str = ""

    @property
    def flag_wanted(self) -> bool:
        """Whether a recipe passes the flag: where the release needs it, and, as before the
        release was read, where it was not read and a config names code of its own."""
        return bool(self.needed or self.unread)

    def note(self, flag: str) -> str | None:
        """Why a recipe for this release carries `flag`, or does not; None when no config
        names code of its own."""
        if self.needed:
            return (
                f"{flag}: {_listed(self.needed)}, which {self.release} reads only with its "
                "own code (no class of its own or of Transformers "
                f"{self.transformers} for it): the engine refuses the config without this "
                "flag; read that code before you run it"
            )
        if self.unread:
            return (
                f"{flag}: {_listed(self.unread)}; whether {self.release} reads it without that "
                "code was not read, so the flag is passed: read that code before you run it"
            )
        if self.native:
            return (
                f"no {flag}: {_listed(self.native)}, but {self.release} reads it with a class "
                "of its own or of Transformers, so that code is not needed (nor run)"
            )
        return None


def own_code(config: Mapping[str, Any] | None, whose: str) -> OwnCode | None:
    """The code `config` names for Transformers' `AutoConfig` (`auto_map.AutoConfig`, a
    class reference), or None. A speculators config's `auto_map` entry under `""` and the
    other `Auto*` classes (models, tokenizers) do not decide how the config is loaded."""
    auto_map = config.get("auto_map") if config else None
    if not isinstance(auto_map, Mapping) or config is None:
        return None
    code = auto_map.get("AutoConfig")
    if not isinstance(code, str) or not code:
        return None
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        model_type = SPECULATORS_TYPE if "speculators_config" in config else None
    return OwnCode(whose, model_type, code)


def remote_code_at(
    profile: Profile,
    draft_config: Mapping[str, Any] | None,
    target_config: Mapping[str, Any] | None,
) -> RemoteCode:
    """What `profile`'s release does with the code the target's and the draft's configs
    name (see the module docstring)."""
    named = [
        found
        for found in (own_code(target_config, "target"), own_code(draft_config, "draft"))
        if found is not None
    ]
    if not named:
        return RemoteCode(release=profile.title)
    value = profile.peek(FACT).value if FACT in profile.data.facts else None
    if not isinstance(value, Mapping):
        return RemoteCode(unread=tuple(named), release=profile.title)
    types = frozenset(str(t) for t in value.get("native") or ())
    by_architecture = frozenset(str(a) for a in value.get("native_architectures") or ())
    needed: list[OwnCode] = []
    native: list[OwnCode] = []
    for found in named:
        config = target_config if found.whose == "target" else draft_config
        if _reads_natively(found, config, types, by_architecture):
            native.append(found)
        else:
            needed.append(found)
    return RemoteCode(
        tuple(needed),
        tuple(native),
        (),
        profile.title,
        str(value.get("transformers") or "?"),
    )


def _reads_natively(
    found: OwnCode,
    config: Mapping[str, Any] | None,
    types: frozenset[str],
    by_architecture: frozenset[str],
) -> bool:
    """Whether the release builds this config with a class of its own or of Transformers:
    its model type is one of `types`, or it names none and its first architecture is one
    the release maps to a native class."""
    if found.model_type is not None:
        return found.model_type in types
    architectures = config.get("architectures") if config else None
    first = architectures[0] if isinstance(architectures, list) and architectures else None
    return isinstance(first, str) and first in by_architecture


def _listed(configs: tuple[OwnCode, ...]) -> str:
    """`the target's config.json names code of its own (`auto_map.AutoConfig`: X) for
    model_type `t`` for one or both configs."""
    parts = [
        f"the {c.whose}'s config.json names code of its own (`auto_map.AutoConfig`: "
        f"`{clip(c.code)}`) with {c.shown_type}"
        for c in configs
    ]
    return "; ".join(parts)
