"""A serve recipe written as an edit of the user's own launch (`--serve-args`).

The engine writes its recipe as a fresh command (:meth:`draftfit.engines.interface.Engine.serve`).
When the user gave a launch for the same engine, the recipe is that launch with only what the
fresh command must set changed or added: the model id, tensor parallelism, ports,
`--trust-remote-code` and every other flag stay as the user wrote them. What the fresh
command sets and the launch lacks is added; a value that differs is replaced; a tuning choice
the user already made (how many tokens to draft) is kept. An engine's JSON flag (vLLM's
`--speculative-config`) is merged key by key. Each change is said, with why.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from draftfit.engines.launch import is_json_flag, launch_commands
from draftfit.engines.launch_part import EngineLaunch
from draftfit.engines.serve import CONTINUATION, shell_quote, shell_word
from draftfit.records import field, record
from draftfit.serve.reading import ASSIGNMENT, is_flag
from draftfit.shell_text import split_command

if TYPE_CHECKING:
    from typing import Any

# Flags that name the target: the launch's own target stays.
TARGET_FLAGS = frozenset({"--model", "--model-path", "--revision"})


@record
class Launch:
    """A launch split as a shell splits it: environment assignments, the command words (with
    the model), and the flags in order, each with its value (None: a flag without one)."""

    env: list[tuple[str, str]] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    flags: list[tuple[str, str | None]] = field(default_factory=list)


def split_launch(words: Sequence[str], engine: EngineLaunch) -> Launch:
    """`words` (a launch command or only its flags) as a :class:`Launch` for the engine
    whose launch part is `engine`."""
    launch = Launch()
    rest = [w for w in words if w != "\\"]
    if rest[:1] == ["env"]:
        rest = rest[1:]
    while rest and ASSIGNMENT.match(rest[0]):
        name, value = rest.pop(0).split("=", 1)
        launch.env.append((name, value))
    booleans = engine.booleans
    index = 0
    while index < len(rest) and not rest[index].startswith("-"):
        index += 1
    if rest[index : index + 1] == ["-m"]:
        index += 2  # `python -m sglang.launch_server`, `python -m vllm.entrypoints...`
        while index < len(rest) and not rest[index].startswith("-"):
            index += 1
    launch.command = rest[:index]
    while index < len(rest):
        word = rest[index]
        index += 1
        if "=" in word and word.startswith("--"):
            flag, value = word.split("=", 1)
            launch.flags.append((flag, value))
            continue
        takes = word not in booleans and index < len(rest) and not is_flag(rest[index])
        launch.flags.append((word, rest[index] if takes else None))
        index += 1 if takes else 0
    return launch


def _names_target(launch: Launch, engine: EngineLaunch) -> bool:
    """Whether the launch names its own target (a model after the command, `--model`,
    `--model-path`): then the target, and its revision, stay as the launch gives them."""
    if any(engine.same_flag(flag, name) for flag, _ in launch.flags for name in TARGET_FLAGS):
        return True
    words = launch.command
    return len(words) >= 3 and words[-2:] != ["-m", words[-1]] and words[0] != "python"


def has_command(launch: Launch) -> bool:
    """Whether the launch starts with an engine's command (not only flags)."""
    words = tuple(launch.command)
    return any(
        tuple(words[i : i + len(command)]) == command
        for command in launch_commands()
        for i in range(len(words))
    )


def edit_launch(
    user_words: Sequence[str], fresh_command: str, engine: EngineLaunch
) -> tuple[str, list[str]]:
    """The user's launch with what `fresh_command` (the engine's recipe) must set, as one
    shell command, and what was changed or added; `engine` is the engine's launch part (its
    flags, its JSON flag, the tuning choices it keeps)."""
    user = split_launch(user_words, engine)
    fresh = split_launch(split_command(fresh_command), engine)
    changes: list[str] = []
    env = list(user.env)
    for name, value in fresh.env:
        at = next((i for i, (n, _) in enumerate(env) if n == name), None)
        if at is None:
            env.append((name, value))
            changes.append(f"added {name}={value}")
        elif env[at][1] != value:
            changes.append(f"changed {name} from {env[at][1]} to {value}")
            env[at] = (name, value)
    flags = list(user.flags)
    for flag, wanted in fresh.flags:
        if flag in TARGET_FLAGS and _names_target(user, engine):
            continue
        at = next((i for i, (f, _) in enumerate(flags) if engine.same_flag(f, flag)), None)
        if at is None:
            flags.append((flag, wanted))
            changes.append(f"added {flag}" + (f" {wanted}" if wanted is not None else ""))
            continue
        given = flags[at][1]
        if engine.json_flag is not None and engine.normalised(flag) == engine.json_flag:
            merged, said = _merge_config(engine, given, wanted)
            flags[at] = (flags[at][0], merged)
            changes += said
        elif given != wanted and flag not in engine.tuning:
            flags[at] = (flags[at][0], wanted)
            changes.append(f"changed {flags[at][0]} from {given} to {wanted}")
    command = user.command if has_command(user) else fresh.command
    return _join(env, command, flags), changes


def _merge_config(
    engine: EngineLaunch, given: str | None, wanted: str | None
) -> tuple[str | None, list[str]]:
    """The engine's JSON flag (vLLM's `--speculative-config`): the user's keys, with the
    recipe's set where they must change (method, model, revision); the user's tuning
    choices (the token count) kept."""
    flag = engine.json_flag
    try:
        mine: Any = json.loads(given or "{}")
        theirs: Any = json.loads(wanted or "{}")
    except ValueError:
        return wanted, [f"replaced {flag}, which is not JSON"]
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return wanted, [f"replaced {flag}, which is not a JSON object"]
    said = []
    for key, value in theirs.items():
        if key in mine and key in engine.tuning:
            continue
        if key not in mine:
            said.append(f"added {flag} {key} {json.dumps(value)}")
        elif mine[key] != value:
            said.append(f"changed {flag} {key} from {json.dumps(mine[key])} to {json.dumps(value)}")
        mine[key] = value
    return json.dumps(mine), said


def _join(
    env: list[tuple[str, str]], command: list[str], flags: list[tuple[str, str | None]]
) -> str:
    first = [f"{name}={shell_word(value)}" for name, value in env]
    first += [shell_word(word) for word in command]
    lines = [" ".join(first)]
    for flag, value in flags:
        if value is None:
            lines.append(shell_word(flag))
        elif is_json_flag(flag) or value.startswith("{"):
            lines.append(f"{shell_word(flag)} {shell_quote(value)}")
        else:
            lines.append(f"{shell_word(flag)} {shell_word(value)}")
    return CONTINUATION.join(lines)
