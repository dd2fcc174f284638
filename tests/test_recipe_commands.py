"""Every serve recipe pastes: each step and command the rule cases and the matrix produce,
from local folders and from Hub references (a Hub-shaped server on 127.0.0.1), parses as
shell (` \\`-continued lines joined, a heredoc body read as YAML), names Hub checkpoints by
repository id with the engine's own revision settings, and uses only flags the engine's
argument parser accepts at the recipe's version (the engine data's `serve_flags`, read from
the parsers) — or, for `draftfit convert`, that draftfit's own parser accepts. Printed, a
recipe line is never wrapped, even on a narrow terminal."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
import yaml

from draftfit.checker import check_path
from draftfit.checkpoint import load_checkpoint
from draftfit.cli.main import build_parser, main
from draftfit.commands.recipe import attach_recipes, recipe_for
from draftfit.commands.release_matrix import build_matrix
from draftfit.draft.target import load_target
from draftfit.engines.interface import Recipe
from draftfit.engines.registry import load_engine
from draftfit.origins.reference import open_checkpoint, open_target
from draftfit.render.matrix_markdown import render_markdown
from draftfit.render.matrix_text import render_matrix
from draftfit.render.options import RenderOptions
from draftfit.render.text import render_check
from tests import factory as f
from tests.cases import CASES, Case
from tests.cases import mtp as mtp_cases
from tests.fake_hub import FakeHub, configure_hf_env
from tests.sampling import sampled

# The flags `hf download` takes in recipes; checked against the installed CLI's help below.
HF_DOWNLOAD_FLAGS = frozenset({"--revision", "--local-dir"})
# A config that names code of its own for a model type no engine registry has a class for.
OWN_CODE = {
    "AutoConfig": "configuration_custom.CustomConfig",
    "AutoModelForCausalLM": "modeling_custom.CustomForCausalLM",
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ---------------------------------------------------------------------- parsing recipes


def shell_commands(text: str) -> list[list[str]]:
    """`text` as the shell reads it: one word list per command. A line ending in ` \\`
    continues on the next; a heredoc's body is parsed as YAML and set apart."""
    commands: list[list[str]] = []
    lines = text.splitlines()
    pending = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.endswith(" \\"):
            pending += line[:-1]
            continue
        words = shlex.split(pending + line)
        pending = ""
        heredoc = next((w for w in words if w.startswith("<<")), None)
        if heredoc is not None:
            end = lines.index(heredoc[2:], i)
            body = yaml.safe_load("\n".join(lines[i:end]))
            assert isinstance(body, dict), text
            i = end + 1
            words = words[: words.index(heredoc)]
        commands.append(words)
    assert not pending, f"a command ends in a continuation:\n{text}"
    return commands


@cache
def _serve_flags(engine: str, version: str) -> frozenset[str]:
    return frozenset(load_engine(engine).resolve(version).value("serve_flags") or ())


def check_recipe(recipe: Recipe, versions: list[str] | None = None) -> None:
    """Assert that every step and the command of `recipe` parse, and use only flags the
    engine accepts at each of `versions` (a matrix range; default: the recipe's version)."""
    text = "\n".join([*recipe.steps, recipe.command])
    assert "hf://" not in text and "hf://" not in json.dumps(recipe.config), text
    served = 0
    for words in shell_commands(text):
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
            words = words[1:]  # environment assignments
        if words[:2] == ["draftfit", "convert"]:
            try:
                build_parser().parse_args(words[1:])
            except SystemExit:
                pytest.fail(f"draftfit's parser refuses {words}")
        elif words[:2] == ["hf", "download"]:
            assert {w for w in words if w.startswith("-")} <= HF_DOWNLOAD_FLAGS, words
        elif words[:3] == ["cat", ">", "spec.yaml"]:
            pass
        else:
            engine, rest = _engine_command(words)
            assert engine == recipe.engine, (engine, recipe.engine, text)
            flags = {w for w in rest if w.startswith("-")}
            for version in versions or [recipe.version]:
                unknown = flags - _serve_flags(engine, version)
                assert not unknown, f"{engine}=={version} does not accept {unknown}:\n{text}"
            served += 1
            for word in rest:
                assert "@" not in word or word.startswith("{"), f"a revision glued on: {text}"
    assert served == 1, text


