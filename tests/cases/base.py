"""What every rule case module shares: the `Case` record, the `case` decorator that
registers a case in `CASES` (in the order the modules are imported), and the builders
that write a draft with or without a target."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from
from draftfit.report import Report
from tests import factory as f
from tests.factory import Draft

Builder = Callable[[Path], tuple[Path, Path | None]]


@dataclass(frozen=True)
class Case:
    id: str
    build: Builder
    fires: frozenset[str]
    quiet: frozenset[str] = frozenset()
    engines: tuple[str, ...] = ("vllm==0.34.0",)
    method: str | None = None
    verdict: str | None = None  # expected verdict for the first engine
    oracle: str | None = None
    serve_args: str | None = None  # the launch (`--serve-args`), for the serving rules
    draft_is_for_target: bool = False  # `--draft-is-for-target`

    def check(self, tmp: Path) -> Report:
        """Build the case under `tmp` and check it as its fields say."""
        draft, target = self.build(tmp)
        return check_path(
            draft,
            target=target,
            engines=self.engines,
            method=self.method,
            serve=settings_from(serve_args=self.serve_args),
            draft_is_for_target=self.draft_is_for_target,
        )


CASES: list[Case] = []


def case(id: str, fires: set[str] | None = None, quiet: set[str] | None = None, **kw) -> Callable:
    def register(build: Builder) -> Builder:
        CASES.append(Case(id, build, frozenset(fires or ()), frozenset(quiet or ()), **kw))
        return build

    return register


def with_target(draft: Draft, name: str = "draft", **target_kw) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        return draft.write(tmp / name), f.llama_target(tmp / "target", **target_kw)

    return build


def no_target(draft: Draft, name: str = "draft") -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        return draft.write(tmp / name), None

    return build


def _edit(draft_builder: Callable[[], Draft], edit: Callable[[Path], None]) -> Builder:
    """Write a clean draft, then damage its files."""

    def build(tmp: Path) -> tuple[Path, Path | None]:
        path = draft_builder().write(tmp / "draft")
        edit(path)
        return path, f.llama_target(tmp / "target")

    return build


def _sharded(edit: Callable[[Path], None]) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        path = f.specforge().write(tmp / "draft", shards=3)
        edit(path)
        return path, f.llama_target(tmp / "target")

    return build


def _index(path: Path) -> dict:
    return json.loads((path / "model.safetensors.index.json").read_text())


def _write_index(path: Path, index: dict) -> None:
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
