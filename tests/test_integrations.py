"""The pre-commit hook and the GitHub Action, run as their hosts would run them.

The hook's entry is taken from `.pre-commit-hooks.yaml`, given the hook's `args` and the
changed files that match its `files` pattern (as pre-commit does), and run as a process.
`action.yml` is parsed with a YAML parser; its check step's `run:` script is run by bash as
the runner would run it: `${{ inputs.* }}` become the step's environment, `$GITHUB_OUTPUT` a
file. The install step and the SARIF upload need GitHub or the network and
are only inspected.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests import factory as f
from tests.timeouts import scaled

ROOT = Path(__file__).resolve().parents[1]
SARIF_SCHEMA = json.loads((ROOT / "tests/data/sarif/sarif-schema-2.1.0.json").read_text())


@pytest.fixture
def shim(tmp_path: Path) -> dict[str, str]:
    """An environment where `draftfit` runs this checkout (as an installed script would)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "draftfit"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m draftfit "$@"\n')
    script.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT / "src")
    env["NO_COLOR"] = "1"
    return env


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A user's repository: two drafts (one broken for SGLang), a target, notes."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    f.speculators(aux=[2, 4, 5]).write(repo / "drafts" / "kimi")
    f.specforge().write(repo / "drafts" / "llama")
    f.llama_target(repo / "models" / "target")
    (repo / "README.md").write_text("notes\n")
    return repo


def hook() -> dict:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (only,) = hooks
    return only


def run_hook(repo: Path, env: dict[str, str], changed: list[str], args: list[str]):
    spec = hook()
    pattern = re.compile(spec["files"])
    files = [name for name in changed if pattern.search(name)]
    argv = [*shlex.split(spec["entry"]), *args, *files]
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=scaled())


def test_hook_metadata() -> None:
    spec = hook()
    assert spec["id"] == "draftfit" and spec["language"] == "python"
    assert spec["entry"].split()[:2] == ["draftfit", "check"]
    assert spec.get("pass_filenames", True) is True


@pytest.mark.slow
def test_hook_checks_the_folders_of_changed_files(user_repo, shim) -> None:
    args = ["--engine", "sglang==0.5.23", "--target", "models/target", "--quiet"]
    changed = ["drafts/kimi/config.json", "drafts/kimi/model.safetensors", "README.md"]
    done = run_hook(user_repo, shim, changed, args)
    assert done.returncode == 1, done.stderr
    assert done.stdout == "drafts/kimi: SGLang 0.5.23: incompatible (1 error, 0 warning, 0 info)\n"
    done = run_hook(user_repo, shim, ["drafts/llama/model.safetensors"], args)
    assert done.returncode == 0 and done.stdout.startswith("drafts/llama: SGLang 0.5.23: compat")
    # the target's config is a changed file too, but not a checkpoint: nothing to check
    done = run_hook(user_repo, shim, ["models/target/config.json", "README.md"], args)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def test_hook_rechecks_below_a_changed_settings_file(user_repo, shim) -> None:
    settings = user_repo / "drafts" / "draftfit.toml"
    settings.write_text('[ignore]\nDF105 = "SGLang serves a converted copy"\n')
    done = run_hook(
        user_repo, shim, ["drafts/draftfit.toml"], ["--engine", "sglang==0.5.23", "--quiet"]
    )
    assert done.returncode == 0, done.stderr
    # The ignored DF105 is gone; with no target the verdict stays unverified (a selection
    # never turns skipped checks into `compatible`).
    lines = done.stdout.splitlines()
    assert [line.split(" · ")[0] for line in lines] == [
        "drafts/kimi: SGLang 0.5.23: unverified (0 error, 0 warning, 0 info)",
        "drafts/llama: SGLang 0.5.23: unverified (0 error, 0 warning, 0 info)",
    ]
    assert all(" · no target: " in line for line in lines)


def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def test_action_metadata_is_a_composite_action() -> None:
    data = action()
    assert data["runs"]["using"] == "composite"
    assert {"drafts", "target", "engines", "fail-on", "sarif-file", "upload-sarif"} <= set(
        data["inputs"]
    )
    assert data["inputs"]["drafts"]["required"] is True
    steps = data["runs"]["steps"]
    for step in steps:
        if "run" in step:
            assert step["shell"] == "bash"
            # inputs reach scripts through the environment only (no template in the script)
            assert "${{" not in step["run"]
    install = next(s for s in steps if s.get("name") == "Install draftfit")
    assert "$GITHUB_ACTION_PATH" in install["run"]
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"
    for output in data["outputs"].values():
        assert output["value"].startswith("${{ steps.check.outputs.")


def _inputs_env(step: dict, inputs: dict[str, str]) -> dict[str, str]:
    env = {}
    for name, value in step.get("env", {}).items():
        match = re.fullmatch(r"\$\{\{ inputs\.([a-z-]+) \}\}", value)
        assert match, value
        env[name] = inputs[match.group(1)]
    return env