def _engine_command(words: list[str]) -> tuple[str, list[str]]:
    if words[:2] == ["vllm", "serve"]:
        return "vllm", words[3:]
    if words[:3] == ["python", "-m", "sglang.launch_server"]:
        return "sglang", words[3:]
    if words[:1] == ["trtllm-serve"]:
        return "trtllm", words[2:]
    pytest.fail(f"not a command a recipe runs: {words}")


def test_shell_commands_split_continuations_and_heredocs() -> None:
    text = "A=1 vllm serve t \\\n  --revision r\ncat > spec.yaml <<'EOF'\nk: [1]\nEOF\nx --y"
    assert shell_commands(text) == [
        ["A=1", "vllm", "serve", "t", "--revision", "r"],
        ["cat", ">", "spec.yaml"],
        ["x", "--y"],
    ]
    # A line broken without a continuation becomes a command of its own, which fails.
    with pytest.raises(pytest.fail.Exception):
        check_recipe(Recipe("vllm", "0.34.0", "vllm serve t\n  --revision r"))


@pytest.mark.slow
def test_the_installed_hf_cli_takes_the_download_flags() -> None:
    hf = shutil.which("hf")
    if hf is None:
        pytest.skip("the hf command is not installed")
    text = subprocess.run([hf, "download", "--help"], capture_output=True, text=True).stdout
    assert set(re.findall(r"--[a-z-]+", text)) >= HF_DOWNLOAD_FLAGS


# ---------------------------------------------------------------------- local folders


def _case_recipes(case, tmp_path: Path) -> Iterator[tuple[Recipe, list[str]]]:
    tmp_path.mkdir()
    draft, target = case.build(tmp_path)
    report = check_path(draft, target=target, engines=["all"], method=case.method)
    attach_recipes(report)
    yield from ((recipe, [recipe.version]) for recipe in report.recipes or [])
    matrix = build_matrix(
        load_checkpoint(draft), load_target(target) if target else None, method=case.method
    )
    yield from ((row.recipe, row.versions) for row in matrix.rows if row.recipe is not None)


def _paste_recipes(cases: list[Case], tmp_path: Path) -> tuple[int, set[str]]:
    """Check every recipe of `cases` pastes; how many, and for which engines. The MTP cases
    (a target serving its own MTP layers) have their recipes replayed in
    tests/test_mtp_commands.py, through the convert step and the launch they print."""
    checked = 0
    engines = set()
    for n, case in enumerate(cases):
        if case.build.__module__ == mtp_cases.__name__:
            continue
        for recipe, versions in _case_recipes(case, tmp_path / str(n)):
            check_recipe(recipe, versions)
            checked += 1
            engines.add(recipe.engine)
    return checked, engines


@pytest.mark.slow
def test_every_recipe_of_the_rule_cases_pastes(tmp_path: Path) -> None:
    checked, engines = _paste_recipes(CASES, tmp_path)
    assert checked > 300 and engines == {"vllm", "sglang", "trtllm"}


def test_recipes_of_a_sample_of_rule_cases_paste(tmp_path: Path) -> None:
    """The quick run's share of the sweep above: one case in 100."""
    checked, engines = _paste_recipes(CASES[::100], tmp_path)
    assert checked > 5 and engines == {"vllm", "sglang", "trtllm"}


