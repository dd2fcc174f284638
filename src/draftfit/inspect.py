"""`draftfit inspect`: what a draft holds — dialect, dims, aux ids, tensors by role."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from draftfit.render.console import render_to_string
from draftfit.spec import describe, is_known_role

ROLES: tuple[tuple[str, str], ...] = (
    (r"^fc\.weight$", "fusion fc (aux states -> hidden)"),
    (r"^fc\.bias$", "fusion fc bias"),
    (r"^input_norm\.weight$", "norm before fc (norm_before_fc)"),
    (r"^fc_norm\.(\d+)\.weight$", "per-aux-state norm {0} (fc_norm)"),
    (r"^embed_tokens\.weight$", "token embedding"),
    (r"^lm_head\.weight$", "draft lm_head"),
    (r"^norm\.weight$", "final norm"),
    (r"^d2t$", "draft->target vocab offsets"),
    (r"^t2d$", "target->draft vocab mask"),
    (r"^layers\.(\d+)\.self_attn\.([qkvo])_proj\.weight$", "layer {0} attention {1}"),
    (r"^layers\.(\d+)\.self_attn\.([qkvo])_proj\.bias$", "layer {0} attention {1} bias"),
    (r"^layers\.(\d+)\.self_attn\.([qk])_norm\.weight$", "layer {0} {1}-norm"),
    (r"^layers\.(\d+)\.mlp\.(gate|up|down)_proj\.weight$", "layer {0} mlp {1}"),
    (r"^layers\.(\d+)\.input_layernorm\.weight$", "layer {0} input norm (embeddings)"),
    (r"^layers\.(\d+)\.hidden_norm\.weight$", "layer {0} hidden norm (fc output)"),
    (r"^layers\.(\d+)\.post_attention_layernorm\.weight$", "layer {0} post-attention norm"),
)


def role_of(canonical: str) -> str:
    for pattern, label in ROLES:
        match = re.match(pattern, canonical)
        if match:
            return label.format(*match.groups())
    return "known" if is_known_role(canonical) else "unrecognised"


def inspect_path(path: str | Path) -> dict[str, Any]:
    """Everything `draftfit inspect` shows, as a JSON-ready dict."""
    from draftfit.sources import open_checkpoint

    checkpoint = open_checkpoint(path)
    spec = describe(checkpoint)
    tensors = []
    for canonical, info in spec.tensors.items():
        tensors.append(
            {
                "name": info.name,
                "canonical": canonical,
                "role": role_of(canonical),
                "dtype": info.dtype,
                "shape": list(info.shape),
                "file": info.file,
            }
        )
    for raw in spec.unrecognised:
        if raw not in {t["name"] for t in tensors}:
            info = checkpoint.tensors[raw]
            tensors.append(
                {
                    "name": raw,
                    "canonical": None,
                    "role": "unrecognised",
                    "dtype": info.dtype,
                    "shape": list(info.shape),
                    "file": info.file,
                }
            )
    dims = {
        "hidden_size": spec.hidden_size,
        "target_hidden_size": spec.int_field("target_hidden_size"),
        "num_attention_heads": spec.num_heads,
        "num_key_value_heads": spec.num_kv_heads,
        "head_dim": spec.head_dim_explicit,
        "head_dim_effective": spec.head_dim,
        "intermediate_size": spec.int_field("intermediate_size"),
        "num_hidden_layers": spec.num_layers_config,
        "layers_stored": spec.layer_indices,
        "vocab_size": spec.vocab_size,
        "draft_vocab_size": spec.int_field("draft_vocab_size"),
        "fc_aux_states": spec.num_aux_states,
    }
    counts = checkpoint.parameter_count_by_dtype()
    return {
        "source": checkpoint.source,
        "dialect": {
            "name": spec.dialect.name,
            "variant": spec.dialect.variant,
            "title": spec.dialect.title,
            "evidence": list(spec.dialect.evidence),
            "version_hint": spec.dialect.version_hint,
        },
        "method": spec.method,
        "method_evidence": spec.method_evidence,
        "layer_config": spec.layer_config_pointer or "/",
        "dims": dims,
        "aux_layer_ids": [
            {
                "ids": list(a.ids),
                "pointer": a.pointer,
                "counting": a.convention,
                "capture_before": list(a.capture_before()),
                "why": a.why,
            }
            for a in spec.aux
        ],
        "norm_flags": {
            k: spec.get(k)
            for k in ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_output")
        },
        "vocab_maps": {"d2t": spec.has("d2t"), "t2d": spec.has("t2d")},
        "weight_format": checkpoint.weight_format,
        "weight_files": checkpoint.weight_files,
        "tensors": tensors,
        "parameters_by_dtype": counts,
        "parameters_total": sum(counts.values()),
        "damage": [
            {"kind": d.kind, "file": d.file, "message": d.message} for d in checkpoint.damage
        ],
    }


def render_inspect(info: dict[str, Any], color: bool = False) -> str:
    def draw(console) -> None:
        head = Text()
        head.append("Draft    ", style="bold")
        head.append(info["source"])
        head.append("\nDialect  ", style="bold")
        head.append(info["dialect"]["title"])
        for item in info["dialect"]["evidence"]:
            head.append(f"\n         - {item}", style="dim")
        head.append("\nMethod   ", style="bold")
        head.append(f"{info['method']} ({'; '.join(info['method_evidence'])})")
        dims = info["dims"]
        head.append("\nDims     ", style="bold")
        head.append(", ".join(f"{k} {v}" for k, v in dims.items() if v not in (None, [])))
        for aux in info["aux_layer_ids"]:
            head.append("\nAux ids  ", style="bold")
            head.append(
                f"{aux['ids']} at {aux['pointer']} ({aux['counting']}; capture-before "
                f"{aux['capture_before']})"
            )
        flags = {k: v for k, v in info["norm_flags"].items() if v is not None}
        if flags:
            head.append("\nNorms    ", style="bold")
            head.append(", ".join(f"{k}={v}" for k, v in flags.items()))
        console.print(head)
        table = Table(box=None, header_style="bold", pad_edge=False)
        for column in ("tensor", "role", "dtype", "shape"):
            table.add_column(column)
        for t in info["tensors"]:
            table.add_row(t["name"], t["role"], t["dtype"], str(t["shape"]))
        console.print(table)
        params = ", ".join(f"{k} {v:,}" for k, v in sorted(info["parameters_by_dtype"].items()))
        console.print(Text(f"Parameters  {info['parameters_total']:,} ({params})", style="bold"))
        for damage in info["damage"]:
            console.print(Text(f"damage: {damage['file']}: {damage['message']}", style="red"))

    return render_to_string(draw, color)
