"""The seams between the checker, recipes, diff, convert and the engines.

* The import graph of `src/draftfit` has no circle and no upward edge. Layers, lowest
  first (a module may import its own layer or a lower one):

  0. base: the package root, `errors`, `location`, `rule_ids`, `config_schema`
  1. `checkpoint` (the reader, the value memo)
  2. inputs: `dialects`, `spec`, `target`, `hub`, `sources`, `synth`
  3. `engines` (data, views, builders, the interface, the registry, serve recipes)
  4. `rules`
  5. `report`
  6. `check`
  7. commands built on a check: `recipe`, `diff`, `matrix`, `convert`, `inspect`,
     `explain`, `demo`
  8. `render`
  9. `cli`, `__main__`

  Imports under `if TYPE_CHECKING:` are left out: they never run.
* Nothing outside `draftfit.engines` imports a concrete engine module, and the modules
  that serve every engine (`check`, `recipe`, `diff`, `matrix`, `convert`) name no engine.
* A fourth engine is a data file and one module: the toy engine below (TensorRT-LLM's data
  and procedure under another name, with its own serve command) runs through `check`,
  `check --recipe`, `matrix` and `diff` without any other module knowing it.
"""

from __future__ import annotations

import ast
from importlib import resources
from pathlib import Path

import pytest

