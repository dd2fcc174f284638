"""ToyLLM behind the engine interface: its data, procedure, launch part, serve recipe and
the convention it plans (`toyconv`: SGLang's layout under another name)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from draftfit.engines.interface import ConventionChoice, Engine, Recipe, Served, ServeRequest
from draftfit.engines.sglang.engine import SGLANG, SGLANG_LAYOUT
from draftfit.records import replace

if TYPE_CHECKING:
    from draftfit.engines.launch_part import EngineLaunch
    from draftfit.engines.profile import Profile
    from draftfit.engines.view import BuildInputs, EngineView


def toy_data() -> str:
    """The toy's data: TensorRT-LLM's, titled ToyLLM (a real engine ships its own
    `data.toml` in its folder, which :meth:`Engine.data_text` reads)."""
    text = resources.files("draftfit.engines").joinpath("trtllm", "data.toml").read_text("utf-8")
    lines = [
        'title = "ToyLLM"' if line.startswith("title =") else line for line in text.splitlines()
    ]
    return "\n".join(lines) + "\n"


class ToyEngine(Engine):
    """ToyLLM (data: TensorRT-LLM's retitled, procedure: :mod:`.procedure`)."""

    name = "toyllm"
    convention = "toyconv"
    layouts = (replace(SGLANG_LAYOUT, name="toyconv"),)
    distributions = ("toyllm",)
    product = "ToyLLM"

    def __init__(self, data_file: Path | None = None) -> None:
        self.data_file = data_file

    def data_text(self) -> str:
        if self.data_file is not None:
            return self.data_file.read_text(encoding="utf-8")
        return toy_data()

    def build_view(self, inputs: BuildInputs) -> EngineView:
        from tests.toyllm.procedure import build_view

        return build_view(inputs)

    def serve(self, request: ServeRequest) -> Served:
        command = f"toyllm serve {request.draft_path}"
        return Served(Recipe(self.name, request.profile.version, command))

    def launch(self) -> EngineLaunch:
        from tests.toyllm.launch import LAUNCH

        return LAUNCH

    def convention_architecture(
        self, layer: Mapping[str, Any], profile: Profile | None
    ) -> ConventionChoice:
        return SGLANG.convention_architecture(layer, None)


TOYLLM = ToyEngine()
