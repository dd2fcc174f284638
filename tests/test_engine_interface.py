"""The seams between the checker, recipes, diff, convert and the engines.

* The import graph of `src/draftfit` has no circle, not even through imports under `if
  TYPE_CHECKING:` or inside functions, and no upward edge. The layers are declared where
  they live: `LAYERS` in `draftfit/__init__.py` orders the top-level modules and
  sub-packages, lowest first, and each sub-package that declares `LAYERS` in its
  `__init__.py` orders its own modules the same way (a module may import its own layer or
  a lower one). Imports under `if TYPE_CHECKING:` never run, so they count for circles
  only.
* Nothing outside `draftfit.engines` imports a concrete engine module, and the modules
  that serve every engine (`check`, `recipe`, `diff`, `matrix`, `convert`) name no engine.
* A fourth engine is one folder built as CONTRIBUTING.md's recipe says (its data, its
  procedure of steps, its launch part and launch checks, its Engine) and one registry line:
  ToyLLM (`tests/toyllm/`: TensorRT-LLM's data under another title and TensorRT-LLM's steps
  in its own procedure, with its own serve command, its own `toyllm serve` launch and its own
  `toyconv` convention) runs through `check`, `check --recipe`, `matrix`, `diff`,
  `--serve-args`, `convert` and the installed-engine lookup without any other module
  knowing it.
* Outside `draftfit.engines`, at most 15 string literals name an engine.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

import draftfit
from draftfit.checker import check_checkpoint
from draftfit.checkpoint import Checkpoint, load_checkpoint
from draftfit.checkpoint.values import cached_ints
from draftfit.commands.comparison import diff_checkpoints
from draftfit.commands.recipe import attach_recipes, recipe_for
from draftfit.commands.release_matrix import build_matrix
from draftfit.conversion.planner import plan_conversion
from draftfit.conversion.preview import preview_checkpoint
from draftfit.draft.description import describe
from draftfit.draft.target import Target, load_target
from draftfit.engines.interface import engine_of
from draftfit.engines.registry import ENGINES, SGLANG, TRTLLM, VLLM, parse_engine_selector
from tests import factory as f
from tests.source_trees import parsed
from tests.toyllm.engine import ToyEngine

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "draftfit"

# The modules that serve every engine alike.
ENGINE_NEUTRAL = (
    "checker.py",
    "commands/recipe.py",
    "commands/comparison.py",
    "commands/diff_sides.py",
    "commands/diff_findings.py",
    "commands/diff_report.py",
    "commands/release_matrix.py",
    "conversion/__init__.py",
    "serve/settings.py",
)
# An engine's folder: a sub-package of draftfit.engines that holds an Engine (`engine.py`).
ENGINE_FOLDERS = tuple(sorted(p.parent.name for p in (PACKAGE / "engines").glob("*/engine.py")))


def _concrete(module: str) -> bool:
    """Whether `module` is (inside) one engine's folder."""
    parts = module.split(".")
    return parts[:2] == ["draftfit", "engines"] and len(parts) > 2 and parts[2] in ENGINE_FOLDERS


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _runtime_imports(
    tree: ast.Module, type_checking: bool = False
) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth; those under `if TYPE_CHECKING:` only when
    `type_checking`."""
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if (
            not type_checking
            and isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test)
        ):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


@functools.cache
def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """module -> the draftfit modules it imports (a `from X import name` names X.name
    when that is a module); with `type_checking`, imports under `if TYPE_CHECKING:` too.
    Computed once per run; callers only read it."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        tree = parsed(path)
        for node in _runtime_imports(tree, type_checking):
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


def declared_layers(package: Path) -> tuple[tuple[str, ...], ...] | None:
    """The `LAYERS` a package's `__init__.py` declares (read, not imported), or None."""
    tree = parsed(package / "__init__.py")
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "LAYERS":
            assert node.value is not None
            value = ast.literal_eval(node.value)
            assert isinstance(value, tuple)
            return value
    return None


def _index(layers: tuple[tuple[str, ...], ...], name: str, where: str) -> int:
    for index, names in enumerate(layers):
        if name in names:
            return index
    raise AssertionError(f"{name} is in no layer of {where}: add it to its LAYERS")