def run_check_step(repo: Path, env: dict[str, str], given: dict[str, str]):
    data = action()
    inputs = {name: spec.get("default", "") for name, spec in data["inputs"].items()}
    inputs.update(given)
    step = next(s for s in data["runs"]["steps"] if s.get("id") == "check")
    outputs = repo / "github_output"
    outputs.write_text("")
    step_env = {**env, **_inputs_env(step, inputs), "GITHUB_OUTPUT": str(outputs)}
    bash = shutil.which("bash") or "/bin/bash"
    done = subprocess.run(
        [bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=repo,
        env=step_env,
        capture_output=True,
        text=True,
        timeout=scaled(),
    )
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    return done, written


def test_action_check_step_writes_sarif_annotations_and_outputs(user_repo, shim) -> None:
    done, outputs = run_check_step(
        user_repo,
        shim,
        {"drafts": "drafts/*", "target": "models/target", "engines": "vllm sglang==0.5.23"},
    )
    assert done.returncode == 1, done.stderr
    assert outputs == {"sarif-file": "draftfit.sarif", "exit-code": "1"}
    sarif = json.loads((user_repo / "draftfit.sarif").read_text())
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    assert len(sarif["runs"]) == 2
    assert "::error file=drafts/kimi/config.json,line=" in done.stdout
    assert "drafts/llama: SGLang 0.5.23: compatible" in done.stdout


@pytest.mark.slow
def test_action_args_and_fail_on_pass_through(user_repo, shim) -> None:
    done, outputs = run_check_step(
        user_repo,
        shim,
        {
            "drafts": "drafts/kimi",
            "engines": "sglang==0.5.23",
            "args": "--ignore DF105",
            "sarif-file": "out.sarif",
        },
    )
    assert done.returncode == 0, done.stderr
    assert outputs["exit-code"] == "0" and (user_repo / "out.sarif").is_file()
    done, outputs = run_check_step(
        user_repo, shim, {"drafts": "drafts/llama", "engines": "vllm", "fail-on": "info"}
    )
    assert done.returncode == 1 and outputs["exit-code"] == "1"
    assert "::notice file=drafts/llama/config.json" in done.stdout


# ----------------------------------------------------------- what the docs tell users to copy

CI_TEXTS = ("README.md", "docs/ci.md", ".pre-commit-hooks.yaml")
COMMIT = re.compile(r"[0-9a-f]{40}")


def _yaml_blocks(path: Path) -> list[object]:
    """The fenced YAML examples of a Markdown file, parsed (the commented one of a YAML file)."""
    text = path.read_text()
    if path.suffix == ".yaml":
        comment = [line[2:] for line in text.splitlines() if line.startswith("#   ")]
        return [yaml.safe_load("\n".join(comment))]
    blocks = re.findall(r"^```yaml\n(.*?)^```$", text, flags=re.M | re.S)
    return [yaml.safe_load(block) for block in blocks]


def _walk(node: object) -> list[dict]:
    """Every mapping inside a parsed YAML document."""
    found: list[dict] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found += _walk(value)
    elif isinstance(node, list):
        for value in node:
            found += _walk(value)
    return found


def _pins() -> dict[str, list[tuple[str, str]]]:
    """Per file, every ("rev" | "uses", pinned revision) of draftfit its examples show."""
    pins: dict[str, list[tuple[str, str]]] = {}
    for name in CI_TEXTS:
        for block in _yaml_blocks(ROOT / name):
            for item in _walk(block):
                if item.get("repo", "").endswith("/draftfit/draftfit"):
                    pins.setdefault(name, []).append(("rev", str(item["rev"])))
                uses = item.get("uses", "")
                if isinstance(uses, str) and uses.startswith("draftfit/draftfit@"):
                    pins.setdefault(name, []).append(("uses", uses.partition("@")[2]))
    return pins


def test_ci_examples_pin_draftfit_to_a_commit_of_this_repository() -> None:
    pins = _pins()
    assert {kind for kind, _ in pins["README.md"]} == {"uses"}
    assert {kind for kind, _ in pins["docs/ci.md"]} == {"rev", "uses"}
    assert {kind for kind, _ in pins[".pre-commit-hooks.yaml"]} == {"rev"}
    revisions = {rev for found in pins.values() for _, rev in found}
    # No release tag exists: a tag would fail (`pathspec 'v0.1.0' did not match`).
    assert len(revisions) == 1 and all(COMMIT.fullmatch(rev) for rev in revisions), revisions
    for name in CI_TEXTS:
        assert not re.search(r"draftfit/draftfit@v\d|rev: v\d", (ROOT / name).read_text()), name
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the pinned commit cannot be looked up")
    (rev,) = revisions
    known = subprocess.run(
        [git, "-C", str(ROOT), "merge-base", "--is-ancestor", rev, "HEAD"],
        capture_output=True,
        timeout=scaled(),
    )
    assert known.returncode == 0, f"{rev} is not a commit of this repository's history"


def test_ci_examples_use_real_inputs_choices_and_hooks() -> None:
    from draftfit.verdicts import CHOICES

    data = action()
    hook_ids = {
        spec["id"] for spec in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    }
    # The Action documents every --fail-on threshold, and its default is one of them.
    description = data["inputs"]["fail-on"]["description"]
    assert [c for c in CHOICES if re.search(rf"\b{c}\b", description)] == list(CHOICES)
    assert data["inputs"]["fail-on"]["default"] in CHOICES
    ci_page = (ROOT / "docs/ci.md").read_text()
    listed = re.search(r"`fail-on` \((.*?)\)", ci_page, flags=re.S)
    assert listed and all(f"`{choice}`" in listed.group(1) for choice in CHOICES)
    seen = 0
    for name in CI_TEXTS:
        for block in _yaml_blocks(ROOT / name):
            for item in _walk(block):
                if str(item.get("uses", "")).startswith("draftfit/draftfit@"):
                    assert set(item["with"]) <= set(data["inputs"]), (name, item["with"])
                    assert item["with"].get("fail-on", "error") in CHOICES
                    seen += 1
                if str(item.get("repo", "")).endswith("/draftfit/draftfit"):
                    assert {hook["id"] for hook in item["hooks"]} <= hook_ids
                    seen += 1
    assert seen == 4
