"""SGLang's draft classes (`architectures[0]` picks one, with no rewrite) and the shape
families draftfit builds them as."""

from __future__ import annotations

LLAMA_EAGLE3 = "llama_eagle3"
MLA_EAGLE3 = "mla_eagle3"
LLAMA_EAGLE = "llama_eagle"

CLASS_FAMILY = {
    "LlamaForCausalLMEagle3": LLAMA_EAGLE3,
    "Eagle3DeepseekV2ForCausalLM": MLA_EAGLE3,
    "LlamaForCausalLMEagle": LLAMA_EAGLE,
    "Qwen2ForCausalLMEagle": LLAMA_EAGLE,
}

# How an EAGLE-4 draft is served: only through the eagle-harness plugin (its documentation:
# eagle-hq/EAGLE-4 docs/architecture.md), never by renaming its architecture.
EAGLE4_SERVING = (
    "install the eagle-harness plugin and launch with `--speculative-algorithm "
    "EAGLE_HARNESS` (an EAGLE-4 draft is not an EAGLE-3 draft: renaming its architecture does "
    "not make SGLang load it)"
)
