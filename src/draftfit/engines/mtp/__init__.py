"""MTP / NextN drafting: what an engine release builds from a target's own MTP layers.

Built as named steps over one typed build state, not as a builder subclass: `view` (the
typed MTP part of the engine view), `state` (the state, the launch as the MTP build reads
it, the `Step` and `Procedure` types), `steps` (the steps every engine shares, each reading its
engine's data), `exclusions` (whether a quantization config leaves an MTP module
unquantized, under the names an engine gives it), `procedures` (each engine's MTP
procedure). Each engine's own steps and its procedure are in its folder (`vllm/mtp.py`,
`sglang/mtp.py`).

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("view",),
    ("state",),
    ("exclusions", "steps"),
    ("procedures",),
)
