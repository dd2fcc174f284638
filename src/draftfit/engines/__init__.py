"""Engine knowledge (versioned data) and the per-engine resolution of a draft.

Every engine implements :class:`draftfit.engines.interface.Engine` and is listed once in
:mod:`draftfit.engines.registry`; :func:`draftfit.engines.interface.build_view` runs the
profile's engine. An engine's folder holds its Engine, its data and its procedure: named
steps over one build state (:mod:`draftfit.engines.procedure`, where the steps every engine
shares live), with the engine's own steps beside them.

`LAYERS` lists the modules lowest first: a module imports only modules of its own entry or
an earlier one (`tests/test_engine_interface.py` checks it).
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "citation",
        "releases",
        "shapes",
        "kv_geometry",
        "launch_grammar",
        "mtp_view",
        "name_patterns",
        "remote_code",
    ),
    ("compiled", "profile", "launch_judgement"),
    ("data_file",),
    ("view", "serve", "interface"),
    (
        "dimension_fit",
        "draft_quant",
        "launch_checks",
        "launch_context",
        "launch_paths",
        "launch_part",
    ),
    ("procedure",),
    ("vllm", "sglang", "trtllm"),
    ("registry",),
    ("installed", "listing", "launch"),
)
