"""vLLM: its Engine (:mod:`.engine`), its procedure (:mod:`.procedure`: the steps in
:mod:`.method`, :mod:`.route`, :mod:`.eagle3`, :mod:`.capture`, :mod:`.quantization`,
:mod:`.tensors` and :mod:`.target`, with :mod:`.kv` and :mod:`.head_share`) and data
(`data.toml`, compiled to `data.json`).

Importing the package loads only the Engine; the procedure loads when a draft is checked.
"""

from draftfit.engines.vllm.engine import VLLM

__all__ = ["VLLM"]
