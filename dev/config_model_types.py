"""Print the `config_model_types` entry of one vLLM or SGLang release: the config `model_type`s
its config loading reads with a class of its own or of Transformers, without remote code.

Run with an engine venv's interpreter (see ../shared/oracle/setup_venv.sh; no GPU, no server):

    ~/vllm-venv/bin/python dev/config_model_types.py > /tmp/types.json
    ~/sglang-venv/bin/python dev/config_model_types.py > /tmp/types.json

Why it matters: a config.json whose `auto_map` names code of its own for `AutoConfig`
(Kimi-K2's `configuration_deepseek.DeepseekV3Config`, Kimi-K2.5's
`configuration_kimi_k25.KimiK25Config`) is loaded without that code, and without
`--trust-remote-code`, only when its `model_type` is one the release reads natively: a type of
the engine's own config registry (vLLM's `_CONFIG_REGISTRY` in
vllm/transformers_utils/config.py; SGLang's in sglang/srt/utils/hf_transformers/common.py,
registered with `AutoConfig`), or a type of Transformers' `CONFIG_MAPPING` in the Transformers
release installed with the engine. Any other type with such an `auto_map` makes Transformers
refuse the config unless the code is trusted ("... contains custom code which must be
executed ..."), and the engine does not start.

It prints one JSON object: the engine and its release, the Transformers release, the model
types (`native`: the union of both registries, sorted) and the `architectures` for which the
engine picks a native config class when the config names no model type (`native_architectures`:
vLLM's `_ARCHITECTURE_TO_MODEL_TYPE`, SGLang's Longcat loader). The engine data's
`config_model_types` entries are this output with their source lines; the script is a
development aid and never runs in the product or its tests.
"""

from __future__ import annotations

import json
from importlib.metadata import version


def vllm_types() -> tuple[str, set[str], set[str]]:
    import vllm.transformers_utils.config as config

    registry = set(config._CONFIG_REGISTRY)
    by_architecture = set(getattr(config, "_ARCHITECTURE_TO_MODEL_TYPE", {}))
    return "vllm", registry, by_architecture


def sglang_types() -> tuple[str, set[str], set[str]]:
    try:  # 0.5.23 and later
        import sglang.srt.utils.hf_transformers.common as common
        import sglang.srt.utils.hf_transformers.config as config
    except ImportError:  # earlier releases kept both in one module
        import sglang.srt.hf_transformers_utils as common  # type: ignore[no-redef]

        config = common
    registry = set(common._CONFIG_REGISTRY)
    by_architecture = set(getattr(config, "_LONGCAT_ARCHS", ()))
    return "sglang", registry, by_architecture


def main() -> None:
    try:
        engine, registry, by_architecture = vllm_types()
    except ImportError:
        engine, registry, by_architecture = sglang_types()
    # Imported after the engine: SGLang registers its classes with AutoConfig on import.
    from transformers import CONFIG_MAPPING

    known = set(CONFIG_MAPPING.keys())
    print(
        json.dumps(
            {
                "engine": engine,
                "release": version(engine),
                "transformers": version("transformers"),
                "engine_registry": sorted(registry),
                "native": sorted(registry | known),
                "native_architectures": sorted(by_architecture),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