# ---------------------------------------------------------------------- Hub references


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    fake = FakeHub()
    specforge = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "sf")
    fake.add_repo("org/specforge", specforge, revision="v2")
    fake.add_repo("org/specforge", specforge)
    fake.add_repo(
        "org/speculators", f.speculators(aux=[2, 4, 5]).write(tmp_path / "sp"), revision="v2"
    )
    fake.add_repo("org/eagle1", f.eagle1().write(tmp_path / "e1"), revision="v2")
    fake.add_repo("org/target", f.llama_target(tmp_path / "t"), revision="v3")
    fake.add_repo(
        "org/own-code",
        f.llama_target(tmp_path / "k", model_type="llama_custom", auto_map=OWN_CODE),
    )
    with fake:
        configure_hf_env(monkeypatch, fake.endpoint, tmp_path / "hf-home")
        yield fake


def _recipes(
    draft: str, target: str, engines: list[str], *, draft_is_for_target: bool = False
) -> dict[str, Recipe]:
    report = check_path(
        draft, target=target, engines=engines, draft_is_for_target=draft_is_for_target
    )
    attach_recipes(report)
    return {f"{r.engine}=={r.version}": r for r in report.recipes or []}


def _built_recipes(draft: str, target: str, engines: list[str]) -> dict[str, Recipe]:
    """Every version's recipe as the engine writes it, shown or not (a recipe that leaves
    errors is not shown, but its command is still written the same way)."""
    report = check_path(draft, target=target, engines=engines)
    built = (recipe_for(report, result) for result in report.engines)
    return {f"{r.engine}=={r.version}": r for r in built if r is not None}


HUB_DRAFTS = ("hf://org/specforge@v2", "hf://org/speculators@v2", "hf://org/eagle1@v2")
HUB_TARGETS = ("hf://org/target@v3", "org/own-code")


HUB_PAIRS = [(d, t) for d in HUB_DRAFTS for t in HUB_TARGETS]


@pytest.mark.parametrize("pair", sampled(HUB_PAIRS, 6, lambda pair: " on ".join(pair)))
def test_every_recipe_of_hub_sources_pastes(hub: FakeHub, pair: tuple[str, str]) -> None:
    draft, target = pair
    checked = 0
    # The pairs are made of factory checkpoints with one set of shapes: the speculators draft
    # records Llama-3.1-8B-Instruct as its verifier, which `org/kimi` is not (DF507 would
    # rightly leave it without a recipe); here each draft is declared to be for its target.
    engines = ["all", "vllm==0.8.1", "sglang==0.5.1"]
    recipes = _recipes(draft, target, engines, draft_is_for_target=True)
    for recipe in recipes.values():
        check_recipe(recipe)
        checked += 1
    opened = open_target(target)
    opened.draft_is_for_target = True
    matrix = build_matrix(open_checkpoint(draft), opened)
    for row in matrix.rows:
        if row.recipe is not None:
            check_recipe(row.recipe, row.versions)
            checked += 1
    # An EAGLE-1 draft has the fewest engines that serve it: one recipe from the check and one
    # from the matrix; the EAGLE-3 pairs give dozens.
    assert checked >= 2