def layer_of(module: str) -> tuple[int, ...]:
    """The module's layer at each level of packages that declare an order: its top-level
    module or sub-package in `draftfit.LAYERS`, then its place in that sub-package's
    `LAYERS`, and so on down (-1 for the `__init__` of a package that declares an order, 0
    throughout a package that declares none)."""
    root = declared_layers(PACKAGE)
    assert root is not None, "draftfit/__init__.py declares no LAYERS"
    if module == "draftfit":
        # The package's __init__ re-exports the Python API (draftfit.check, ...): it sits on
        # top, beside the command line; every other module imports draftfit.version instead.
        return len(root), 0
    parts = module.split(".")[1:]
    path: list[int] = []
    folder, layers = PACKAGE, root
    for depth, part in enumerate(parts):
        if layers is None:
            path.append(0)
            break
        path.append(_index(layers, part, ".".join(["draftfit", *parts[:depth]])))
        folder = folder / part
        if not folder.is_dir():
            break
        layers = declared_layers(folder)
        if depth == len(parts) - 1:
            path.append(-1 if layers is not None else 0)
    return tuple(path)


def _above(other: str, module: str) -> bool:
    """Whether importing `other` from `module` goes up a layer: their layers compared in the
    innermost package they share."""
    mine, theirs = layer_of(module), layer_of(other)
    shared = 0
    for a, b in zip(module.split(".")[1:], other.split(".")[1:], strict=False):
        if a != b:
            break
        shared += 1
    return theirs[: shared + 1] > mine[: shared + 1]


def test_every_module_has_a_declared_layer() -> None:
    for module in _modules():
        layer_of(module)
    root = declared_layers(PACKAGE)
    assert root is not None
    named = [name for names in root for name in names]
    present = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
    }
    assert sorted(set(named) - present) == [], "LAYERS names what is not there"
    assert sorted(present - set(named) - {"__init__"}) == [], "not in draftfit.LAYERS"


def test_the_top_level_is_small() -> None:
    assert len(list(PACKAGE.glob("*.py"))) <= 16


