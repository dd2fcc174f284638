"""Read serving settings from what users already have: a vLLM config or a launch command.

`--serve-config FILE|JSON` takes vLLM's `--speculative-config` JSON alone, or a mapping of
vLLM engine arguments (as `vllm serve --config file.yaml` takes them: dashes or
underscores, `speculative_config` nested or as a JSON string), inline or from a JSON/YAML
file. `--serve-args "..."` takes a launch command or its flags, split as a POSIX shell
would (:mod:`shlex`); `NAME=value` assignments before the command are read as the
engine's environment variables where draftfit knows the name, else listed as not read.
The engine is recognised from the command, else from its flags, and each engine's own
flag names and aliases are read (:mod:`draftfit.serve.flags`). Flags draftfit does not
read are kept in `ignored_flags`; a malformed value is a
:class:`~draftfit.errors.UsageError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from draftfit.checkpoint.access import read_regular
from draftfit.checkpoint.jsonread import JsonLimitError, JsonSyntaxError, parse_json
from draftfit.errors import UsageError
from draftfit.serve.flags import (
    BOOLEAN_FLAGS,
    COMMAND_ENGINES,
    ENGINE_ENV_VARS,
    ENGINE_FLAGS,
    ENGINE_HINT_FLAGS,
    KNOWN_FLAGS,
    SPEC_CONFIG_KEYS,
    TRTLLM_ARG_KEYS,
    TRTLLM_SPEC_KEYS,
    VLLM_ARG_KEYS,
    FlagTarget,
    vllm_flag,
)
from draftfit.serve.settings import ServeSettings
from draftfit.settings_text import (
    MAX_SETTINGS_BYTES,
    clip,
    decode_utf8,
    load_yaml,
    shown,
)


def settings_from(
    serve_config: str | None = None,
    serve_args: str | None = None,
    roots: Sequence[str | Path] = (),
) -> ServeSettings | None:
    """The settings from `--serve-config` and/or `--serve-args` (None when neither is given).

    Both may describe one vLLM launch: the config's values then complete the command's.
    `roots` (the draft and target folders) are where, besides the current folder, a
    settings file reached through a symlink may lie.
    """
    from_args = _serve_args(serve_args, roots) if serve_args is not None else None
    from_config = _serve_config(serve_config, roots) if serve_config is not None else None
    if from_args is None or from_config is None:
        given = from_args or from_config
        return _listed(given) if given is not None else None
    if from_args.engine != from_config.engine:
        raise UsageError(
            f"--serve-args is a {from_args.engine} launch but --serve-config holds "
            f"{from_config.engine} settings; give the settings of one launch"
        )
    merged = {
        name: value
        for name, value in from_config.given().items()
        if getattr(from_args, name) is None or name in SPEC_CONFIG_FIELDS
    }
    return _listed(
        replace(
            from_args,
            given_by="--serve-args and --serve-config",
            ignored_flags=from_args.ignored_flags + from_config.ignored_flags,
            spec_keys_written=from_args.spec_keys_written + from_config.spec_keys_written,
            **merged,
        )
    )


# ----------------------------------------------------------------------------- --serve-config

# A launch's settings file: the cap of every settings document.
MAX_SERVE_CONFIG_BYTES = MAX_SETTINGS_BYTES

# Settings only a speculative config gives (they win when both inputs give them).
SPEC_CONFIG_FIELDS = frozenset(
    target.field for target in (*SPEC_CONFIG_KEYS.values(), *TRTLLM_SPEC_KEYS.values())
)


def parse_serve_config(text: str, roots: Sequence[str | Path] = ()) -> ServeSettings:
    """vLLM or TensorRT-LLM settings from a JSON string or a JSON/YAML file (see the module
    docstring); `roots` as for :func:`settings_from`."""
    return _listed(_serve_config(text, roots))


def _serve_config(text: str, roots: Sequence[str | Path]) -> ServeSettings:
    data = _load_mapping(text, roots)
    if is_trtllm_options(data):
        return trtllm_options(data, ServeSettings("trtllm", "--serve-config"), "")
    keys = {_key(k) for k in data}
    # Keys both forms have (quantization, attention_backend, kv_cache_dtype) decide nothing.
    shared = set(VLLM_ARG_KEYS) & set(SPEC_CONFIG_KEYS)
    if "speculative_config" in keys or keys & (set(VLLM_ARG_KEYS) - shared):
        return _vllm_engine_args(data, "--serve-config")
    if keys & (set(SPEC_CONFIG_KEYS) - shared):
        return _vllm_speculative_config(data, "--serve-config", "", [])
    return _vllm_engine_args(data, "--serve-config")


def _load_mapping(text: str, roots: Sequence[str | Path]) -> Mapping[str, Any]:
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        return _json_object(stripped, "--serve-config")
    return _load_file(
        text, f"--serve-config {clip(text)}", "give a file or an inline JSON object", roots
    )


def _load_file(
    name: str, what: str, hint: str, roots: Sequence[str | Path] = ()
) -> Mapping[str, Any]:
    """The mapping in the JSON/YAML file `name`, read bounded (a regular file, at most
    MAX_SERVE_CONFIG_BYTES, reached through a symlink only inside the current folder, the
    draft or the target: see :func:`_refuse_foreign_link`); `what` names it in errors."""
    path = Path(name)
    _refuse_foreign_link(path, what, roots)
    try:
        data = read_regular(path, MAX_SERVE_CONFIG_BYTES)
    except FileNotFoundError:
        raise UsageError(f"{what}: no such file ({hint})") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{what}: cannot read it ({exc})") from None
    body = decode_utf8(data, what)
    if path.suffix.lower() == ".json" or body.lstrip().startswith("{"):
        return _json_object(body, what)
    return _yaml_object(body, what)


def _refuse_foreign_link(path: Path, what: str, roots: Sequence[str | Path]) -> None:
    """Refuse a settings file reached through a symlink (the file or a folder on its
    path) that ends outside the current folder's tree, the draft and the target: a
    symlink committed next to a launch's settings must not make draftfit read (and quote)
    a file elsewhere on the machine, such as `/etc/shadow`."""
    steps = [path, *path.parents] if path.is_absolute() else [path, *path.parents][:-1]
    if not any(step.is_symlink() for step in steps):
        return
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return  # a dangling link or a loop: reading it reports the error
    allowed = [Path.cwd(), *(Path(root) for root in roots if not _is_hub(root))]
    for root in allowed:
        try:
            if real.is_relative_to(root.resolve()):
                return
        except (OSError, RuntimeError):
            continue
    raise UsageError(
        f"{what}: a symlink to a file outside the current folder, the draft and the target; "
        "give the file itself"
    )


def _is_hub(root: str | Path) -> bool:
    text = str(root)
    return text.startswith("hf://") or (not Path(text).exists() and text.count("/") == 1)


def _json_object(text: str, what: str) -> Mapping[str, Any]:
    try:
        data = parse_json(text.encode("utf-8", "surrogatepass")).value
    except JsonSyntaxError as exc:
        raise UsageError(f"{what}: not valid JSON ({clip(exc.detail, 160)})") from None
    except JsonLimitError as exc:
        raise UsageError(f"{what}: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


def _yaml_object(text: str, what: str) -> Mapping[str, Any]:
    data = load_yaml(text, what)
    if not isinstance(data, dict):
        raise UsageError(f"{what}: expected a mapping of settings, got {type(data).__name__}")
    return data


def _key(name: object) -> str:
    return str(name).replace("-", "_")


def _vllm_engine_args(data: Mapping[str, Any], given_by: str) -> ServeSettings:
    values: dict[str, Any] = {}
    ignored: list[str] = []
    speculative: Mapping[str, Any] | None = None
    for raw_key, value in data.items():
        key = _key(raw_key)
        if key == "speculative_config":
            speculative = (
                _json_object(value, f"{given_by}: speculative_config")
                if isinstance(value, str)
                else value
            )
            if not isinstance(speculative, Mapping):
                raise UsageError(f"{given_by}: speculative_config must be a mapping")
            continue
        target = VLLM_ARG_KEYS.get(key)
        if target is None:
            ignored.append(str(raw_key))
            continue
        values[target.field] = _value(target, value, f"{given_by}: {raw_key}")
    settings = ServeSettings(
        "vllm", given_by, **values, ignored_flags=tuple(ignored), full_launch=True
    )
    if speculative is None:
        return settings
    return _vllm_speculative_config(speculative, given_by, "speculative_config", [], settings)


def _vllm_speculative_config(
    data: Mapping[str, Any],
    given_by: str,
    what: str,
    ignored: list[str],
    base: ServeSettings | None = None,
) -> ServeSettings:
    values: dict[str, Any] = {}
    start = base or ServeSettings("vllm", given_by)
    keys = start.spec_keys_written + tuple(str(k) for k in data)
    for raw_key, value in data.items():
        target = SPEC_CONFIG_KEYS.get(_key(raw_key))
        if target is None:
            ignored.append(f"{what}.{raw_key}" if what else str(raw_key))
            continue
        values[target.field] = _value(target, value, f"{what or given_by}.{raw_key}")
    return replace(
        start,
        **values,
        ignored_flags=start.ignored_flags + tuple(ignored),
        spec_keys_written=keys,
    )


def is_trtllm_options(data: Mapping[str, Any]) -> bool:
    """Whether `data` is TensorRT-LLM's LLM API options (`speculative_config.decoding_type`),
    or its speculative config alone (`decoding_type`): a key neither vLLM nor SGLang has."""
    speculative = data.get("speculative_config")
    return (isinstance(speculative, Mapping) and "decoding_type" in speculative) or (
        "decoding_type" in data
    )


def trtllm_options(data: Mapping[str, Any], base: ServeSettings, what: str) -> ServeSettings:
    """`base` with TensorRT-LLM's LLM API options `data` applied (they overwrite the flags, as
    `trtllm-serve` does); `what` names the file in errors ("" for --serve-config)."""
    label = what or base.given_by
    values: dict[str, Any] = {}
    ignored: list[str] = []
    speculative: Any = None
    if "decoding_type" in data and "speculative_config" not in data:
        speculative, data = data, {}  # the speculative config alone
    for raw_key, value in data.items():
        key = str(raw_key)
        if key == "speculative_config":
            speculative = value
            continue
        target = TRTLLM_ARG_KEYS.get(key)
        if target is None:
            ignored.append(key)
            continue
        values[target.field] = _value(target, value, f"{label}: {key}")
    if speculative is not None and not isinstance(speculative, Mapping):
        raise UsageError(f"{label}: speculative_config must be a mapping")
    for raw_key, value in (speculative or {}).items():
        target = TRTLLM_SPEC_KEYS.get(str(raw_key))
        if target is None:
            ignored.append(f"speculative_config.{raw_key}")
            continue
        values[target.field] = _value(target, value, f"{label}: speculative_config.{raw_key}")
        if target.field == "draft_model":
            values["draft_path_key"] = str(raw_key)
    return replace(base, **values, ignored_flags=base.ignored_flags + tuple(ignored))


def _value(target: FlagTarget, value: Any, what: str) -> Any:
    """`value` as the field's type; a malformed one is a usage error."""
    if target.kind == "int":
        return _integer(value, what)
    if target.kind == "int-list":
        return _int_list(value, what)
    if target.kind == "off-when-true":  # --enforce-eager: CUDA graphs off
        return not _boolean(value, what)
    if target.kind == "on-when-true":
        return _boolean(value, what)
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise UsageError(f"{what}: expected a single value, got {shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):  # JSON 1e999, YAML .inf
        raise UsageError(f"{what}: expected a name or a number, got {shown(value)}")
    return str(value)


def _integer(value: Any, what: str) -> int:
    """A positive integer as written (`4`, `4.0`, `"4"`); anything else (a fraction, a
    string that is not a number, an infinite or 100k-digit number) is a usage error."""
    if isinstance(value, bool):
        raise UsageError(f"{what}: expected an integer, got {shown(value)}")
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{what}: expected an integer, got {shown(value)}") from None
    if isinstance(value, float) and value != number:
        raise UsageError(f"{what}: expected an integer, got {shown(value)}")
    if number < 1:
        raise UsageError(f"{what}: expected a positive integer, got {shown(value)}")
    return number


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    """A list of layer ids (integers, -1 allowed), as written."""
    if not isinstance(value, (list, tuple)) or not value:
        raise UsageError(f"{what}: expected a non-empty list of layer ids, got {shown(value)}")
    bad = [item for item in value if isinstance(item, bool) or not isinstance(item, int)]
    if bad:
        raise UsageError(f"{what}: expected integer layer ids, got {shown(bad[0])}")
    return tuple(value)


def _boolean(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, (str, int, float)) else ""
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise UsageError(f"{what}: expected true or false, got {shown(value)}")


# Keys and flags listed as not read: only what looks like a setting's name (a file that is
# not settings at all must not be echoed), at most MAX_LISTED, each cut at SHOWN_CHARS.
_SETTING_NAME = re.compile(r"-{0,2}[A-Za-z_][A-Za-z0-9_.-]*")
MAX_LISTED = 20


def _listed(settings: ServeSettings) -> ServeSettings:
    """`settings` with its not-read keys reduced to what may be shown (see _SETTING_NAME)."""
    names = [name for name in settings.ignored_flags if _SETTING_NAME.fullmatch(name)]
    shown_names = [clip(name) for name in names[:MAX_LISTED]]
    left_out = len(settings.ignored_flags) - len(shown_names)
    if left_out:
        shown_names.append(f"({left_out} more not shown)")
    return replace(settings, ignored_flags=tuple(shown_names))


# ------------------------------------------------------------------------------ --serve-args


def parse_serve_args(text: str, roots: Sequence[str | Path] = ()) -> ServeSettings:
    """Settings from a launch command or its flags (see the module docstring); `roots` as
    for :func:`settings_from`."""
    return _listed(_serve_args(text, roots))


def _serve_args(text: str, roots: Sequence[str | Path]) -> ServeSettings:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(
            f"--serve-args: not UTF-8 text (\\u{ord(text[exc.start]):04x} at {exc.start})"
        ) from None
    try:
        import shlex  # here, not at import: only a launch command is split

        words = shlex.split(text, comments=False)
    except ValueError as exc:
        raise UsageError(f"--serve-args: cannot split it as a shell would ({exc})") from None
    words = [w for w in words if w != "\\"]
    words_given = list(words)
    assignments, words = _leading_assignments(words)
    engine, rest = _engine_of(words)
    table = ENGINE_FLAGS[engine]
    booleans = BOOLEAN_FLAGS[engine]
    values: dict[str, Any] = {}
    ignored: list[str] = []
    written: list[str] = []
    for name, text_value in assignments:
        env_target = ENGINE_ENV_VARS[engine].get(name)
        if env_target is None or not text_value:
            ignored.append(name)
            continue
        values[env_target.field] = _value(env_target, text_value, f"--serve-args: {name}")
    speculative: Mapping[str, Any] | None = None
    options: tuple[str, str] | None = None  # trtllm-serve --extra_llm_api_options FILE
    config_file: str | None = None  # vllm serve --config FILE
    index = 0
    while index < len(rest):
        word = rest[index]
        index += 1
        if not word.startswith("-") or word == "-":
            continue  # the model, or a value of a flag not read
        flag, inline = word.split("=", 1) if "=" in word else (word, None)
        if engine == "vllm":
            flag = vllm_flag(flag)
        written.append(flag)
        flag = _unabbreviated(engine, flag)
        if flag in KNOWN_FLAGS[engine]:
            if flag not in booleans and inline is None and index < len(rest):
                index += 0 if _is_flag(rest[index]) else 1
            continue
        target = table.get(flag)
        if target is None and flag.startswith("--speculative-config."):
            target = SPEC_CONFIG_KEYS.get(flag.split(".", 1)[1])
        takes_value = flag not in booleans
        value: str | None = inline
        if takes_value and value is None:
            if index < len(rest) and not _is_flag(rest[index]):
                value = rest[index]
                index += 1
            elif target is not None:
                raise UsageError(f"--serve-args: {flag} needs a value")
        if engine == "vllm" and flag == "--config" and value:
            config_file = value  # engine arguments as YAML, read below
            continue
        if target is None:
            ignored.append(flag)
            continue
        what = f"--serve-args: {flag}"
        if target.kind == "yaml-file":
            options = (flag, value or "")
            continue
        if target.field == "speculative_config":
            speculative = {**(speculative or {}), **_json_object(value or "", what)}
            continue
        values[target.field] = _value(target, True if value is None else value, what)
    settings = ServeSettings(
        engine,
        "--serve-args",
        **values,
        ignored_flags=tuple(ignored),
        flags_written=tuple(written),
        full_launch=len(rest) < len(words) and engine in ("vllm", "sglang"),
        words=tuple(words_given),
    )
    if config_file is not None:
        settings = _with_config_file(settings, config_file, speculative is not None, roots)
    if options is not None:
        what = f"--serve-args: {options[0]} {clip(options[1])}"
        data = _load_file(options[1], what, "the path is read from the current directory", roots)
        return trtllm_options(data, settings, what)
    if speculative is None:
        return settings
    return _vllm_speculative_config(
        speculative, "--serve-args", "--speculative-config", [], settings
    )


def _with_config_file(
    settings: ServeSettings, name: str, speculative_given: bool, roots: Sequence[str | Path]
) -> ServeSettings:
    """`settings` of a `vllm serve … --config FILE` launch completed by the file's engine
    arguments (YAML, read as `--serve-config` reads them). The command line wins: vLLM puts
    the file's arguments before the command line's, so a flag given on both takes the
    command line's value, and a `--speculative-config` on the command line replaces the
    file's whole speculative config."""
    what = f"--serve-args: --config {clip(name)}"
    data = _load_file(name, what, "the path is read from the current directory", roots)
    from_file = _vllm_engine_args(data, "--serve-args --config")
    replaced = speculative_given or any(
        flag.startswith("--speculative-config.") for flag in settings.flags_written
    )
    merged = {
        field: value
        for field, value in from_file.given().items()
        if getattr(settings, field) is None and not (replaced and field in SPEC_CONFIG_FIELDS)
    }
    spec_keys = () if replaced else from_file.spec_keys_written
    return replace(
        settings,
        ignored_flags=settings.ignored_flags + from_file.ignored_flags,
        spec_keys_written=settings.spec_keys_written + spec_keys,
        **merged,
    )


def _unabbreviated(engine: str, flag: str) -> str:
    """`flag` as the one flag draftfit reads that it abbreviates (argparse takes a unique
    prefix of a long flag: `--speculative-algo` is `--speculative-algorithm`), else as
    written. Whether the release's parser takes the abbreviation (another flag of its may
    share the prefix) is judged per release (DF559)."""
    if engine not in ("vllm", "sglang") or not flag.startswith("--") or "." in flag:
        return flag
    names = [*ENGINE_FLAGS[engine], *KNOWN_FLAGS[engine], *BOOLEAN_FLAGS[engine]]
    if flag in names:
        return flag
    matches = {name for name in names if name.startswith(flag)}
    return matches.pop() if len(matches) == 1 else flag


# A shell variable assignment (`NAME=value`) before the command.
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _leading_assignments(words: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """The `NAME=value` words before the command (after an optional `env`), and the rest."""
    start = 1 if words[:1] == ["env"] else 0
    index = start
    found: list[tuple[str, str]] = []
    while index < len(words) and _ASSIGNMENT.match(words[index]):
        name, value = words[index].split("=", 1)
        found.append((name, value))
        index += 1
    if not found:
        return [], words
    return found, words[index:]


def _is_flag(word: str) -> bool:
    if not word.startswith("-") or word == "-":
        return False
    try:
        float(word)  # a negative number is a value
    except ValueError:
        return True
    return False


def _engine_of(words: list[str]) -> tuple[str, list[str]]:
    """The engine the launch is for, and the words after the command (all the words when
    only the flags were given and one engine's own flags name it)."""
    for index in range(len(words)):
        if words[index].startswith("--"):
            break
        for command, engine in COMMAND_ENGINES:
            if tuple(words[index : index + len(command)]) == command:
                return engine, words[index + len(command) :]
    named = {w.split("=", 1)[0] for w in words}
    found = {engine for engine, hints in ENGINE_HINT_FLAGS.items() if named & hints}
    if len(found) == 1:
        return found.pop(), words
    raise UsageError(
        "--serve-args: cannot tell the engine; start with the command (`vllm serve`, "
        "`python -m sglang.launch_server`, `trtllm-serve`)"
    )
