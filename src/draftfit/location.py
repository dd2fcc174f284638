"""Where a finding points: a file of the draft or of the target, plus a JSON pointer into it,
or a tensor name."""

from __future__ import annotations

from draftfit.records import frozen

CONFIG_FILE = "config.json"


@frozen
class Location:
    """Where a finding points: a file plus a JSON pointer, or a tensor name.

    Attributes:
        file: the file's name inside its checkpoint folder (`config.json`), or None.
        pointer: a JSON pointer into that file.
        tensor: a tensor's name as stored.
        in_target: the file is one of the target's (the verifier's), not the draft's.
        target_origin: for a file of the target, the target's source when the finding names
            it (`<source> config.json (target)`); None names it `target <file>`.
    """

    file: str | None = None
    pointer: str | None = None
    tensor: str | None = None
    in_target: bool = False
    target_origin: str | None = None

    @property
    def shown_file(self) -> str | None:
        """The file as findings name it: `config.json` for the draft's, `target config.json`
        (or `<target source> config.json (target)`) for the target's."""
        if self.file is None or not self.in_target:
            return self.file
        if self.target_origin is None:
            return f"target {self.file}"
        return f"{self.target_origin} {self.file} (target)"

    def __str__(self) -> str:
        parts = [self.shown_file or ""]
        if self.pointer is not None:
            parts.append(self.pointer or "/")
        if self.tensor is not None:
            parts.append(f"tensor `{self.tensor}`")
        return " ".join(p for p in parts if p)

    def to_dict(self) -> dict[str, str]:
        out = {}
        shown = self.shown_file
        if shown is not None:
            out["file"] = shown
        if self.pointer is not None:
            out["pointer"] = self.pointer
        if self.tensor is not None:
            out["tensor"] = self.tensor
        return out


def config_at(pointer: str) -> Location:
    """A key of the draft's `config.json`."""
    return Location(CONFIG_FILE, pointer)


def in_target_file(file: str, pointer: str | None = None, origin: str | None = None) -> Location:
    """A place in the target's file `file` (`config.json`, `quant_model_description.json`);
    with `origin`, the finding names the target by it."""
    return Location(file, pointer, in_target=True, target_origin=origin)


def target_config_at(pointer: str, origin: str | None = None) -> Location:
    """A key of the target's `config.json`."""
    return in_target_file(CONFIG_FILE, pointer, origin)