def test_hub_sources_are_repository_ids_with_the_engines_revision_settings(
    hub: FakeHub,
) -> None:
    recipes = _recipes("hf://org/specforge@v2", "hf://org/target@v3", ["all", "sglang==0.5.1"])
    # vLLM: a convert step needs a local copy, downloaded first.
    vllm = recipes["vllm==0.34.0"]
    assert vllm.steps == [
        "hf download org/specforge --revision v2 --local-dir specforge",
        "draftfit convert specforge --to vllm -o specforge-vllm --engine vllm==0.34.0 "
        "--target org/target@v3 --anyway",
    ]
    assert shell_commands(vllm.command)[0][:5] == [
        "vllm",
        "serve",
        "org/target",
        "--revision",
        "v3",
    ]
    assert vllm.config["model"] == "specforge-vllm"
    # SGLang: its own draft revision flag where it has one, a download before it did.
    new = shell_commands(recipes["sglang==0.5.23"].command)[0]
    assert recipes["sglang==0.5.23"].steps == []
    assert new[new.index("--model-path") + 1] == "org/target"
    assert new[new.index("--revision") + 1] == "v3"
    assert new[new.index("--speculative-draft-model-path") + 1] == "org/specforge"
    assert new[new.index("--speculative-draft-model-revision") + 1] == "v2"
    old = recipes["sglang==0.5.1"]
    assert old.steps == ["hf download org/specforge --revision v2 --local-dir specforge"]
    words = shell_commands(old.command)[0]
    assert words[words.index("--speculative-draft-model-path") + 1] == "specforge"
    # TensorRT-LLM is given folders.
    trt = recipes["trtllm==1.4.0rc4"]
    assert trt.steps == [
        "hf download org/specforge --revision v2 --local-dir specforge",
        "hf download org/target --revision v3 --local-dir target",
    ]
    assert trt.config["speculative_config"]["speculative_model"] == "specforge"
    assert shell_commands(trt.command)[-1][:2] == ["trtllm-serve", "target"]


def test_sglang_before_the_draft_revision_flag_downloads_the_draft(hub: FakeHub) -> None:
    """Before 0.5.2 SGLang reads the draft at the target's `--revision`: a Hub draft is
    downloaded first even when it has no revision of its own."""
    recipes = _recipes("org/specforge", "org/target@v3", ["sglang==0.5.1", "sglang==0.5.2"])
    assert recipes["sglang==0.5.1"].steps == ["hf download org/specforge --local-dir specforge"]
    new = recipes["sglang==0.5.2"]
    words = shell_commands(new.command)[0]
    assert new.steps == [] and "--speculative-draft-model-revision" not in words
    assert words[words.index("--speculative-draft-model-path") + 1] == "org/specforge"


def test_vllm_draft_revision_goes_into_the_speculative_config(hub: FakeHub) -> None:
    recipes = _recipes("hf://org/speculators@v2", "org/target@v3", ["vllm"])
    assert recipes["vllm==0.34.0"].config == {
        "method": "eagle3",
        "model": "org/speculators",
        "num_speculative_tokens": 3,
        "revision": "v2",
    }
    assert recipes["vllm==0.34.0"].steps == []


def test_vllm_before_the_speculative_config_downloads_a_draft_at_a_revision(
    hub: FakeHub,
) -> None:
    """vLLM 0.8.1 serves no EAGLE draft draftfit knows (so no recipe is attached), but the
    command its recipe would give is still one its parser takes."""
    report = check_path("hf://org/eagle1@v2", target="org/target@v3", engines=["vllm==0.8.1"])
    recipe = recipe_for(report, report.engines[0])
    assert recipe is not None and not recipe.resolves_errors
    check_recipe(recipe)
    assert recipe.steps == ["hf download org/eagle1 --revision v2 --local-dir eagle1"]
    words = shell_commands(recipe.command)[0]
    assert words[words.index("--speculative-model") + 1] == "eagle1"
    assert "--speculative-config" not in words


TRUST_FLAGS = {"vllm": "--trust-remote-code", "sglang": "--trust-remote-code"}
TRUST_FLAGS["trtllm"] = "--trust_remote_code"


def test_trust_remote_code_where_no_release_reads_the_model_type(hub: FakeHub) -> None:
    """A target of a model type no engine registry knows, whose config names its own code:
    every release read needs the flag (and TensorRT-LLM's was not read: passed too)."""
    own = _built_recipes("hf://org/speculators@v2", "org/own-code", ["all", "vllm==0.10.2"])
    assert {r.engine for r in own.values()} == set(TRUST_FLAGS)
    assert "vllm==0.10.2" in own
    for recipe in own.values():
        assert TRUST_FLAGS[recipe.engine] in shell_commands(recipe.command)[-1], recipe.command
        assert any("auto_map" in note and "`llama_custom`" in note for note in recipe.notes)
        assert "DF560" not in recipe.remaining
    unread = [r for r in own.values() if r.engine == "trtllm"]
    assert unread and all(any("was not read" in n for n in r.notes) for r in unread)
    # A speculators draft's `auto_map` names no Transformers Auto class: nothing to trust.
    plain = _built_recipes("hf://org/speculators@v2", "org/target@v3", ["all"])
    for recipe in plain.values():
        assert "trust" not in recipe.command, recipe.command


