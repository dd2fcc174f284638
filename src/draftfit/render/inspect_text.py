"""The human-readable `draftfit inspect`: dialect, dims, aux ids, then a table of tensors."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from draftfit.commands.inspection import InspectInfo
from draftfit.escape import escape_field, escape_name
from draftfit.render.console import render_to_string
from draftfit.render.options import PLAIN, RenderOptions


def render_inspect(info: InspectInfo, options: RenderOptions = PLAIN) -> str:
    from rich.table import Table  # here, not at import: it loads decimal and fractions

    def draw(console: Console) -> None:
        head = Text()
        head.append("Draft    ", style="bold")
        head.append(escape_field(info.source))
        head.append("\nDialect  ", style="bold")
        head.append(escape_field(info.dialect.title))
        for item in info.dialect.evidence:
            head.append(f"\n         - {escape_field(item)}", style="dim")
        head.append("\nMethod   ", style="bold")
        head.append(escape_field(f"{info.method} ({'; '.join(info.method_evidence)})"))
        head.append("\nDims     ", style="bold")
        dims = ", ".join(f"{k} {v}" for k, v in info.dims.items() if v not in (None, []))
        head.append(escape_field(dims))
        for aux in info.aux_layer_ids:
            head.append("\nAux ids  ", style="bold")
            head.append(
                escape_field(
                    f"{list(aux.ids)} at {aux.pointer} ({aux.counting}; capture-before "
                    f"{list(aux.capture_before)})"
                )
            )
        flags = {k: v for k, v in info.norm_flags.items() if v is not None}
        if flags:
            head.append("\nNorms    ", style="bold")
            head.append(escape_field(", ".join(f"{k}={v}" for k, v in flags.items())))
        console.print(head)
        table = Table(box=None, header_style="bold", pad_edge=False)
        for column in ("tensor", "role", "dtype", "shape"):
            table.add_column(column)
        for t in info.tensors:
            # A name is cut short past NAME_LIMIT characters: a table stays readable
            # (and quick to lay out) whatever a header holds.
            table.add_row(
                escape_name(t.name), escape_field(t.role), escape_name(t.dtype), str(list(t.shape))
            )
        console.print(table)
        params = ", ".join(f"{k} {v:,}" for k, v in sorted(info.parameters_by_dtype.items()))
        console.print(Text(f"Parameters  {info.parameters_total:,} ({params})", style="bold"))
        for damage in info.damage:
            console.print(
                Text(
                    f"damage: {escape_field(damage.file)}: {escape_field(damage.message)}",
                    style="red",
                )
            )

    return render_to_string(draw, options.color)
