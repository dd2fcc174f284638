"""The round trip of a serve recipe, as a user runs it: each `draftfit convert` step through
the command line, then `draftfit check` of the draft the recipe serves with the recipe's own
launch as `--serve-args` (TensorRT-LLM's `spec.yaml` written from the recipe's heredoc
first). Used by `tests/test_recipe_round_trip.py` and `dev/recipe_round_trip.py`.

Run it with the current folder set to where the recipe's paths are relative to (the folder
the check that made the recipe ran in): the steps write there, as they would for the user.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from draftfit.cli.main import main
from draftfit.engines.interface import Recipe

_ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=\S*")


@dataclass
class RoundTrip:
    """What running one recipe found.

    Attributes:
        converts: each `draftfit convert` step's words (after `draftfit`) and exit status.
        errors, warnings: the codes `draftfit check` finds for the served draft under the
            recipe's launch at the recipe's version.
        problems: what is wrong with the recipe (empty: it round-trips).
        downloads: the folders an `hf download` step stood for (links to the target).
    """

    recipe: Recipe
    converts: list[tuple[list[str], int]] = field(default_factory=list)
    errors: set[str] = field(default_factory=set)
    warnings: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    downloads: list[Path] = field(default_factory=list)


@dataclass
class Launch:
    """A recipe's command taken apart: the options file its heredoc writes, and the launch."""

    files: dict[str, str]
    line: str


def split_launch(command: str) -> Launch:
    """The recipe's command as the shell runs it: `cat > NAME <<'EOF'` … `EOF` writes a file,
    the last command is the launch (kept as written, ` \\`-newline continuations and all)."""
    lines = command.split("\n")
    files: dict[str, str] = {}
    while lines and lines[0].startswith("cat > "):
        words = shlex.split(lines[0])
        name, marker = words[2], words[3].removeprefix("<<").strip("'\"")
        end = lines.index(marker, 1)
        files[name] = "".join(line + "\n" for line in lines[1:end])
        lines = lines[end + 1 :]
    return Launch(files, "\n".join(lines))


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """`draftfit ARGV` in this process: its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def round_trip(recipe: Recipe, draft: str, target: str | None) -> RoundTrip:
    """Run `recipe` (made by a check of `draft` next to `target`) in the current folder.
    The draft served is the last convert step's output, else `draft`; the method is the one
    the recipe's launch gives. What the steps wrote is removed afterwards (the next recipe
    may write the same folder)."""
    result = RoundTrip(recipe)
    try:
        _run(recipe, draft, target, result)
    finally:
        for words, _ in result.converts:
            output = Path(words[words.index("-o") + 1])
            if output.is_dir():
                shutil.rmtree(output)
        for name in split_launch(recipe.command).files:
            Path(name).unlink(missing_ok=True)
        for local in result.downloads:
            local.unlink(missing_ok=True)
    return result


def _run(recipe: Recipe, draft: str, target: str | None, result: RoundTrip) -> None:
    served = draft
    for step in recipe.steps:
        words = shlex.split(step)
        while words and _ASSIGNMENT.fullmatch(words[0]):
            words = words[1:]
        if words[:2] == ["hf", "download"] and "--local-dir" in words and target is not None:
            # The round trip has no Hub: the target it was checked next to (a Hugging Face
            # cache folder of that repository) stands for the download, under its name.
            local = Path(words[words.index("--local-dir") + 1])
            if not local.exists():
                local.symlink_to(Path(target).resolve(), target_is_directory=True)
                result.downloads.append(local)
            continue
        if words[:2] != ["draftfit", "convert"]:
            result.problems.append(f"a step the round trip cannot run: {step}")
            return
        code, _, err = run_cli(words[1:])
        result.converts.append((words[1:], code))
        if code != 0:
            result.problems.append(f"`{step}` exits {code}: {err.strip()[-400:]}")
        served = words[words.index("-o") + 1]
    launch = split_launch(recipe.command)
    for name, text in launch.files.items():
        Path(name).write_text(text)
    argv = ["check", served, "--engine", f"{recipe.engine}=={recipe.version}", "--isolated"]
    argv += ["--serve-args", launch.line, "--format", "json"]
    if target is not None:
        argv += ["--target", target]
    code, out, err = run_cli(argv)
    if code not in (0, 1):
        result.problems.append(f"the check of the served draft exits {code}: {err.strip()}")
        return
    findings = json.loads(out)["findings"]
    for finding in findings:
        if finding.get("suppressed"):
            continue
        if finding["severity"] == "error":
            result.errors.add(finding["code"])
        elif finding["severity"] == "warning":
            result.warnings.add(finding["code"])
    if result.errors:
        result.problems.append(f"the served draft still has errors {sorted(result.errors)}")
    unlisted = result.warnings - set(recipe.remaining)
    if unlisted:
        result.problems.append(f"warnings the recipe does not list: {sorted(unlisted)}")
    if set(recipe.remaining) != result.warnings | result.errors:
        result.problems.append(
            f"`remaining` is {recipe.remaining}, the round trip finds "
            f"{sorted(result.warnings | result.errors)}"
        )
    if not recipe.resolves_errors:
        result.problems.append("a printed recipe with `resolves_errors: false`")
