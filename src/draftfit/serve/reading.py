"""What every engine's launch reader shares, engine-neutral: where a flag's value goes
(:class:`FlagTarget`), how a value is read as its setting's type, the bounded loading of a
settings file (JSON or YAML, through :mod:`draftfit.settings_text`), the splitting of the
environment assignments before a command, and the listing of flags not read.

Each engine's launch part (:class:`draftfit.engines.launch_part.EngineLaunch`, in the
engine's folder) says which flags, keys and environment variables it reads;
:mod:`draftfit.engines.launch` finds the engine of a launch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.checkpoint.access import read_regular
from draftfit.checkpoint.jsonread import JsonLimitError, JsonSyntaxError, parse_json
from draftfit.errors import UsageError
from draftfit.escape import clip
from draftfit.records import frozen, replace
from draftfit.serve.settings import ServeSettings
from draftfit.settings_text import MAX_SETTINGS_BYTES, decode_utf8, load_yaml, shown

if TYPE_CHECKING:
    from typing import Any


@frozen
class FlagTarget:
    """Where a flag's value goes: a :class:`~draftfit.serve.settings.ServeSettings` field and
    how to read it (`int`, `int-list`, `str`, `off-when-true` for a flag that turns CUDA
    graphs off, `on-when-true`, `json` for a JSON flag whose keys are read, `yaml-file` for a
    file of settings the launch names)."""

    field: str
    kind: str = "str"


INT = "int"
# An integer of any sign, kept as written: the engine's own check of it is modelled (a
# count it refuses below 1 is a finding, not a malformed launch).
ANY_INT = "any-int"
# An integer from 0 up (the engine takes 0).
INT_FROM_ZERO = "int-from-zero"
# A length as vLLM's argument parser reads it (`human_readable_int_or_auto`): `4096`,
# `25.6k` (x1000), `32K` (x1024, whole numbers only), `1m`/`1M`, `1g`/`1G`; `-1` and `auto`
# ask the engine to fit the length to memory (kept as -1).
HUMAN_INT = "human-int"
# A switch read from the environment as vLLM's envs.py reads one: on for `1` or `true` (any
# case, spaces around ignored), off for anything else.
ENV_ONE_OR_TRUE = "env-one-or-true"
# Settings every engine has, under its own flag names.
TENSOR_PARALLEL = FlagTarget("tensor_parallel_size", INT)
PIPELINE_PARALLEL = FlagTarget("pipeline_parallel_size", INT)
KV_CACHE_DTYPE = FlagTarget("kv_cache_dtype")
QUANTIZATION = FlagTarget("quantization")
ATTENTION_BACKEND = FlagTarget("attention_backend")
EAGER = FlagTarget("cuda_graphs", "off-when-true")

# A launch's settings file: the cap of every settings document.
MAX_SERVE_CONFIG_BYTES = MAX_SETTINGS_BYTES


# ----------------------------------------------------------------------------- values


def read_value(target: FlagTarget, value: Any, what: str) -> Any:
    """`value` as the field's type; a malformed one is a usage error."""
    if target.kind == INT:
        return _integer(value, what)
    if target.kind == ANY_INT:
        return _integer(value, what, minimum=None)
    if target.kind == INT_FROM_ZERO:
        return _integer(value, what, minimum=0)
    if target.kind == HUMAN_INT:
        return _human_int(value, what)
    if target.kind == ENV_ONE_OR_TRUE:
        return str(value).strip().lower() in ("1", "true")
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


def _integer(value: Any, what: str, minimum: int | None = 1) -> int:
    """An integer as written (`4`, `4.0`, `"4"`) of at least `minimum` (None: any);
    anything else (a fraction, a string that is not a number, an infinite or 100k-digit
    number, one below `minimum`) is a usage error."""
    if isinstance(value, bool):
        raise UsageError(f"{what}: expected an integer, got {shown(value)}")
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{what}: expected an integer, got {shown(value)}") from None
    if isinstance(value, float) and value != number:
        raise UsageError(f"{what}: expected an integer, got {shown(value)}")
    if minimum is not None and number < minimum:
        wanted = "a positive integer" if minimum == 1 else f"an integer of at least {minimum}"
        raise UsageError(f"{what}: expected {wanted}, got {shown(value)}")
    return number


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    """A list of layer ids (integers, -1 allowed), as written."""
    if not isinstance(value, (list, tuple)) or not value:
        raise UsageError(f"{what}: expected a non-empty list of layer ids, got {shown(value)}")
    bad = [item for item in value if isinstance(item, bool) or not isinstance(item, int)]
    if bad:
        raise UsageError(f"{what}: expected integer layer ids, got {shown(bad[0])}")
    return tuple(value)


_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30}


