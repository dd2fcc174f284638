"""Read the values of a few *small* tensors (d2t, t2d, norm weights) with numpy.

draftfit never loads the weights; but a handful of tiny tensors decide silent failures
(a vocabulary map out of range, norms left at exactly 1.0 by a converter). Reading them
costs kilobytes. Anything above `limit` bytes, or without a contiguous byte range, is not
read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.checkpoint.dtypes import NUMPY_NAMES
from draftfit.checkpoint.model import Checkpoint, TensorInfo

if TYPE_CHECKING:
    import numpy as np

DEFAULT_LIMIT = 8 * 1024 * 1024


def read_values(
    checkpoint: Checkpoint, info: TensorInfo, limit: int = DEFAULT_LIMIT
) -> np.ndarray | None:
    """The tensor's values as a flat numpy array (BF16 widened to float32), or None."""
    import numpy as np

    if info.byte_range is None:
        return None
    start, end = info.byte_range
    if end - start > limit or end < start:
        return None
    if info.dtype == "BF16":
        dtype = np.dtype("<u2")
    elif info.dtype in NUMPY_NAMES:
        dtype = np.dtype(NUMPY_NAMES[info.dtype]).newbyteorder("<")
    else:
        return None
    path = checkpoint.root / info.file
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            data = handle.read(end - start)
    except OSError:
        return None
    if len(data) != end - start or (end - start) % dtype.itemsize:
        return None
    array = np.frombuffer(data, dtype=dtype)
    if info.dtype == "BF16":
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return array