# Circles that only a type annotation closes (an import under `if TYPE_CHECKING:`): none.
TYPE_ONLY_CIRCLES: tuple[frozenset[str], ...] = ()


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected parts of `graph` with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part: set[str] = set()
            while True:
                top = stack.pop()
                part.add(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(frozenset(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_import_graph_has_no_circle() -> None:
    assert _circles(import_graph()) == []
    # With the imports that only type annotations need, only the listed ones remain.
    typed = _circles(import_graph(type_checking=True))
    assert sorted(typed, key=sorted) == sorted(TYPE_ONLY_CIRCLES, key=sorted)


def test_import_graph_has_no_upward_edge() -> None:
    upward = [
        f"{module} (layer {layer_of(module)}) imports {other} (layer {layer_of(other)})"
        for module, edges in import_graph().items()
        for other in edges
        if _above(other, module)
    ]
    assert upward == []


def test_no_module_outside_engines_imports_a_concrete_engine() -> None:
    offenders = [
        f"{module} imports {other}"
        for module, edges in import_graph().items()
        if not module.startswith("draftfit.engines")
        for other in edges
        if _concrete(other)
    ]
    assert offenders == []
    # The recipe reuses the check: it neither re-describes the draft nor imports the checker.
    recipe_edges = import_graph()["draftfit.commands.recipe"]
    assert "draftfit.checker" not in recipe_edges
    recipe_tree = parsed(PACKAGE / "commands" / "recipe.py")
    names = {n.id for n in ast.walk(recipe_tree) if isinstance(n, ast.Name)}
    assert "describe" not in names and "load_engine" not in names


def _string_constants(path: Path) -> list[str]:
    """String literals of a module, docstrings left out."""
    tree = parsed(path)
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
        assert engine_of(engine.resolve(engine.data.latest)) is engine
        assert engine.convention in {c for e in ENGINES for c in e.plans}


def test_the_conventions_come_from_the_engines_that_plan_them() -> None:
    from draftfit.cli.options import CONVENTIONS as CLI_CONVENTIONS
    from draftfit.conversion import CONVENTIONS
    from draftfit.engines.registry import conventions, planning_engine

    # Each engine's own convention first, then the other planned ones: the order `--to`
    # lists them in (the command line spells them out so that `--help` loads no engine).
    assert CONVENTIONS == conventions() == ("vllm", "sglang", "speculators")
    assert CLI_CONVENTIONS == CONVENTIONS
    for name in CONVENTIONS:
        engine = planning_engine(name)
        assert engine is not None and engine.layout(name).name == name


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
    profiles = parse_engine_selector("all")
    report = check_checkpoint(checkpoint, target, profiles)
    kept = report.kept()
    assert kept.checkpoint is checkpoint and kept.target is target
    assert kept.draft.method == "eagle3"
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
    check_checkpoint(checkpoint, target, parse_engine_selector("vllm"))
    kept = len(checkpoint.memo)
    assert kept >= 2  # the map, and the rules' results computed from it
    check_checkpoint(checkpoint, target, parse_engine_selector("all"))
    assert len(checkpoint.memo) == kept
    # A fresh read of the same directory starts empty.
    assert len(load_checkpoint(checkpoint.root).memo) == 0


def test_a_planned_conversion_shares_the_inputs_values_and_keeps_its_own(tmp_path: Path) -> None:
    draft = f.specforge(nested_aux=[1, 3, 6]).drop("d2t")
    checkpoint, target = _draft_and_target(tmp_path, draft)
    spec_profile = parse_engine_selector("vllm")[0]
    check_checkpoint(checkpoint, target, [spec_profile])
    base_entries = len(checkpoint.memo)
    report = check_checkpoint(checkpoint, target, [spec_profile])
    plan = plan_conversion(checkpoint, report.kept().draft, "vllm", spec_profile, target)
    preview = preview_checkpoint(plan, checkpoint)
    derived = preview.tensors["d2t"]
    assert derived.file not in checkpoint.files  # built in memory from t2d
    check_checkpoint(preview, target, [spec_profile])
    assert len(checkpoint.memo) == base_entries
    assert len(preview.memo) >= 1


# ---------------------------------------------------------------------- a fourth engine


@pytest.fixture
def toy() -> ToyEngine:
    """ToyLLM (`tests/toyllm/`), a fourth engine built as CONTRIBUTING.md's recipe says."""
    return ToyEngine()


def test_a_fourth_engine_runs_through_check_recipes_matrix_and_diff(
    tmp_path: Path, toy: ToyEngine
) -> None:
    checkpoint, target = _draft_and_target(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    profiles = parse_engine_selector("toyllm", (*ENGINES, toy))
    assert [p.label for p in profiles] == [f"toyllm=={TRTLLM.data.latest}"]
    assert parse_engine_selector("all", (*ENGINES, toy))[-1].engine == "toyllm"

    # check: the same verdicts and findings as the engine whose data it copies.
    every = [toy.resolve(v) for v in toy.versions]
    report = check_checkpoint(checkpoint, target, every)
    reference = check_checkpoint(checkpoint, target, [TRTLLM.resolve(v) for v in toy.versions])
    assert [r.engine for r in report.engines] == ["toyllm"] * len(every)
    assert report.engines[0].title.startswith("ToyLLM ")
    assert [r.verdict for r in report.engines] == [r.verdict for r in reference.engines]
    assert sorted(f.code for f in report.findings) == sorted(f.code for f in reference.findings)

    # check --recipe: the toy's own command, after the convert step its convention allows;
    # shown where it reads back without an error, else one line for the version says why.
    built = [recipe_for(report, result) for result in report.engines]
    assert all(r is not None and "toyllm serve" in r.command for r in built)
    attach_recipes(report)
    shown = [*(report.recipes or []), *(report.no_recipes or [])]
    assert sorted(r.version for r in shown) == sorted(toy.versions)
    assert all(r.engine == "toyllm" for r in shown)

    # matrix: every toy version once, in order.
    matrix = build_matrix(checkpoint, target, engines=(toy,))
    assert [v for row in matrix.rows for v in row.versions] == list(toy.versions)
    assert {row.title for row in matrix.rows} == {"ToyLLM"}

    # diff: compared through the toy's view.
    other = load_checkpoint(f.specforge(nested_aux=[1, 3, 5]).write(tmp_path / "other"))
    diff = diff_checkpoints(checkpoint, other, profiles, target)
    assert [r.engine for r in diff.engines] == ["toyllm"]
    assert any(f.code == "DF804" for f in diff.findings)


def test_a_fourth_engine_reads_its_own_launch_and_plans_its_own_convention(
    tmp_path: Path, toy: ToyEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import draftfit.engines.launch as launch_module

    monkeypatch.setattr(launch_module, "ENGINES", (*ENGINES, toy))  # its registry line

    # --serve-args: the toy's command and flags, read by its launch part.
    settings = launch_module.parse_serve_args("toyllm serve M --tp 4 --kv-dtype fp8 --no-graphs -x")
    assert settings.engine == "toyllm" and settings.full_launch is False
    assert (settings.tensor_parallel_size, settings.kv_cache_dtype) == (4, "fp8")
    assert settings.cuda_graphs is False and settings.ignored_flags == ("-x",)
    assert launch_module.parse_serve_args("--kv-dtype fp8").engine == "toyllm"
    assert launch_module.parse_serve_args("vllm serve M -tp 2").engine == "vllm"

    # check with that launch, and the recipe edits it (the launch is the toy's).
    checkpoint, target = _draft_and_target(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    profile = toy.resolve(toy.data.latest)
    report = check_checkpoint(checkpoint, target, [profile], serve=settings)
    assert report.serve is not None and report.serve.settings is settings
    recipe = recipe_for(report, report.engines[0])
    assert recipe is not None
    assert recipe.command.startswith("toyllm serve M")
    assert recipe.notes[0].startswith("your launch")

    # convert --to toyconv: planned with the toy's data, laid out as SGLang's convention.
    draft = describe(checkpoint)
    toyconv = plan_conversion(checkpoint, draft, "toyconv", profile, target)
    sglang = plan_conversion(checkpoint, draft, "sglang", None, target)
    assert toyconv.convention == "toyconv"
    assert [t.name for t in toyconv.tensors] == [t.name for t in sglang.tensors]
    assert any(t.name.startswith("midlayer.") for t in toyconv.tensors)
    assert toyconv.config["architectures"] == sglang.config["architectures"]
    preview = preview_checkpoint(toyconv, checkpoint)
    assert check_checkpoint(preview, target, [profile]).engines[0].engine == "toyllm"

    # The default of --engine: found installed by the distribution name its Engine declares.
    import draftfit.engines.installed as installed_module

    monkeypatch.setattr(installed_module, "ENGINES", (*ENGINES, toy))
    info = tmp_path / "site" / f"toyllm-{toy.data.latest}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: toyllm\nVersion: {toy.data.latest}\n"
    )
    found = installed_module.find_installed([str(tmp_path / "site")])
    assert [(i.engine, i.version) for i in found] == [(toy, toy.data.latest)]


def test_a_damaged_engine_data_file_is_a_data_error(tmp_path: Path) -> None:
    broken = ToyEngine(tmp_path / "toyllm.toml")
    (tmp_path / "toyllm.toml").write_text("versions = [", encoding="utf-8")
    from draftfit.errors import EngineDataError

    with pytest.raises(EngineDataError):
        _ = broken.data


def test_what_a_convention_cannot_express_comes_from_its_engine(tmp_path: Path) -> None:
    draft = f.speculators(aux=[1, 3, 5, 6], n_aux=4)
    draft.config["transformer_layer_config"]["num_aux_hidden_states"] = 4
    checkpoint = load_checkpoint(draft.write(tmp_path / "d"))
    described = describe(checkpoint)

    def limits(to: str, engine: str) -> list[str]:
        profile = parse_engine_selector(engine)[0]
        plan = plan_conversion(checkpoint, described, to, profile)
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


def test_no_module_imports_another_modules_private_names() -> None:
    """A name with a leading underscore is its module's own: another module that needs it
    gets a public name in its home module (no private function exported under a public
    alias either)."""
    root = Path(draftfit.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("draftfit"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        offenders.append(f"{path.relative_to(root)}: {alias.name}")
    assert offenders == []


# ---------------------------------------------------------------------- engine names

ENGINE_NAMES = frozenset(e.name for e in ENGINES)
MAX_ENGINE_LITERALS = 15


def _names_an_engine(text: str) -> bool:
    """`text` is an engine's name, or a short string holding one as a word (`vllm==`,
    `trtllm-serve`, `sglang.launch_server`)."""
    if text in ENGINE_NAMES:
        return True
    return len(text) <= 40 and bool(ENGINE_NAMES & set(re.split(r"[^A-Za-z0-9]+", text)))


def test_outside_engines_at_most_15_engine_name_literals() -> None:
    """What an engine is and does lives in its folder: outside `draftfit.engines`, at most
    15 string literals (docstrings left out) name an engine."""
    found = [
        f"{path.relative_to(PACKAGE)}: {text!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "engines"
        for text in _string_constants(path)
        if _names_an_engine(text)
    ]
    assert len(found) <= MAX_ENGINE_LITERALS, "\n".join(found)
