"""Where a finding points: a file plus a JSON pointer into it, or a tensor name."""

from __future__ import annotations

from draftfit.records import frozen


@frozen
class Location:
    """Where a finding points: a file plus a JSON pointer, or a tensor name."""

    file: str | None = None
    pointer: str | None = None
    tensor: str | None = None

    def __str__(self) -> str:
        parts = [self.file or ""]
        if self.pointer is not None:
            parts.append(self.pointer or "/")
        if self.tensor is not None:
            parts.append(f"tensor `{self.tensor}`")
        return " ".join(p for p in parts if p)

    def to_dict(self) -> dict[str, str]:
        out = {}
        if self.file is not None:
            out["file"] = self.file
        if self.pointer is not None:
            out["pointer"] = self.pointer
        if self.tensor is not None:
            out["tensor"] = self.tensor
        return out


def config_at(pointer: str) -> Location:
    return Location("config.json", pointer)
