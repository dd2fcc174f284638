"""What a fresh `draftfit` process imports: only what the command runs.

Start-up is what a pre-commit hook, a CI loop over drafts or a `matrix` run pays each time,
so modules that only some inputs need (YAML, shell splitting, the Hub client, TOML, numpy,
the converter, other formats' renderers) must not load for a plain command. Read from
`sys.modules` as the process exits (:mod:`tests.loaded_modules`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import factory as f
from tests.loaded_modules import SRC, loaded_by
from tests.source_trees import parsed

# Never loaded by a plain command: each is needed only for an input or a command not given.
NEVER = {
    "numpy",  # --values
    "torch",
    "yaml",  # a YAML --serve-config
    "huggingface_hub",  # hf:// sources
    "draftfit.origins.hub",
    "importlib.metadata",  # only where a folder on the path may hold an engine's metadata
    "tomllib",  # a settings file; the engine data loads from its compiled form
    "tomli",
    "shlex",  # --serve-args, --recipe
    "draftfit.engines.launch",  # --serve-config, --serve-args
    "draftfit.engines.launch_part",
    "draftfit.engines.vllm.launch",
    "draftfit.engines.sglang.launch",
    "draftfit.engines.trtllm.launch",
    "draftfit.serve.reading",
    "draftfit.engines.citation",  # checked when the engine data is compiled
    "draftfit.values.facts",  # --values
    "draftfit.conversion",  # convert, --recipe
    "draftfit.commands.recipe",
    "draftfit.commands.release_matrix",  # matrix
    "draftfit.commands.comparison",  # diff
    "xml.etree.ElementTree",  # junit
    "draftfit.render.sarif",
    "draftfit.render.junit",
    "draftfit.render.github",
    "rich",  # text is written by rich only where it colours (a terminal)
    "rich.console",
    "draftfit.render.console",
    "logging",  # notices of the Hub reader go to the command line's own sink
    "dataclasses",  # records are draftfit.records' own (dataclasses loads inspect, ast, dis)
    "inspect",
    "importlib.resources",  # packaged files are read beside their module
    "difflib",  # "did you mean" for an unknown name only
    "packaging.version",  # a version the user types; the data's own ship ranked (~3 ms)
    "tempfile",  # loads shutil, random, bz2, lzma: output names are made without it
    "shutil",
}
# Also not loaded for JSON output.
NOT_FOR_JSON = {"draftfit.render.text", "draftfit.render.lines"}
# Not loaded by commands that check nothing.
NO_CHECK = {"draftfit.checker", "draftfit.settings.selection"}


def imported_by(*args: str) -> set[str]:
    """The modules a fresh `python -m draftfit ARGS` imports beyond the interpreter's own."""
    return loaded_by(*args)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("startup")
    draft, target, _ = f.kimi_sibling_pair(root)
    return draft, target


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_plain_check_imports_nothing_on_the_deny_list(pair: tuple[Path, Path], fmt: str) -> None:
    draft, target = pair
    loaded = imported_by("check", str(draft), "--target", str(target), "--format", fmt)
    assert "draftfit.checker" in loaded
    denied = NEVER | (NOT_FOR_JSON if fmt == "json" else set())
    assert not denied & loaded, sorted(denied & loaded)
    if fmt == "text":
        assert "draftfit.render.text" in loaded


@pytest.mark.parametrize(
    "args",
    [("rule", "DF301"), ("rule", "DF301", "--format", "json"), ("engines",), ("--version",)],
    ids=" ".join,
)
def test_commands_that_check_nothing_load_no_checker(args: tuple[str, ...]) -> None:
    loaded = imported_by(*args)
    denied = NEVER | NO_CHECK | (NOT_FOR_JSON if "json" in args else set())
    assert not denied & loaded, sorted(denied & loaded)


def test_help_and_version_load_no_engine_data() -> None:
    for args in (("--help",), ("--version",), ("check", "--help")):
        loaded = imported_by(*args)
        assert not {"draftfit.engines.registry", "draftfit.rules", "rich"} & loaded, args


