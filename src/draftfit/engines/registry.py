"""The engines draftfit knows, one line each, and the look-ups the rest of draftfit uses.

Adding an engine is adding its line to :data:`ENGINES` (with its import); `--engine`,
`draftfit engines`, `matrix`, `convert` and the serve recipes iterate this tuple. The
first engine is the default of `--engine`.
"""

from __future__ import annotations

from draftfit.engines.interface import Engine
from draftfit.engines.profile import EngineData, Profile
from draftfit.engines.sglang_serve import SGLANG
from draftfit.engines.trtllm_serve import TRTLLM
from draftfit.engines.vllm_serve import VLLM
from draftfit.errors import UsageError

ENGINES: tuple[Engine, ...] = (
    VLLM,
    SGLANG,
    TRTLLM,
)
DEFAULT_ENGINE = ENGINES[0]


def engine_names() -> tuple[str, ...]:
    """The names `--engine` accepts, in registry order."""
    return tuple(engine.name for engine in ENGINES)


def engine_named(name: str) -> Engine:
    """The engine called `name`; UsageError for a name no engine has."""
    for engine in ENGINES:
        if engine.name == name:
            return engine
    raise UsageError(f"unknown engine {name!r}; known: {', '.join(engine_names())}")


def load_engine(name: str) -> EngineData:
    """The data of the engine called `name`."""
    return engine_named(name).data


def planning_engine(convention: str) -> Engine | None:
    """The engine whose data a convention is planned with (and verified against by
    default), or None when no engine plans it."""
    return next((e for e in ENGINES if convention in e.plans), None)


def parse_engine_spec(text: str, engines: tuple[Engine, ...] = ENGINES) -> list[Profile]:
    """Parse `vllm`, `vllm==0.10.2` or `all` into profiles."""
    text = text.strip()
    if text == "all":
        return [e.resolve(e.data.latest) for e in engines]
    name, sep, version = text.partition("==")
    name = name.strip().lower()
    found = next((e for e in engines if e.name == name), None)
    if found is None:
        raise UsageError(
            f"unknown engine {name!r} in --engine {text!r}; known: "
            f"{', '.join(e.name for e in engines)}"
        )
    if not sep:
        return [found.resolve(found.data.latest)]
    return [found.resolve(version.strip().lstrip("v"))]
