"""Where a checkpoint comes from: a local folder or a Hugging Face Hub reference.

`hub` reads a Hub repository's headers and configs (no weights); `reference` resolves what
the user named (a path, `hf://org/name@rev`, a Hub cache folder) and opens it.

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (("hub",), ("reference",))
