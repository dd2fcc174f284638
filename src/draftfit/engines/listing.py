"""`draftfit engines [ENGINE]`: the engine versions and facts draftfit has data for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from draftfit.engines.profile import EngineData
from draftfit.engines.registry import ENGINES, engine_named


@dataclass(frozen=True)
class EngineListing:
    """The data of the engines asked for; `single` when one engine was named.

    The JSON form is one engine's dictionary when one was named, else `{"engines": [...]}`.
    """

    engines: tuple[EngineData, ...]
    single: bool

    def to_dict(self) -> dict[str, Any]:
        items = [engine_dict(data) for data in self.engines]
        return items[0] if self.single else {"engines": items}


def engine_dict(data: EngineData) -> dict[str, Any]:
    return {
        "engine": data.engine,
        "title": data.title,
        "latest": data.latest,
        "versions": list(data.versions),
        "facts": {k: f.doc for k, f in sorted(data.facts.items())},
    }


def list_engines(engine: str | None = None) -> EngineListing:
    """`engine`'s data, or every engine's; raises UsageError for an unknown engine."""
    engines = [engine_named(engine)] if engine else list(ENGINES)
    return EngineListing(tuple(e.data for e in engines), single=bool(engine))
