"""A launch is read as a POSIX shell reads it: a backslash-newline outside single quotes joins
the lines (`shlex` alone keeps the newline as a word). Checked against bash itself, and
through `--serve-args` / `--serve-config` with the lines a recipe prints."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from draftfit.checker import check_path
from draftfit.engines.launch import parse_serve_args, settings_from
from draftfit.shell_text import join_continuations, split_command
from tests import factory as f

SAMPLES = [
    "vllm serve M \\\n  --trust-remote-code \\\n  --speculative-config '{\"a\": 1}'",
    "a \\\n--b x\\\ny",  # a continuation inside a word joins it
    "a \"q\\\nr\" 's\\\nt'",  # removed inside double quotes, kept inside single quotes
    'x "a\\"b\\\nc" y',  # an escaped quote does not end the double quotes
    "A=1 python -m sglang.launch_server \\\n  --tp 8 \\\n  --speculative-num-steps 3",
    "no continuation at all",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_words_are_the_words_bash_makes(text: str) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    run = subprocess.run(
        [bash, "-c", "printf '%s\\0' " + text], capture_output=True, check=True, text=True
    )
    assert split_command(text) == run.stdout.split("\0")[:-1]


def test_an_escaped_backslash_before_a_newline_is_no_continuation() -> None:
    assert join_continuations("a \\\\\nb") == "a \\\\\nb"
    assert split_command("a \\\\\nb") == ["a", "\\", "b"]


def test_a_pasted_recipe_has_no_newline_argument(tmp_path) -> None:
    """The issue this fixes: `--trust-remote-code` then ` \\`-newline was read as the switch
    followed by a `\\n` argument, which vLLM's parser refuses (DF559)."""
    launch = (
        "vllm serve t \\\n  --trust-remote-code \\\n  --speculative-config "
        '\'{"method": "eagle3", "model": "d", "num_speculative_tokens": 3}\''
    )
    settings = parse_serve_args(launch)
    assert "\n" not in settings.words and "--trust-remote-code" in settings.words
    assert (settings.method, settings.draft_model) == ("eagle3", "d")
    draft = f.speculators(aux=[2, 4, 5]).write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    report = check_path(draft, target=target, serve=settings_from(serve_args=launch))
    assert not any(x.code == "DF559" for x in report.findings), [x.message for x in report.findings]


def test_inside_single_quotes_the_continuation_stays_as_the_shell_keeps_it() -> None:
    settings = parse_serve_args(
        'vllm serve M --speculative-config \'{"method": "eagle3", \\\n "model": "D"}\''
    )
    assert settings.method is None  # vLLM's JSON parser gets the backslash too
    assert any("not valid JSON" in value for value in settings.unreadable_values)


def test_an_inline_serve_config_loses_its_continuations() -> None:
    text = '{"method": "eagle3", \\\n  "model": "D", \\\n  "num_speculative_tokens": 4}'
    settings = settings_from(serve_config=text)
    assert settings is not None
    assert (settings.method, settings.draft_model, settings.num_speculative_tokens) == (
        "eagle3",
        "D",
        4,
    )
