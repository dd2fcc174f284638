"""SGLang: its Engine (:mod:`.engine`), view builder (:mod:`.builder`) and data
(`data.toml`, compiled to `data.json`).

Importing the package loads only the Engine; the builder loads when a draft is checked.
"""

from draftfit.engines.sglang.engine import SGLANG

__all__ = ["SGLANG"]
