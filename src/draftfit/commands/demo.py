"""`draftfit demo`: a built-in example of the problem draftfit solves.

An engineer trained an EAGLE-3 draft for Kimi-K2 with the `speculators` library and wants
to know, before loading a 540 GB target on 8 GPUs, whether vLLM will take it. The demo
writes that draft as a full-size *sparse* checkpoint (real headers, holes for the weights:
~5 GB that cost ~0.5 MB of disk) plus the Kimi-K2 target's config.json into a temporary
folder, checks it against vLLM, and removes everything afterwards.
"""

from __future__ import annotations

import json
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.draft.synth import speculators_table, write_sparse_checkpoint
from draftfit.records import frozen

if TYPE_CHECKING:
    from typing import Any

    from draftfit.commands.comparison import DiffReport
    from draftfit.report import Report

DEMO_ENGINES = ("vllm==0.17.0", "sglang==0.5.23", "vllm==0.34.0")


@frozen
class DemoPaths:
    """Where the demo wrote its three checkpoints."""

    draft: Path
    reference: Path
    target: Path


def _demo_json(name: str) -> object:
    text = (resources.files("draftfit") / "demo_data" / name).read_text("utf-8")
    return json.loads(text)


def demo_config(name: str) -> dict[str, Any]:
    """A config.json shipped in `demo_data`."""
    value = _demo_json(name)
    if not isinstance(value, dict):
        raise TypeError(f"demo_data/{name} is not a JSON object")
    return value


def demo_tensor_table(name: str) -> list[tuple[str, str, tuple[int, ...]]]:
    """A tensor list shipped in `demo_data` (`[name, shape, dtype]` rows) as
    `(name, dtype, shape)` rows for :func:`~draftfit.draft.synth.write_sparse_checkpoint`."""
    rows = _demo_json(name)
    if not isinstance(rows, list):
        raise TypeError(f"demo_data/{name} is not a JSON list")
    return [(str(n), str(dtype), tuple(int(d) for d in shape)) for n, shape, dtype in rows]


def build_demo(root: Path) -> DemoPaths:
    """Write the speculators-trained draft, the AQ-MedAI reference and the Kimi-K2 target."""
    draft_config = demo_config("speculators-kimi-k2-eagle3.config.json")
    layer = draft_config["transformer_layer_config"]
    vocab, draft_vocab = layer["vocab_size"], draft_config["draft_vocab_size"]
    draft = write_sparse_checkpoint(
        root / "kimi-k2-eagle3-speculators",
        draft_config,
        speculators_table(draft_config),
        vocab=vocab,
        draft_vocab=draft_vocab,
    )
    reference_config = demo_config("aq-medai-kimi-k2-eagle3.config.json")
    reference_table = demo_tensor_table("aq-medai-kimi-k2-eagle3.tensors.json")
    reference = write_sparse_checkpoint(
        root / "AQ-MedAI--Kimi-K2-Instruct-eagle3",
        reference_config,
        reference_table,
        vocab=reference_config["vocab_size"],
        draft_vocab=reference_config["draft_vocab_size"],
    )
    target = root / "Kimi-K2-Instruct"
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(
        json.dumps(demo_config("kimi-k2-instruct.config.json"), indent=2) + "\n"
    )
    return DemoPaths(draft, reference, target)


INTRO = """\
draftfit demo — a speculators-trained EAGLE-3 draft for Kimi-K2, checked before serving.

The draft below was trained with the `speculators` library (architecture Eagle3DraftModel,
aux layers [2, 30, 58], hidden 7168 with 64 heads of head_dim 128 although 7168/64 = 112).
It is written as a full-size sparse checkpoint ({size:.1f} GB of tensors, real headers, no
weight bytes) next to the Kimi-K2 target's config.json, and checked against vLLM 0.17.0
and 0.34.0 and SGLang 0.5.23 — without a GPU and without reading the weights.
"""

DIFF_INTRO = """\
Next: how does this draft differ from AQ-MedAI/Kimi-K2-Instruct-eagle3, a published draft
known to work with vLLM? A raw diff of the two config.json files has dozens of lines;
draftfit sorts them by what vLLM does with them.
"""

OUTRO = """\
What this says: vLLM 0.34.0 resolves `Eagle3DraftModel` through its speculators adaptor to
Eagle3LlamaForCausalLM, reads the top-level aux ids [2, 30, 58], and finds every tensor
shape consistent with head_dim 128 (vLLM 0.17.0 would refuse the Kimi-K2 target outright;
SGLang cannot read speculators configs at all — `draftfit convert --to sglang` rewrites it,
and `draftfit matrix` lays out every engine and release with the command to serve it).
Against the AQ-MedAI reference, the architecture name, the config format, the tensor names
and where the aux ids are written are spelling; what really differs is training choices
(norm_before_residual, rope_theta), not compatibility.
Try it on your own checkpoint:  draftfit check ./my-draft --target ./my-target
                                draftfit diff ./my-draft hf://AQ-MedAI/Kimi-K2-Instruct-eagle3
"""


@frozen
class DemoResult:
    """The demo's check and diff reports, and the size of the draft it wrote (in GB)."""

    report: Report
    diff: DiffReport
    size_gb: float

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.report.to_dict(), "diff": self.diff.to_dict()}


def run_demo() -> DemoResult:
    """Build the demo in a temporary folder, check it, clean up, and return the reports."""
    from draftfit.checker import check_path
    from draftfit.checkpoint import load_checkpoint
    from draftfit.commands.comparison import diff_paths

    with tempfile.TemporaryDirectory(prefix="draftfit-demo-") as tmp:
        paths = build_demo(Path(tmp))
        report = check_path(paths.draft, target=paths.target, engines=DEMO_ENGINES)
        diff = diff_paths(
            paths.draft, paths.reference, engines=DEMO_ENGINES[-1:], target=paths.target
        )
        report.draft = diff.draft = paths.draft.name
        report.target = paths.target.name
        diff.reference = "AQ-MedAI/Kimi-K2-Instruct-eagle3"
        size = sum(t.numel * 2 for t in load_checkpoint(paths.draft).tensors.values()) / 1e9
    return DemoResult(report, diff, size)
