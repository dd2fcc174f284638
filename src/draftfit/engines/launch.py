"""Read serving settings from what users already have: an engine's settings file or a
launch command.

`--serve-config FILE|JSON` takes a mapping of settings, inline (JSON) or from a JSON/YAML
file; each engine's launch part scores the mapping and the highest score reads it
(TensorRT-LLM's `decoding_type` beats vLLM's fallback: vLLM's `--speculative-config` JSON
alone, or its engine arguments as `vllm serve --config file.yaml` takes them).
`--serve-args "..."` takes a launch command or its flags, split as a POSIX shell would
(:mod:`draftfit.shell_text`: a ` \\`-newline continuation joins the lines); `NAME=value`
assignments before the command are read as the engine's environment variables where
draftfit knows the name, else listed as not read. The engine is
recognised from the command, else from its flags, and each engine's own flag names and
aliases are read (its launch part: :class:`~draftfit.engines.launch_part.EngineLaunch`,
from :meth:`draftfit.engines.interface.Engine.launch`). Flags draftfit does not read are
kept in `ignored_flags`; a malformed value is a :class:`~draftfit.errors.UsageError`.
"""

from __future__ import annotations

from functools import lru_cache

from draftfit.engines.launch_part import EngineLaunch
from draftfit.engines.registry import ENGINES
from draftfit.errors import UsageError
from draftfit.escape import clip
from draftfit.records import replace
from draftfit.serve.reading import (
    MAX_SERVE_CONFIG_BYTES,
    json_object,
    leading_assignments,
    listed,
    load_file,
)
from draftfit.serve.settings import ServeSettings, dashed_flag
from draftfit.shell_text import split_command

__all__ = [
    "MAX_SERVE_CONFIG_BYTES",
    "engine_launches",
    "launch_commands",
    "parse_serve_args",
    "parse_serve_config",
    "settings_from",
]


def engine_launches() -> list[EngineLaunch]:
    """The launch part of every registered engine that has one, in registry order."""
    parts = (engine.launch() for engine in ENGINES)
    return [part for part in parts if part is not None]


def launch_part(engine: str) -> EngineLaunch:
    """The launch part of the engine called `engine`."""
    found = next((part for part in engine_launches() if part.engine == engine), None)
    if found is None:
        raise UsageError(f"draftfit reads no launch of {engine}")
    return found


def launch_commands() -> tuple[tuple[str, ...], ...]:
    """Every registered engine's launch commands, as the words a shell gives."""
    return tuple(command for part in engine_launches() for command in part.commands)


def is_json_flag(flag: str) -> bool:
    """Whether `flag` (underscores read as dashes) is an engine's JSON flag."""
    return dashed_flag(flag) in {part.json_flag for part in engine_launches() if part.json_flag}


def settings_from(
    serve_config: str | None = None,
    serve_args: str | None = None,
) -> ServeSettings | None:
    """The settings from `--serve-config` and/or `--serve-args` (None when neither is given).

    Both may describe one launch: the config's values then complete the command's.
    A settings file is read only by its own path (no link leads it elsewhere).
    """
    from_args = _serve_args(serve_args) if serve_args is not None else None
    from_config = _serve_config(serve_config) if serve_config is not None else None
    if from_args is None or from_config is None:
        given = from_args or from_config
        return listed(given) if given is not None else None
    if from_args.engine != from_config.engine:
        raise UsageError(
            f"--serve-args is a {from_args.engine} launch but --serve-config holds "
            f"{from_config.engine} settings; give the settings of one launch"
        )
    speculative = launch_part(from_args.engine).speculative_fields
    merged = {
        name: value
        for name, value in from_config.given().items()
        if getattr(from_args, name) is None or name in speculative
    }
    return listed(
        replace(
            from_args,
            given_by="--serve-args and --serve-config",
            ignored_flags=from_args.ignored_flags + from_config.ignored_flags,
            spec_keys_written=from_args.spec_keys_written + from_config.spec_keys_written,
            **merged,
        )
    )


# ----------------------------------------------------------------------------- --serve-config


def parse_serve_config(text: str) -> ServeSettings:
    """An engine's settings from a JSON string or a JSON/YAML file (see the module
    docstring)."""
    return listed(_serve_config(text))


def _serve_config(text: str) -> ServeSettings:
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        # A line continuation pasted with it is removed, as the shell removes one (no JSON
        # holds a backslash before a line break, inside a string or out).
        data = json_object(stripped.replace("\\\n", ""), "--serve-config")
    else:
        data = load_file(
            text, f"--serve-config {clip(text)}", "give a file or an inline JSON object"
        )
    scored = [(part.config_score(data), part) for part in engine_launches()]
    best = max((score for score, _ in scored), default=0)
    if best <= 0:
        raise UsageError("--serve-config: the settings of no engine draftfit reads")
    part = next(part for score, part in scored if score == best)
    return part.read_config(data, "--serve-config")


# ------------------------------------------------------------------------------ --serve-args


def parse_serve_args(text: str) -> ServeSettings:
    """Settings from a launch command or its flags (see the module docstring)."""
    return listed(_serve_args(text))


@lru_cache(maxsize=64)
def _split(text: str) -> tuple[str, ...]:
    """`text` split as a POSIX shell would (a ` \\`-newline continuation joins the lines);
    a `matrix` re-reads one recipe per release, and the releases of an engine share a
    handful of command lines, so each is split once."""
    try:
        return tuple(split_command(text))
    except ValueError as exc:
        raise UsageError(f"--serve-args: cannot split it as a shell would ({exc})") from None


def _serve_args(text: str) -> ServeSettings:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(
            f"--serve-args: not UTF-8 text (\\u{ord(text[exc.start]):04x} at {exc.start})"
        ) from None
    words = [w for w in _split(text) if w != "\\"]
    words_given = list(words)
    assignments, words = leading_assignments(words)
    part, rest = _launch_of(words)
    return part.read_args(words_given, words, assignments, rest)


def _launch_of(words: list[str]) -> tuple[EngineLaunch, list[str]]:
    """The launch part of the engine the launch is for, and the words after the command
    (all the words when only the flags were given and one engine's own flags name it)."""
    parts = engine_launches()
    for index in range(len(words)):
        if words[index].startswith("--"):
            break
        for part in parts:
            command = part.command_at(words, index)
            if command is not None:
                return part, words[index + len(command) :]
    named = {w.split("=", 1)[0] for w in words}
    found = [part for part in parts if named & part.hint_flags]
    if len(found) == 1:
        return found[0], words
    commands = ", ".join(f"`{part.shown_command}`" for part in parts)
    raise UsageError(f"--serve-args: cannot tell the engine; start with the command ({commands})")
