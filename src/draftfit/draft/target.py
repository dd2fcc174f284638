"""Facts about the target (verifier) model that drafts must agree with.

A target is a directory holding at least its `config.json`. Its weights, if present, are
not opened by a plain check: every fact the checks need (hidden size, layer count,
vocabulary, class) is in the config, so a 1 TB, 64-shard target costs one small JSON read.
The target keeps the access it was read through (a local folder, or the Hub repository), so
the value checks that do read its embedding (:mod:`draftfit.values`) read the same files.
Multimodal configs keep the language model under `text_config` (Kimi-K2.5, Llama-4,
Qwen-VL) or a similar key; engines read that *text config*, so draftfit does too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.checkpoint.access import LocalAccess, OutsideCheckpointError, read_regular
from draftfit.checkpoint.hub_cache import HubOrigin, find_origin, repository_folder
from draftfit.checkpoint.jsonread import CONFIG_LIMITS, JsonLimitError, JsonSyntaxError, parse_json
from draftfit.checkpoint.limits import MAX_JSON_FILE_BYTES
from draftfit.draft.config_schema import TARGET_SCHEMA, TEXT_CONFIG_KEYS, TypeProblem, scrub
from draftfit.draft.target_rotation import RotationCheck, check_rotation
from draftfit.errors import CheckpointNotFoundError, UsageError
from draftfit.records import field, record
from draftfit.rule_ids import READER_LIMIT_EXCEEDED

if TYPE_CHECKING:
    from typing import Any

    from draftfit.checkpoint.access import FolderAccess


@record
class Target:
    """The verifier as engines see it.

    Attributes:
        origin: how the user named it.
        config: the whole `config.json`.
        text_config: the language-model part (the whole config for text-only models).
        text_pointer: JSON pointer of `text_config` inside config.json (`""` when top level).
        problems: values of the wrong JSON type, left out of `config` and `text_config`.
        rotation: whether the target's residual stream is rotated (ModelSlim QuaRot), from
            the files beside config.json (see :mod:`draftfit.draft.target_rotation`).
        access: the files the target was read from (its folder, or its Hub repository);
            None for a target made from a config alone.
        hub_origin: the Hub repository and revision its folder's layout names (a cache
            snapshot, a `--local-dir` download), if any.
        folder_name: the name of the folder it was read from, as named (None for a target
            made from a config alone).
        draft_is_for_target: the user said the draft checked next to it was trained for it
            (`--draft-is-for-target`): a recorded verifier that names another model is then
            reported, not counted.
    """

    origin: str
    config: dict[str, Any]
    text_config: dict[str, Any]
    text_pointer: str = ""
    problems: list[TypeProblem] = field(default_factory=list)
    rotation: RotationCheck = field(default_factory=RotationCheck)
    access: FolderAccess | None = field(default=None, repr=False, compare=False)
    hub_origin: HubOrigin | None = None
    folder_name: str | None = None
    draft_is_for_target: bool = False

    def _int(self, key: str) -> int | None:
        value = self.text_config.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def architectures(self) -> list[str]:
        """The top-level architectures: they pick the verifier class an engine builds."""
        arch = self.config.get("architectures")
        return [a for a in arch if isinstance(a, str)] if isinstance(arch, list) else []

    @property
    def architecture(self) -> str | None:
        return self.architectures[0] if self.architectures else None

    @property
    def model_type(self) -> str | None:
        """The text config's `model_type` (what vLLM's allow-lists test)."""
        value = self.text_config.get("model_type", self.config.get("model_type"))
        return value if isinstance(value, str) else None

    @property
    def hidden_size(self) -> int | None:
        return self._int("hidden_size")

    @property
    def num_layers(self) -> int | None:
        return self._int("num_hidden_layers")

    @property
    def vocab_size(self) -> int | None:
        vocab = self._int("vocab_size")
        if vocab is None:
            value = self.config.get("vocab_size")
            vocab = value if isinstance(value, int) and not isinstance(value, bool) else None
        return vocab

    @property
    def num_heads(self) -> int | None:
        return self._int("num_attention_heads")

    @property
    def head_dim(self) -> int | None:
        explicit = self._int("head_dim")
        if explicit is not None:
            return explicit
        if self.hidden_size and self.num_heads:
            return self.hidden_size // self.num_heads
        return None

    def pointer(self, key: str) -> str:
        return f"{self.text_pointer}/{key}"

    @property
    def quantization(self) -> tuple[dict[str, Any], str] | None:
        """The target's `quantization_config` and its JSON pointer: the top-level one, else
        the text config's; None for an unquantized (or ModelSlim) target."""
        qc = self.config.get("quantization_config")
        if isinstance(qc, dict):
            return qc, "/quantization_config"
        if self.text_pointer:
            qc = self.text_config.get("quantization_config")
            if isinstance(qc, dict):
                return qc, self.pointer("quantization_config")
        return None

    @property
    def quantization_method(self) -> str | None:
        """The first `quantization_config.quant_method` written as a string, top level
        before the text config's (`awq`, `fp8`, `compressed-tensors`, ...)."""
        for config in (self.config, self.text_config):
            qc = config.get("quantization_config")
            if isinstance(qc, dict) and isinstance(qc.get("quant_method"), str):
                method: str = qc["quant_method"]
                return method
        return None

    @property
    def is_mla(self) -> bool:
        """Whether the target's attention is multi-head latent (`kv_lora_rank` set)."""
        return bool(self.text_config.get("kv_lora_rank") or self.config.get("kv_lora_rank"))


