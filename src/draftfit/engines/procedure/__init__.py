"""The engine-neutral procedure: named steps over one typed build state.

An engine resolves a draft by running steps in order (:mod:`.run`): each is a function of
the :class:`~draftfit.engines.procedure.state.BuildState` that records findings and writes
typed parts of the :class:`~draftfit.engines.view.EngineView`; False stops the procedure.
Each engine's folder lists its procedure per drafting method from these shared steps and
its own. The shared ones are here, by concern: class resolution (`classes`), dimensions and
decoder layers (`dimensions`, `layers`), what `fc` reads (`capture`), the vocabulary
(`vocabulary`), quantization (`quantization`), the target (`target`), the loader's walk over
the stored tensors (`tensors`) and the sliding window (`window`); for MTP drafting (the
target's own MTP layers, `by_method["mtp"]`), what every MTP step shares (`mtp_part`), the
shared MTP steps (`mtp_steps`; those that check the shipped layers and tensors,
`mtp_presence`), those of a stand-alone NextN export (`mtp_export`), the
quantization exclusions they match (`mtp_exclusions`, by the name matching of
`mtp_matching`), the method the MTP layers are built with (`mtp_quant_method`), a
quantized MTP layer a release cannot build or load (`mtp_quant_build`) and one that lacks the
scales it loads (`mtp_quant_parts`). The launch's settings are
judged by each engine's launch step (:mod:`draftfit.engines.launch_checks` and the engine's
own `launch_checks`), the KV cache geometry by :mod:`draftfit.engines.kv_geometry`.

`LAYERS` lists the modules lowest first: a module imports only modules of its own entry or
an earlier one.
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("state",),
    (
        "classes",
        "layers",
        "capture",
        "quantization",
        "target",
        "tensors",
        "window",
        "mtp_matching",
        "mtp_exclusions",
    ),
    ("dimensions",),
    ("vocabulary", "run"),
    ("mtp_part",),
    (
        "mtp_steps",
        "mtp_presence",
        "mtp_export",
        "mtp_quant_method",
        "mtp_quant_fix",
        "mtp_quantization",
    ),
    ("mtp_unmapped", "mtp_quant_build", "mtp_quant_parts"),
)