def _human_int(value: Any, what: str) -> int:
    """A length as vLLM's `human_readable_int_or_auto` reads it (see :data:`HUMAN_INT`)."""
    text = str(value).strip() if isinstance(value, (str, int)) else ""
    if isinstance(value, bool) or not text:
        raise UsageError(f"{what}: expected a length such as 4096 or 32k, got {shown(value)}")
    if text.lower() == "auto" or text == "-1":
        return -1
    suffix = text[-1]
    number = text[:-1]
    try:
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        if suffix in _BINARY:
            return int(number) * _BINARY[suffix]
        return _integer(text, what)
    except (ValueError, OverflowError):
        raise UsageError(
            f"{what}: expected a length such as 4096 or 32k, got {shown(value)}"
        ) from None


def _boolean(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, (str, int, float)) else ""
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise UsageError(f"{what}: expected true or false, got {shown(value)}")


def key_name(name: object) -> str:
    """A settings key with dashes read as underscores (`tensor-parallel-size`)."""
    return str(name).replace("-", "_")


# ----------------------------------------------------------------------------- files


def load_file(name: str, what: str, hint: str) -> Mapping[str, Any]:
    """The mapping in the JSON/YAML file `name`, read bounded (a regular file, at most
    MAX_SERVE_CONFIG_BYTES) and only when no link leads it elsewhere than it is named
    (:func:`refuse_linked_path`), the same rule for every file a launch names; `what`
    names it in errors."""
    path = Path(name)
    refuse_linked_path(path, what)
    try:
        data = read_regular(path, MAX_SERVE_CONFIG_BYTES)
    except FileNotFoundError:
        raise UsageError(f"{what}: no such file ({hint})") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{what}: cannot read it ({exc})") from None
    body = decode_utf8(data, what)
    if path.suffix.lower() == ".json" or body.lstrip().startswith("{"):
        return json_object(body, what)
    return _yaml_object(body, what)


def refuse_linked_path(path: Path, what: str) -> None:
    """Refuse a settings file that a symbolic link takes elsewhere than its own path: a
    folder on its path that is a link (`linkdir/secret.yaml`, `../linkdir/x.yaml`; for an
    absolute path, any folder from the root), or the file itself a link, wherever it leads
    (out of the folder, `launch.yaml -> ../../.ssh/config`, or to another file of it, such
    as the secrets a CI job writes into its workspace). Only a Hugging Face cache
    snapshot's link into its own repository's `blobs/` is read. In CI a pull request
    controls such links and the log is public: what draftfit reads from a settings file it
    may quote, so it reads nothing a link brings in. The refusal quotes neither the file
    nor where the link leads."""
    folder = Path(path.anchor) if path.is_absolute() else Path()
    for part in path.parts[1 if path.is_absolute() else 0 : -1]:
        folder = folder / part
        if part not in (".", "..") and folder.is_symlink():
            raise UsageError(
                f"{what}: {folder} is a symbolic link to a folder; draftfit reads a launch's "
                "files only by their own path (give the file's real path)"
            )
    if not path.is_symlink():
        return
    from draftfit.output.guard import cache_repository

    cache = cache_repository(path.parent)
    if cache is not None and not (cache / "blobs").is_symlink():
        try:
            real = path.resolve(strict=True)
            blobs = (cache / "blobs").resolve(strict=True)
        except (OSError, RuntimeError):
            return  # a dangling link or a loop: reading it reports the error
        if real.parent == blobs:
            return
    raise UsageError(
        f"{what}: it is a symbolic link; draftfit does not read a launch's files through "
        "links (give the file itself)"
    )


def json_object(text: str, what: str) -> Mapping[str, Any]:
    """The JSON object `text` (read bounded); anything else is a usage error."""
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


# ----------------------------------------------------------------------------- words

# A shell variable assignment (`NAME=value`) before the command.
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def leading_assignments(words: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """The `NAME=value` words before the command (after an optional `env`), and the rest."""
    start = 1 if words[:1] == ["env"] else 0
    index = start
    found: list[tuple[str, str]] = []
    while index < len(words) and ASSIGNMENT.match(words[index]):
        name, value = words[index].split("=", 1)
        found.append((name, value))
        index += 1
    if not found:
        return [], words
    return found, words[index:]


def is_flag(word: str) -> bool:
    """Whether `word` is a flag (not a value: `-` alone and negative numbers are values)."""
    if not word.startswith("-") or word == "-":
        return False
    try:
        float(word)  # a negative number is a value
    except ValueError:
        return True
    return False


# ----------------------------------------------------------------------------- not read

# Keys and flags listed as not read: only what looks like a setting's name (a file that is
# not settings at all must not be echoed), at most MAX_LISTED, each cut at SHOWN_CHARS.
_SETTING_NAME = re.compile(r"-{0,2}[A-Za-z_][A-Za-z0-9_.-]*")
MAX_LISTED = 20


def listed(settings: ServeSettings) -> ServeSettings:
    """`settings` with its not-read keys reduced to what may be shown (see _SETTING_NAME)."""
    names = [name for name in settings.ignored_flags if _SETTING_NAME.fullmatch(name)]
    shown_names = [clip(name) for name in names[:MAX_LISTED]]
    left_out = len(settings.ignored_flags) - len(shown_names)
    if left_out:
        shown_names.append(f"({left_out} more not shown)")
    return replace(settings, ignored_flags=tuple(shown_names))
