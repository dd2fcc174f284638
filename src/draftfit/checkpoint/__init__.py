"""Reading checkpoints without loading tensor data."""

from draftfit.checkpoint.local import load_checkpoint
from draftfit.checkpoint.model import Checkpoint, Damage, TensorInfo

__all__ = ["Checkpoint", "Damage", "TensorInfo", "load_checkpoint"]