def test_trust_remote_code_only_where_the_release_needs_it(tmp_path: Path) -> None:
    """Kimi-K2.5's config names its own code, but vLLM 0.34.0 and SGLang 0.5.23 read
    `kimi_k25` with classes of their own: their recipes leave the flag out and say why."""
    kimi = str(f.kimi_k25_target(tmp_path / "kimi-k25"))
    speculators = str(f.speculators().write(tmp_path / "speculators"))
    specforge = str(f.specforge().write(tmp_path / "specforge"))
    recipes = _built_recipes(speculators, kimi, ["vllm==0.34.0", "trtllm"])
    recipes |= _built_recipes(specforge, kimi, ["sglang==0.5.23"])
    assert {"vllm==0.34.0", "sglang==0.5.23"} <= set(recipes), recipes
    for key in ("vllm==0.34.0", "sglang==0.5.23"):
        recipe = recipes[key]
        assert "--trust-remote-code" not in shell_commands(recipe.command)[-1], recipe.command
        assert any(
            n.startswith("no --trust-remote-code") and "`kimi_k25`" in n for n in recipe.notes
        ), recipe.notes
    for recipe in recipes.values():
        if recipe.engine == "trtllm":
            assert TRUST_FLAGS["trtllm"] in shell_commands(recipe.command)[-1]


# ---------------------------------------------------------------------- printing


def _specforge_report(tmp_path: Path):
    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "a-rather-long-draft-folder-name")
    target = f.llama_target(tmp_path / "t")
    report = check_path(draft, target=target, engines=["all"])
    attach_recipes(report)
    return draft, target, report


def test_recipe_lines_are_never_wrapped_on_a_narrow_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    draft, target, report = _specforge_report(tmp_path)
    matrix = build_matrix(load_checkpoint(draft), load_target(target))
    outputs = [
        (render_check(report, RenderOptions(color=True)), report.recipes or []),
        (
            render_matrix(matrix, RenderOptions(color=True)),
            [row.recipe for row in matrix.rows if row.recipe is not None],
        ),
    ]
    for text, recipes in outputs:
        lines = ANSI.sub("", text).splitlines()
        assert any(len(line) > 60 for line in lines)  # there is something to wrap
        for recipe in recipes:
            for line in recipe.steps:
                assert "  " + line in lines, line
            # a here-document's body and closing word are printed as the shell reads them
            body = _heredoc_lines(recipe.command)
            for line in recipe.command.splitlines():
                assert ("" if line in body else "  ") + line in lines, line


def _heredoc_lines(command: str) -> set[str]:
    """The body and closing-word lines of the here-documents in `command`."""
    found: set[str] = set()
    closing = None
    for line in command.splitlines():
        if closing is not None:
            found.add(line)
            closing = None if line == closing else closing
        elif "<<" in line:
            closing = line.rpartition("<<")[2].strip().strip("'\"")
    return found


