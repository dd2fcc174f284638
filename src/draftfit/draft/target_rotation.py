"""Whether the target's residual stream is rotated (ModelSlim QuaRot), read from its files.

QuaRot multiplies the embedding and every weight that reads or writes the residual stream by
an orthogonal matrix `Q`, so the target computes the same outputs while its hidden states
are `XQ` instead of `X`. An EAGLE draft reads those hidden states (`fc`) and, without an
embedding of its own, the target's (rotated) embedding table: a draft trained on the
unrotated model then sees states in another basis and its proposals are almost never
accepted, with no error.

ModelSlim (msModelSlim, Ascend) writes no `quantization_config` into `config.json`; it
describes a quantized checkpoint in `quant_model_description.json` beside it. Its QuaRot
processor records a rotation there in two places (msmodelslim
docs/en/feature_guide/quick_quantization_v1/quantization_result.md, "Description Fields in
`quant_model_description.json`"):

- `optional.quarot.rotation_map.global_rotation`: the relative path of the exported global
  rotation matrix (`optional/quarot.safetensors`, tensor `global_rotation`), written by
  default since msmodelslim's `export_extra_info` option (2026-03); the key vllm-ascend reads
  to anti-rotate a draft (vllm_ascend/patch/worker/patch_draft_quarot.py:42-50@v0.16.0rc1);
- `metadata.quarot`: the layers given online rotations (`online: true`), which come on top of
  the global rotation.

A checkpoint quantized with QuaRot before the export option, or with it turned off, shows
neither, and draftfit cannot tell it from an unrotated one: the check says what it found,
never more. Files are read confined to the target folder, through the bounded JSON reader;
one that is there but cannot be read safely (a symlink out of the folder, a FIFO, a device,
a directory) leaves the check `unchecked`, with the reason, never silently passed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.checkpoint.jsonread import CONFIG_LIMITS, JsonLimitError, JsonSyntaxError, parse_json
from draftfit.checkpoint.limits import MAX_JSON_FILE_BYTES
from draftfit.records import frozen

DESCRIPTION_FILE = "quant_model_description.json"
ROTATION_FILE = "optional/quarot.safetensors"
ROTATION_POINTER = "/optional/quarot/rotation_map/global_rotation"
ONLINE_POINTER = "/metadata/quarot"

if TYPE_CHECKING:
    from typing import Any, Protocol

    class TargetFiles(Protocol):
        """Read access to the target's folder (a confined local folder or a cache
        snapshot)."""

        def size(self, rel: str) -> int: ...

        def read_all(self, rel: str) -> bytes: ...


@frozen
class Rotation:
    """A rotation-quantized target.

    Attributes:
        file: the file that shows it (`quant_model_description.json` or the rotation file).
        pointer: the JSON pointer of the evidence in `file` (None for the rotation file).
        rotation_map: the rotation file named by `optional.quarot.rotation_map`, or None
            when the description does not name one (an engine that anti-rotates the draft
            from that entry cannot then find the matrix).
    """

    file: str
    pointer: str | None
    rotation_map: str | None

    @property
    def shown_by(self) -> str:
        """The evidence in words, for messages."""
        if self.pointer is None:
            return f"the target folder holds `{self.file}`"
        key = self.pointer.strip("/").replace("/", ".")
        return f"the target's `{self.file}` has `{key}`"


@frozen
class RotationCheck:
    """What the target's files say: a rotation, or none found; `unchecked` says why the
    files could not be read (then `rotation` is None and nothing is claimed) and
    `unchecked_file` which one. `present`: whether that file is known to be there (it is,
    but could not be read safely: the verdict is then not `compatible`); False when draftfit
    cannot tell whether the target has it (a Hub target's file not in the offline cache)."""

    rotation: Rotation | None = None
    unchecked: str | None = None
    unchecked_file: str = DESCRIPTION_FILE
    present: bool = True


def rotation_in_description(description: Any) -> Rotation | None:
    """The rotation a parsed `quant_model_description.json` records, or None."""
    if not isinstance(description, dict):
        return None
    optional = description.get("optional")
    quarot = optional.get("quarot") if isinstance(optional, dict) else None
    rotation_map = quarot.get("rotation_map") if isinstance(quarot, dict) else None
    path = rotation_map.get("global_rotation") if isinstance(rotation_map, dict) else None
    if isinstance(path, str) and path:
        return Rotation(DESCRIPTION_FILE, ROTATION_POINTER, path)
    metadata = description.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("quarot"), dict):
        return Rotation(DESCRIPTION_FILE, ONLINE_POINTER, None)
    return None


def parse_description(data: bytes) -> RotationCheck:
    """The rotation check of a description's bytes (bounded; never raises)."""
    try:
        description = parse_json(data, CONFIG_LIMITS).value
    except JsonLimitError as exc:
        return RotationCheck(unchecked=f"`{DESCRIPTION_FILE}` exceeds a reader limit ({exc})")
    except (JsonSyntaxError, ValueError):
        return RotationCheck(unchecked=f"`{DESCRIPTION_FILE}` is not readable JSON")
    if not isinstance(description, dict):
        return RotationCheck(unchecked=f"`{DESCRIPTION_FILE}` is not a JSON object")
    return RotationCheck(rotation_in_description(description))


def check_rotation(files: TargetFiles) -> RotationCheck:
    """Read the target folder's description (and look for the rotation file beside it)."""
    try:
        size = files.size(DESCRIPTION_FILE)
    except FileNotFoundError:
        size = None
    except OSError as exc:
        return RotationCheck(unchecked=f"`{DESCRIPTION_FILE}` cannot be read ({_why(exc)})")
    if size is not None:
        if size > MAX_JSON_FILE_BYTES:
            return RotationCheck(
                unchecked=f"`{DESCRIPTION_FILE}` is larger than {MAX_JSON_FILE_BYTES} bytes"
            )
        try:
            data = files.read_all(DESCRIPTION_FILE)
        except OSError as exc:
            return RotationCheck(unchecked=f"`{DESCRIPTION_FILE}` cannot be read ({_why(exc)})")
        found = parse_description(data)
        if found.rotation is not None or found.unchecked is not None:
            return found
    try:
        files.size(ROTATION_FILE)
    except (FileNotFoundError, NotADirectoryError):
        return RotationCheck()
    except OSError as exc:  # there, but not safely readable: a symlink out, a FIFO, a folder
        return RotationCheck(
            unchecked=f"`{ROTATION_FILE}` cannot be read ({_why(exc)})",
            unchecked_file=ROTATION_FILE,
        )
    return RotationCheck(Rotation(ROTATION_FILE, None, None))


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)
