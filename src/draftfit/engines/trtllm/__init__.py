"""TensorRT-LLM: its Engine (:mod:`.engine`), view builder (:mod:`.builder`) and data
(`data.toml`, compiled to `data.json`).

Importing the package loads only the Engine; the builder loads when a draft is checked.
"""

from draftfit.engines.trtllm.engine import TRTLLM

__all__ = ["TRTLLM"]
