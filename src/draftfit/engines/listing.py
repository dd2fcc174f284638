"""`draftfit engines [ENGINE]`: the engine versions and facts draftfit has data for, the
newest release read, the releases known to exist that were not read (and why), and the date
the data was last checked against the package index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.engines.profile import EngineData
from draftfit.engines.registry import ENGINES, engine_named
from draftfit.records import frozen

if TYPE_CHECKING:
    from typing import Any


@frozen
class EngineListing:
    """The data of the engines asked for; `single` when one engine was named.

    The JSON form is `{"engines": [...]}` either way (one item when one engine was named).
    """

    engines: tuple[EngineData, ...]
    single: bool

    def to_dict(self) -> dict[str, Any]:
        items = [engine_dict(data) for data in self.engines]
        return {"engines": items}


def engine_dict(data: EngineData) -> dict[str, Any]:
    return {
        "engine": data.engine,
        "title": data.title,
        "latest": data.latest,
        "versions": list(data.versions),
        "facts": {k: f.doc for k, f in sorted(data.facts.items())},
        "newest_read": data.latest,
        "not_read": [{"version": n.version, "reason": n.reason} for n in data.not_read],
        "data_date": data.data_date,
    }


def list_engines(engine: str | None = None) -> EngineListing:
    """`engine`'s data, or every engine's; raises UsageError for an unknown engine."""
    engines = [engine_named(engine)] if engine else list(ENGINES)
    return EngineListing(tuple(e.data for e in engines), single=bool(engine))
