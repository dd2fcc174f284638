"""vLLM: its Engine (:mod:`.engine`), view builder (:mod:`.builder`, with :mod:`.kv` and
:mod:`.head_share`) and data (`data.toml`, compiled to `data.json`).

Importing the package loads only the Engine; the builder loads when a draft is checked.
"""

from draftfit.engines.vllm.engine import VLLM

__all__ = ["VLLM"]