def test_a_printed_recipe_pastes_into_a_shell_as_shown(tmp_path: Path, capsys) -> None:
    """The text report's recipe block, pasted as printed (indented), writes the options file
    its here-document holds and runs the launch after it (TensorRT-LLM's `spec.yaml`)."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")
    draft = f.specforge().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    argv = ["check", str(draft), "--target", str(target), "--engine", "trtllm", "--recipe"]
    main(argv)
    text = capsys.readouterr().out
    block = text[text.index("How to serve with TensorRT-LLM") :].split("\n", 1)[1]
    report = check_path(draft, target=target, engines=["trtllm"])
    attach_recipes(report)
    (recipe,) = report.recipes or []
    assert "<<" in recipe.command
    work = tmp_path / "shell"
    work.mkdir()
    script = 'trtllm-serve() { printf "%s\\n" "$@" > launched; }\n' + block
    run = subprocess.run([bash], input=script, cwd=work, capture_output=True, text=True)
    assert run.returncode == 0 and "here-document" not in run.stderr, run.stderr
    command = recipe.command.splitlines()
    start = next(i for i, line in enumerate(command) if "<<" in line)
    closing = command[start].rpartition("<<")[2].strip("'\" ")
    body = command[start + 1 : command.index(closing, start + 1)]
    written = yaml.safe_load((work / "spec.yaml").read_text())
    assert written == yaml.safe_load("\n".join(body))
    assert written["speculative_config"]["speculative_model"] == str(draft)
    launched = (work / "launched").read_text().split("\n")
    assert "--extra_llm_api_options" in launched and "spec.yaml" in launched


def test_markdown_keeps_every_step_of_a_recipe(tmp_path: Path) -> None:
    draft, target, _ = _specforge_report(tmp_path)
    matrix = build_matrix(load_checkpoint(draft), load_target(target))
    text = render_markdown(matrix)
    blocks = re.findall(r"  ```bash\n(.*?)\n  ```", text, re.S)
    recipes = [row.recipe for row in matrix.rows if row.recipe is not None]
    assert len(blocks) == len(recipes)
    assert any(recipe.steps for recipe in recipes)
    for block, recipe in zip(blocks, recipes, strict=True):
        lines = [line[2:] for line in block.splitlines()]
        assert lines == [*recipe.steps, *recipe.command.splitlines()]
        check_recipe(recipe)


def test_json_commands_carry_their_continuations(tmp_path: Path, capsys) -> None:
    draft, target, _ = _specforge_report(tmp_path)
    argv = ["check", str(draft), "--target", str(target), "--engine", "all", "--recipe"]
    assert main([*argv, "--format", "json"]) in (0, 1)
    for recipe in json.loads(capsys.readouterr().out)["recipes"]:
        check_recipe(Recipe(**recipe))


# ---------------------------------------------------------------------- convert -o


@pytest.mark.parametrize("out", ["hf://org/draft-vllm", "hf://x"])
def test_convert_refuses_a_hub_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, out: str
) -> None:
    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "d")
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["convert", str(draft), "--to", "vllm", "-o", out]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "hf upload" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# ---------------------------------------------------------------------- how the target is named


def _vllm_command(draft: Path, target: Path | None) -> str:
    report = check_path(draft, target=target, engines=["vllm==0.34.0"])
    attach_recipes(report)
    return next(r.command for r in report.recipes or [] if r.engine == "vllm")


def test_recipes_name_the_target_by_its_hub_id_where_it_is_known(tmp_path: Path) -> None:
    draft = f.speculators().write(tmp_path / "draft")
    verifier = json.loads((draft / "config.json").read_text())["speculators_config"]["verifier"]
    # No target: the draft's verifier, a Hub id, not a placeholder.
    assert f"vllm serve {verifier['name_or_path']} " in _vllm_command(draft, None)
    # A folder of the Hugging Face cache: its repository, at the snapshot's commit.
    commit = "0123456789abcdef0123456789abcdef01234567"
    cached = f.llama_target(tmp_path / "hub" / "models--org--tgt" / "snapshots" / commit)
    command = _vllm_command(draft, cached)
    assert "vllm serve org/tgt " in command and f"--revision {commit}" in command
    # Any other folder: its path.
    local = f.llama_target(tmp_path / "target")
    assert f"vllm serve {local} " in _vllm_command(draft, local)