from draftfit.checker import check_checkpoint
from draftfit.checkpoint import Checkpoint, load_checkpoint
from draftfit.checkpoint.values import cached_ints
from draftfit.comparison import diff_checkpoints
from draftfit.conversion.planner import plan_conversion
from draftfit.conversion.preview import preview_checkpoint
from draftfit.engines.interface import Engine, Recipe, Served, ServeRequest
from draftfit.engines.registry import ENGINES, SGLANG, TRTLLM, VLLM, parse_engine_spec
from draftfit.engines.trtllm import Builder as TrtllmBuilder
from draftfit.engines.view import BuildInputs, EngineView
from draftfit.recipe import attach_recipes
from draftfit.release_matrix import build_matrix
from draftfit.spec import describe
from draftfit.target import Target, load_target
from tests import factory as f

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "draftfit"

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "draftfit.version",
        "draftfit.errors",
        "draftfit.escape",
        "draftfit.location",
        "draftfit.rule_ids",
        "draftfit.config_schema",
        "draftfit.schemas",
        "draftfit.fail_on",
        "draftfit.atomic_write",
        "draftfit.docs_links",
        "draftfit.json_lines",
        "draftfit.output_guard",
        "draftfit.pre_commit",
        "draftfit.progress",
        "draftfit.serve_settings",
        "draftfit.serve_flags",
    ),
    ("draftfit.checkpoint",),
    (
        "draftfit.settings_text",
        "draftfit.config_file",
        "draftfit.serve_input",
        "draftfit.tensor_names",
        "draftfit.aux_counting",
        "draftfit.dialects",
        "draftfit.spec",
        "draftfit.target_rotation",
        "draftfit.target",
        "draftfit.hub",
        "draftfit.sources",
        "draftfit.synth",
        "draftfit.mistakes",
        "draftfit.values",
    ),
    ("draftfit.engines",),
    ("draftfit.rules",),
    ("draftfit.report", "draftfit.selection", "draftfit.rule_docs"),
    ("draftfit.checker",),
    ("draftfit.launch_edit",),
    (
        "draftfit.recipe",
        "draftfit.comparison",
        "draftfit.release_matrix",
        "draftfit.conversion",
        "draftfit.inspection",
        "draftfit.explain",
        "draftfit.demo",
    ),
    ("draftfit.render",),
    ("draftfit.show_settings", "draftfit.cli_reports", "draftfit.completion"),
    ("draftfit.cli", "draftfit.__main__", "draftfit.api"),
)
# The modules that serve every engine alike.
ENGINE_NEUTRAL = (
    "checker.py",
    "recipe.py",
    "comparison.py",
    "release_matrix.py",
    "conversion/__init__.py",
)
CONCRETE_ENGINE_MODULES = {
    f"draftfit.engines.{name}{suffix}"
    for name in ("vllm", "sglang", "trtllm")
    for suffix in ("", "_serve")
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those under `if TYPE_CHECKING:`."""
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the draftfit modules it imports (a `from X import name` names X.name
    when that is a module)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{name}: relative import"
                base = node.module or ""
                if not base.startswith("draftfit"):
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    edges.add(full if full in modules else base)
            else:
                edges |= {a.name for a in node.names if a.name.startswith("draftfit")}
        graph[name] = edges - {name}
    return graph


def layer_of(module: str) -> int:
    if module == "draftfit":
        # The package's __init__ re-exports the Python API (draftfit.check, ...): it sits on
        # top, beside the command line; every other module imports draftfit.version instead.
        return len(LAYERS) - 1
    best = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module == prefix or module.startswith(prefix + ".")
            if inside and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def test_import_graph_has_no_circle() -> None:
    graph = import_graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_import_graph_has_no_upward_edge() -> None:
    upward = [
        f"{module} (layer {layer_of(module)}) imports {other} (layer {layer_of(other)})"
        for module, edges in import_graph().items()
        for other in edges
        if layer_of(other) > layer_of(module)
    ]
    assert upward == []


def test_no_module_outside_engines_imports_a_concrete_engine() -> None:
    offenders = [
        f"{module} imports {other}"
        for module, edges in import_graph().items()
        if not module.startswith("draftfit.engines")
        for other in edges & CONCRETE_ENGINE_MODULES
    ]
    assert offenders == []
    # The recipe reuses the check: it neither re-describes the draft nor imports the checker.
    recipe_edges = import_graph()["draftfit.recipe"]
    assert "draftfit.checker" not in recipe_edges
    recipe_tree = ast.parse((PACKAGE / "recipe.py").read_text(encoding="utf-8"))
    names = {n.id for n in ast.walk(recipe_tree) if isinstance(n, ast.Name)}
    assert "describe" not in names and "load_engine" not in names


def _string_constants(path: Path) -> list[str]:
    """String literals of a module, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


@pytest.mark.parametrize("rel", ENGINE_NEUTRAL)
def test_engine_neutral_modules_name_no_engine(rel: str) -> None:
    words = {e.name for e in ENGINES} | {e.title.split()[0] for e in ENGINES}
    found = [
        (word, text)
        for text in _string_constants(PACKAGE / rel)
        for word in words
        if word.lower() in text.lower()
    ]
    assert found == []


def test_registry_lists_each_engine_once_with_its_data() -> None:
    names = [e.name for e in ENGINES]
    assert len(set(names)) == len(names)
    for engine in ENGINES:
        assert engine.data.engine == engine.name
        assert engine.resolve(engine.data.latest).impl is engine
        assert engine.convention in {c for e in ENGINES for c in e.plans}


def test_each_engine_decides_which_draft_classes_are_one() -> None:
    # vLLM's registry maps both names to one class; SGLang takes `architectures[0]` as
    # written, so its EAGLE-1 classes for Llama and Qwen2 are two classes.
    assert VLLM.same_class("Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3")
    assert not VLLM.same_class("Eagle3LlamaForCausalLM", "Eagle3Qwen3ForCausalLM")
    assert not SGLANG.same_class("LlamaForCausalLMEagle", "Qwen2ForCausalLMEagle")
    assert SGLANG.same_class("LlamaForCausalLMEagle3", "LlamaForCausalLMEagle3")


# ---------------------------------------------------------------------- the report keeps


def _draft_and_target(tmp_path: Path, draft: f.Draft) -> tuple[Checkpoint, Target]:
    path = draft.write(tmp_path / "d")
    return load_checkpoint(path), load_target(f.llama_target(tmp_path / "t"))


def test_report_keeps_what_the_check_computed(tmp_path: Path) -> None:
    checkpoint, target = _draft_and_target(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    profiles = parse_engine_spec("all")
    report = check_checkpoint(checkpoint, target, profiles)
    kept = report.kept()
    assert kept.checkpoint is checkpoint and kept.target is target
    assert kept.spec.method == "eagle3"
    for result, profile in zip(report.engines, profiles, strict=True):
        assert result.kept().profile is profile
        assert result.kept().view.draft_class == result.draft_class
    assert "checkpoint" not in str(report.to_dict().keys())
    attach_recipes(report)
    assert report.recipes and {r.engine for r in report.recipes} == {p.engine for p in profiles}


def test_values_are_read_once_per_checkpoint(tmp_path: Path) -> None:
    checkpoint, target = _draft_and_target(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    d2t = checkpoint.tensors["d2t"]
    first = cached_ints(checkpoint, d2t)
    assert first is not None and cached_ints(checkpoint, d2t) is first
    check_checkpoint(checkpoint, target, parse_engine_spec("vllm"))
    kept = len(checkpoint.memo)
    assert kept >= 2  # the map, and the rules' results computed from it
    check_checkpoint(checkpoint, target, parse_engine_spec("all"))
    assert len(checkpoint.memo) == kept
    # A fresh read of the same directory starts empty.
    assert len(load_checkpoint(checkpoint.root).memo) == 0


def test_a_planned_conversion_shares_the_inputs_values_and_keeps_its_own(tmp_path: Path) -> None:
    draft = f.specforge(nested_aux=[1, 3, 6]).drop("d2t")
    checkpoint, target = _draft_and_target(tmp_path, draft)
    spec_profile = parse_engine_spec("vllm")[0]
    check_checkpoint(checkpoint, target, [spec_profile])
    base_entries = len(checkpoint.memo)
    report = check_checkpoint(checkpoint, target, [spec_profile])
    plan = plan_conversion(checkpoint, report.kept().spec, "vllm", spec_profile, target)
    preview = preview_checkpoint(plan, checkpoint)
    derived = preview.tensors["d2t"]
    assert derived.file not in checkpoint.files  # built in memory from t2d
    check_checkpoint(preview, target, [spec_profile])
    assert len(checkpoint.memo) == base_entries
    assert len(preview.memo) >= 1


# ---------------------------------------------------------------------- a fourth engine


class ToyEngine(Engine):
    """TensorRT-LLM's data and procedure under another name, with its own serve command:
    what a fourth engine adds (a data file and one module)."""

    name = "toyllm"
    convention = "sglang"

    def __init__(self, data_file: Path) -> None:
        self.data_file = data_file

    def data_text(self) -> str:
        return self.data_file.read_text(encoding="utf-8")

    def build_view(self, inputs: BuildInputs) -> EngineView:
        return TrtllmBuilder.build(inputs)

    def serve(self, request: ServeRequest) -> Served:
        command = f"toyllm serve {request.draft}"
        return Served(Recipe(self.name, request.profile.version, command))


@pytest.fixture
def toy(tmp_path: Path) -> ToyEngine:
    text = resources.files("draftfit.engines").joinpath("data", "trtllm.toml").read_text("utf-8")
    lines = [
        'title = "ToyLLM"' if line.startswith("title =") else line for line in text.splitlines()
    ]
    data_file = tmp_path / "toyllm.toml"
    data_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ToyEngine(data_file)


def test_a_fourth_engine_runs_through_check_recipes_matrix_and_diff(
    tmp_path: Path, toy: ToyEngine
) -> None:
    checkpoint, target = _draft_and_target(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    profiles = parse_engine_spec("toyllm", (*ENGINES, toy))
    assert [p.label for p in profiles] == [f"toyllm=={TRTLLM.data.latest}"]
    assert parse_engine_spec("all", (*ENGINES, toy))[-1].engine == "toyllm"

    # check: the same verdicts and findings as the engine whose data it copies.
    every = [toy.resolve(v) for v in toy.versions]
    report = check_checkpoint(checkpoint, target, every)
    reference = check_checkpoint(checkpoint, target, [TRTLLM.resolve(v) for v in toy.versions])
    assert [r.engine for r in report.engines] == ["toyllm"] * len(every)
    assert report.engines[0].title.startswith("ToyLLM ")
    assert [r.verdict for r in report.engines] == [r.verdict for r in reference.engines]
    assert sorted(f.code for f in report.findings) == sorted(f.code for f in reference.findings)

    # check --recipe: the toy's own command, after the convert step its convention allows.
    attach_recipes(report)
    assert report.recipes
    assert all(r.engine == "toyllm" and "toyllm serve" in r.command for r in report.recipes)

    # matrix: every toy version once, in order.
    matrix = build_matrix(checkpoint, target, engines=(toy,))
    assert [v for row in matrix.rows for v in row.versions] == list(toy.versions)
    assert {row.title for row in matrix.rows} == {"ToyLLM"}

    # diff: compared through the toy's view.
    other = load_checkpoint(f.specforge(nested_aux=[1, 3, 5]).write(tmp_path / "other"))
    diff = diff_checkpoints(checkpoint, other, profiles, target)
    assert [r.engine for r in diff.engines] == ["toyllm"]
    assert any(f.code == "DF804" for f in diff.findings)


def test_a_damaged_engine_data_file_is_a_data_error(tmp_path: Path) -> None:
    broken = ToyEngine(tmp_path / "toyllm.toml")
    (tmp_path / "toyllm.toml").write_text("versions = [", encoding="utf-8")
    from draftfit.errors import SpecDataError

    with pytest.raises(SpecDataError):
        _ = broken.data


def test_what_a_convention_cannot_express_comes_from_its_engine(tmp_path: Path) -> None:
    draft = f.speculators(aux=[1, 3, 5, 6], n_aux=4)
    draft.config["transformer_layer_config"]["num_aux_hidden_states"] = 4
    checkpoint = load_checkpoint(draft.write(tmp_path / "d"))
    spec = describe(checkpoint)

    def limits(to: str, engine: str) -> list[str]:
        profile = parse_engine_spec(engine)[0]
        plan = plan_conversion(checkpoint, spec, to, profile)
        return [
            e.description
            for e in plan.edits
            if e.target == "/num_aux_hidden_states" and e.safety == "display-only"
        ]

    # vLLM 0.17.0 builds `fc` for exactly 3 aux states; 0.34.0 reads the count.
    assert limits("vllm", "vllm==0.17.0") == [
        "vLLM 0.17.0 builds `fc` for exactly 3 aux states; this draft uses 4"
    ]
    assert limits("vllm", "vllm==0.34.0") == []
    assert limits("speculators", "vllm==0.17.0") == []