@pytest.mark.parametrize("args", [(), ("--help",), ("--version",)], ids=repr)
def test_what_the_program_is_is_answered_before_any_command_loads(args: tuple[str, ...]) -> None:
    loaded = imported_by(*args)
    assert "draftfit.cli.top" in loaded
    assert not {"draftfit.cli.main", "draftfit.cli.options", "draftfit.api"} & loaded


def test_a_matrix_in_a_pipe_loads_no_rich(pair: tuple[Path, Path]) -> None:
    """A matrix's table is plain lines where it does not colour: rich loads for a terminal."""
    draft, target = pair
    loaded = imported_by("matrix", str(draft), "--target", str(target))
    assert "draftfit.render.matrix_text" in loaded
    assert not {"rich", "rich.console", "rich.table"} & loaded


def test_a_convert_loads_what_it_copies_with_and_nothing_more(tmp_path: Path) -> None:
    """A convert's start is part of its copy time: the plain converter loads neither the
    version parser, nor tempfile and shutil, nor the other formats' renderers."""
    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "draft")
    out = tmp_path / "out"
    loaded = imported_by("convert", str(draft), "--to", "vllm", "--anyway", "-o", str(out))
    assert "draftfit.conversion.write" in loaded and (out / "config.json").is_file()
    denied = (NEVER - {"draftfit.conversion"}) | {"random"}
    assert not denied & loaded, sorted(denied & loaded)


@pytest.mark.slow
def test_the_optional_readers_load_when_their_input_is_given(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """The deny-list holds modules that do serve a purpose: given their input, they load."""
    draft, target = pair
    launch = tmp_path / "launch.yaml"
    launch.write_text("speculative_config:\n  decoding_type: Eagle3\n  max_draft_len: 3\n")
    with_yaml = imported_by("check", str(draft), "--format", "json", "--serve-config", str(launch))
    assert "yaml" in with_yaml
    with_args = imported_by(
        "check", str(draft), "--format", "json", "--serve-args", "vllm serve M -tp 2"
    )
    assert "shlex" in with_args
    (draft.parent / "draftfit.toml").write_text('ignore = ["DF903"]\n')
    try:
        assert "tomllib" in imported_by("check", str(draft), "--format", "json")
    finally:
        (draft.parent / "draftfit.toml").unlink()
    recipe = imported_by(
        "check", str(draft), "--target", str(target), "--recipe", "--format", "json"
    )
    assert "shlex" in recipe


def test_every_dataclass_has_a_docstring() -> None:
    """Every record says what it holds (the standard `@dataclass` would also build a missing
    docstring from `inspect.signature` at import, a cost every start-up paid)."""
    import ast

    missing = []
    for path in sorted(Path(SRC, "draftfit").rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if not isinstance(node, ast.ClassDef):
                continue
            decorators = [ast.unparse(d) for d in node.decorator_list]
            records = ("dataclass", "frozen", "record")
            if any(d.startswith(records) for d in decorators) and not ast.get_docstring(node):
                missing.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    assert not missing, missing


def test_records_are_defined_the_cheap_way() -> None:
    """`dataclasses` costs a start-up ~9 ms to import and `@dataclass` compiles four to six
    methods per class; `@frozen` and `@record` (draftfit.records) neither. No module of the
    package imports `dataclasses`."""
    import ast

    plain = []
    for path in sorted(Path(SRC, "draftfit").rglob("*.py")):
        for node in ast.walk(parsed(path)):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if "dataclasses" in names:
                plain.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not plain, plain


def test_what_a_command_preloads_is_a_module_of_a_command_that_exists() -> None:
    """The start-up preloads each command's modules by name: a renamed module or command
    must fail here, not on a user's first call."""
    import importlib

    from draftfit.cli.entry import PRELOAD
    from draftfit.cli.main import build_parser

    parser = build_parser()
    commands = next(
        action.choices for action in parser._actions if isinstance(action.choices, dict)
    )
    for command, modules in PRELOAD.items():
        assert command in commands, command
        for name in modules:
            importlib.import_module(name)
