"""The draft and its target as facts: what a checkpoint's config and tensors say, in one
engine-neutral form.

`config_schema` (the JSON type of every config field), `tensor_names` (stored -> canonical
tensor names), `dialects` (which producer wrote the draft), `aux_counting` (aux-layer ids
and their counting), `description` (the canonical description of a draft),
`target_rotation` and `target` (the verifier's facts), `mistakes` (arguments given the
wrong way round), `verifier_identity` (the model a draft records it was trained for, next to
what is known of the target), `synth` (full-size sparse checkpoints for the demo and the tests).

`LAYERS` lists the modules lowest first: a module imports only modules of its own entry or
an earlier one (`tests/test_engine_interface.py` checks it).
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("stamped_json",),
    ("config_schema", "tensor_names", "target_rotation", "synth", "mtp"),
    ("dialects", "target", "nextn_export"),
    ("aux_counting",),
    ("description",),
    ("mistakes", "verifier_identity"),
)
