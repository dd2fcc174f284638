"""draftfit: will this speculative-decoding draft load and draft correctly in a serving engine?

The library reads a draft checkpoint without loading its weights, describes it in one
engine-neutral form, and checks it against versioned engine knowledge. The CLI
(`draftfit`) is a thin shell over :func:`draftfit.checker.check_draft`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
