"""Every rule's page in docs/rules is what the rule objects say, and the CLI names its URL."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from draftfit.cli.main import main
from draftfit.commands.rule_docs import pages
from draftfit.docs_links import DOCS_BASE_URL, rule_doc_path, rule_doc_url
from draftfit.rules import all_rules
from tests.timeouts import scaled

ROOT = Path(__file__).resolve().parents[1]


def test_checked_in_pages_match_a_regeneration() -> None:
    wanted = pages()
    stale = [path for path, text in wanted.items() if (ROOT / path).read_text() != text]
    assert stale == [], "run `PYTHONPATH=src python dev/gen_rule_docs.py`"
    on_disk = {str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "rules").glob("*.md")}
    assert on_disk == set(wanted)


def test_every_rule_has_a_page_and_the_generator_check_agrees(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for item in all_rules():
        assert rule_doc_path(item.code) in pages()
    # In this process (its modules are imported already); the script itself runs as a user
    # runs it in the slow test below.
    spec = importlib.util.spec_from_file_location(
        "gen_rule_docs", ROOT / "dev" / "gen_rule_docs.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert generator.main(["--check", "--root", str(ROOT)]) == 0, capsys.readouterr().out


@pytest.mark.slow
def test_generator_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    for path, text in pages().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    (tmp_path / rule_doc_path("DF301")).write_text("edited by hand\n")
    (tmp_path / rule_doc_path("DF999")).write_text("a rule that does not exist\n")
    argv = [sys.executable, str(ROOT / "dev" / "gen_rule_docs.py"), "--root", str(tmp_path)]
    env = {"PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [*argv, "--check"], env=env, capture_output=True, text=True, timeout=scaled()
    )
    assert done.returncode == 1
    assert "docs/rules/DF301.md" in done.stdout and "docs/rules/DF999.md" in done.stdout
    subprocess.run(argv, env=env, check=True, capture_output=True, timeout=scaled())
    assert (
        subprocess.run(
            [*argv, "--check"], env=env, capture_output=True, timeout=scaled()
        ).returncode
        == 0
    )
    assert not (tmp_path / rule_doc_path("DF999")).exists()


def test_rule_command_names_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "DF301"]) == 0
    out = capsys.readouterr().out
    assert f"docs: {DOCS_BASE_URL}/DF301.md" in out.splitlines()
    assert main(["rule", "DF301", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["docs_url"] == rule_doc_url("DF301")
    assert rule_doc_url("DF301").endswith("/" + rule_doc_path("DF301"))


def test_rule_docstrings_are_cleaned_as_inspect_cleans_them() -> None:
    import inspect

    from draftfit.rules.base import RULES, clean_docstring

    assert len(RULES) > 100
    for rule in RULES.values():
        doc = rule.check.__doc__ or ""
        assert rule.doc == inspect.cleandoc(doc) == clean_docstring(doc), rule.code
    for doc in ("", "  one", "\n\n  a\n   b\n\n", "a\n\tb\n  c", "x\n  \n  y  \n"):
        assert clean_docstring(doc) == inspect.cleandoc(doc), repr(doc)