def load_target(
    path: str | Path,
    origin: str | None = None,
    rotation: RotationCheck | None = None,
    access: FolderAccess | None = None,
) -> Target:
    """Read a target directory (or its `config.json`), and the ModelSlim description beside
    it (confined to the folder) unless `rotation` already says what the target's files show.
    The target's other files are read later through `access` (default: the folder, see
    :class:`Target`).

    Raises :class:`CheckpointNotFoundError` / :class:`UsageError` when there is no readable
    config: a target without one cannot be reasoned about.
    """
    root = Path(path)
    if root.is_file() and root.name == "config.json":
        root = root.parent
    if not root.is_dir():
        raise CheckpointNotFoundError(f"target not found: {path} is not a directory")
    config_path = root / "config.json"
    if not config_path.is_file():
        raise UsageError(f"target {path} has no config.json")
    # One access for every file of the target: a Hugging Face cache snapshot's files are
    # symlinks into its repository's `blobs/`, read as the draft reader reads them; a link
    # leading elsewhere is not followed (what the target's config holds may be quoted).
    folder = LocalAccess(root, repository_folder(root))
    try:
        # Non-blocking, regular files only, at most MAX_JSON_FILE_BYTES: never a hang.
        data = read_regular(folder.local_path("config.json") or config_path, MAX_JSON_FILE_BYTES)
        config = parse_json(data, CONFIG_LIMITS).value
    except OutsideCheckpointError:
        raise UsageError(
            f"target config {config_path} is a symbolic link to a file outside the target's "
            "folder; draftfit does not read it (name the folder that holds the file itself)"
        ) from None
    except JsonLimitError as exc:
        raise UsageError(
            f"target config {config_path} exceeds a reader limit ({READER_LIMIT_EXCEEDED}): {exc}"
        ) from None
    except JsonSyntaxError as exc:
        raise UsageError(
            f"target config {config_path} is not readable JSON: {exc.detail}"
        ) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"target config {config_path} is not readable JSON: {exc}") from None
    if not isinstance(config, dict):
        raise UsageError(f"target config {config_path} is not a JSON object")
    target = target_from_config(config, origin or str(path))
    target.rotation = rotation if rotation is not None else check_rotation(folder)
    target.access = access if access is not None else folder
    target.hub_origin = find_origin(root)
    target.folder_name = os.path.basename(os.path.abspath(root)) or None
    return target


def target_from_config(raw: dict[str, Any], origin: str) -> Target:
    """A target from its parsed config; wrong-typed values are set aside as problems."""
    scrubbed = scrub(raw, TARGET_SCHEMA)
    _, pointer = _text_config(raw)
    config = scrubbed.config
    text_config = config.get(pointer[1:]) if pointer else config
    if not isinstance(text_config, dict):  # pragma: no cover - a scrubbed object stays one
        text_config, pointer = config, ""
    return Target(origin, config, text_config, pointer, scrubbed.problems)


def _text_config(config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    for key in TEXT_CONFIG_KEYS:
        nested = config.get(key)
        if isinstance(nested, dict) and ("hidden_size" in nested or "num_hidden_layers" in nested):
            return nested, f"/{key}"
    return config, ""
