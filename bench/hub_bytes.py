"""How many bytes does a remote `draftfit check` transfer, next to the checkpoint's size?

Serves a full-size *sparse* sharded draft (the demo's Kimi-K2 EAGLE-3 draft split into 8
shards, ~4.7 GB) and the Kimi-K2 target config from a Hub-shaped server on 127.0.0.1 (the
test suite's fake Hub), points huggingface_hub at it through HF_ENDPOINT, runs
`check hf://... --target hf://...`, and prints the bytes the server sent beside the size of
the checkpoint. Nothing leaves the machine.

Run: `python bench/hub_bytes.py` (needs the test extras).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_hub import FakeHub, hub_env

from draftfit.commands.demo import demo_config
from draftfit.draft.synth import speculators_table, write_sparse_checkpoint


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="draftfit-hub-bench-") as tmp:
        root = Path(tmp)
        config = demo_config("speculators-kimi-k2-eagle3.config.json")
        layer = config["transformer_layer_config"]
        table = speculators_table(config)
        draft = write_sparse_checkpoint(
            root / "draft",
            config,
            table,
            vocab=layer["vocab_size"],
            draft_vocab=config["draft_vocab_size"],
            shards=8,
        )
        target = root / "target"
        target.mkdir()
        (target / "config.json").write_text(json.dumps(demo_config("kimi-k2-instruct.config.json")))
        size = sum(p.stat().st_size for p in draft.iterdir())

        hub = FakeHub()
        hub.add_repo("bench/kimi-k2-eagle3", draft)
        hub.add_repo("bench/kimi-k2", target)
        with hub:
            os.environ.update(hub_env(hub.endpoint, root / "hf-home"))
            # huggingface_hub reads these at import; import it only now.
            from draftfit.checker import check_path

            start = time.perf_counter()
            report = check_path("hf://bench/kimi-k2-eagle3", target="hf://bench/kimi-k2")
            wall = time.perf_counter() - start
            requests = len(hub.requests)
            sent = hub.bytes_sent

        print(f"checkpoint   {size / 1e9:10.2f} GB in 8 shards ({len(table)} tensors)")
        print(
            f"transferred  {sent / 1e3:10.1f} KB in {requests} requests "
            f"({sent / size * 100:.6f} % of the checkpoint)"
        )
        print(
            f"verdict      {report.engines[0].title}: {report.engines[0].verdict} "
            f"in {wall:.2f} s (loopback)"
        )


if __name__ == "__main__":
    main()
