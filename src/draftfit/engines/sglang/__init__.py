"""SGLang: its Engine (:mod:`.engine`), its procedure (:mod:`.procedure`: the steps in
:mod:`.classes`, :mod:`.route`, :mod:`.eagle3`, :mod:`.capture`, :mod:`.tensors` and
:mod:`.target`) and data (`data.toml`, compiled to `data.json`).

Importing the package loads only the Engine; the procedure loads when a draft is checked.
"""

from draftfit.engines.sglang.engine import SGLANG

__all__ = ["SGLANG"]
