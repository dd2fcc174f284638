"""vLLM and the draft's attention geometry next to the target's: KV page size, head size.

vLLM keeps the draft's attention layers in the same paged KV cache as the target's, and
picks an attention backend per layer from its head size. Both depend on the release
(data: `kv_page_size_uniform`, `draft_head_size_backend`); this module turns the two
configs' geometry (:mod:`.kv_geometry`) into the events a release's behaviour warrants.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.draft.target import Target
from draftfit.engines.kv_geometry import KvGeometry, geometry_of, target_geometry
from draftfit.engines.profile import Profile
from draftfit.engines.serve import first_release_where
from draftfit.engines.view import Event
from draftfit.location import config_at

if TYPE_CHECKING:
    from typing import Any

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.DRAFT_KV_PAGE_SIZE_REFUSED,
    rule_ids.DRAFT_HEAD_SIZE_UNSUPPORTED,
    rule_ids.DRAFT_HEAD_SIZE_FALLBACK,
    rule_ids.DRAFT_KV_TRANSFER_SIZE_DIFFERS,
)
EMITS_STAGE = "engine procedure: vLLM's KV-cache geometry"

PAGE_FACT = "kv_page_size_uniform"
HEAD_FACT = "draft_head_size_backend"
NIXL_FACT = "nixl_uniform_kv_tensor_size"


def kv_geometry_events(
    profile: Profile, visible: Mapping[str, Any], target: Target, pointer: str
) -> list[Event]:
    """What this release does with the draft's KV geometry next to the target's: nothing
    for an MLA draft or target (no per-head KV geometry to compare) or a config without
    the fields. `pointer` is the draft's decoder-layer config (JSON pointer)."""
    draft = geometry_of(visible)
    verifier = target_geometry(target)
    if draft is None or verifier is None:
        return []
    events = _page_size(profile, draft, verifier, pointer)
    head = _head_size(profile, draft, verifier, pointer)
    if head is not None:
        events.append(head)
    return events


def _field(draft: KvGeometry, verifier: KvGeometry, pointer: str) -> str:
    """The draft config field that makes the geometry differ (head_dim first)."""
    if draft.head_dim != verifier.head_dim:
        return f"{pointer}/head_dim" if draft.declared else f"{pointer}/num_attention_heads"
    return f"{pointer}/num_key_value_heads"


def _tp_note(draft: KvGeometry, verifier: KvGeometry) -> str:
    """Where only the KV head counts differ, the tensor-parallel size at which each GPU
    holds one KV head of each (vLLM replicates KV heads beyond their count)."""
    if draft.head_dim != verifier.head_dim:
        return ""
    widest = max(draft.kv_heads, verifier.kv_heads)
    return (
        f" (at a tensor-parallel size of {widest} or more each GPU holds one KV head of each "
        "and the sizes match)"
    )


def _page_size(
    profile: Profile, draft: KvGeometry, verifier: KvGeometry, pointer: str
) -> list[Event]:
    if draft.per_token == verifier.per_token:
        return []
    uniform = profile.value(PAGE_FACT)
    if uniform is False:
        return _transfer(profile, draft, verifier, pointer)
    if uniform is not True:
        return []
    tp_note = _tp_note(draft, verifier)
    later = first_release_where(profile, lambda p: p.value(PAGE_FACT) is False)
    retrain = f"a draft trained with the target's KV geometry ({verifier.describe()})"
    fix = (
        f"use vLLM {later} or later (it puts full-attention layers of different page sizes "
        f"in one KV-cache group), or {retrain}"
        if later
        else f"use {retrain}"
    )
    return [
        Event(
            rule_ids.DRAFT_KV_PAGE_SIZE_REFUSED,
            f"the draft caches {draft.describe()} per layer ({draft.per_token} per token), "
            f"the target {verifier.describe()} ({verifier.per_token}): {profile.title} keeps "
            "both in one paged KV cache that needs one page size for every layer, so start-up "
            f"fails with `NotImplementedError` while it configures the KV cache{tp_note}",
            config_at(_field(draft, verifier, pointer)),
            profile.citations(PAGE_FACT),
            fix,
        )
    ]


def _transfer(
    profile: Profile, draft: KvGeometry, verifier: KvGeometry, pointer: str
) -> list[Event]:
    """A note where the KV cache takes layers of different sizes but the NIXL connector of
    prefill/decode disaggregation asserts one tensor size."""
    assertion = profile.value(NIXL_FACT)
    if not isinstance(assertion, str):
        return []
    later = first_release_where(profile, lambda p: p.value(NIXL_FACT) is False)
    retrain = f"a draft trained with the target's KV geometry ({verifier.describe()})"
    return [
        Event(
            rule_ids.DRAFT_KV_TRANSFER_SIZE_DIFFERS,
            f"the draft caches {draft.describe()} per layer, the target {verifier.describe()}: "
            f"{profile.title} gives each layer a KV tensor of its own size, which is fine, but "
            "under prefill/decode disaggregation with NixlConnector (--kv-transfer-config) "
            f"start-up fails with `{assertion}` while the KV "
            f"caches are registered{_tp_note(draft, verifier)}",
            config_at(_field(draft, verifier, pointer)),
            profile.citations(NIXL_FACT, PAGE_FACT),
            "without prefill/decode disaggregation, nothing; with it, "
            + (
                f"use vLLM {later} or later (the assertion is gone) or {retrain}"
                if later
                else f"use {retrain}"
            ),
        )
    ]


def _head_size(
    profile: Profile, draft: KvGeometry, verifier: KvGeometry, pointer: str
) -> Event | None:
    how = profile.value(HEAD_FACT)
    if not isinstance(how, dict) or how.get("unsupported") == "next":
        return None
    sizes = how.get("sizes") or []
    backend = how.get("backend", "FlashAttention")
    if draft.head_dim in sizes or verifier.head_dim not in sizes:
        return None  # a target the default backend refuses is served otherwise anyway
    listed = ", ".join(str(s) for s in sizes)
    where = config_at(f"{pointer}/head_dim" if draft.declared else f"{pointer}/num_attention_heads")
    size = f"head size {draft.head_dim}" + ("" if draft.declared else " (derived)")
    later = first_release_where(
        profile, lambda p: (p.value(HEAD_FACT) or {}).get("unsupported") == "next"
    )
    fix = f"a draft whose head_dim is one of {listed}"
    fix = (
        f"use vLLM {later} or later (it gives the draft's layers a backend that takes their "
        f"head size, with that backend's metadata), or {fix}"
        if later
        else f"use {fix}"
    )
    if how.get("unsupported") == "refused":
        return Event(
            rule_ids.DRAFT_HEAD_SIZE_UNSUPPORTED,
            f"the draft's attention has {size}; on GPUs of compute capability 8.0 or newer "
            f"{profile.title} serves every layer with {backend}, which takes head sizes "
            f"{listed} only, so start-up fails with `Head size {draft.head_dim} is not supported "
            f"by {backend}` (the target's {verifier.head_dim} is fine; older GPUs get another "
            "backend)",
            where,
            profile.citations(HEAD_FACT),
            fix,
        )
    return Event(
        rule_ids.DRAFT_HEAD_SIZE_FALLBACK,
        f"the draft's attention has {size}, which {backend} does not take ({listed}): "
        f"where {profile.title} defaults to {backend} (compute capability 8.0 or newer) it "
        f"gives the draft's layers {how.get('unsupported')} instead, while its EAGLE proposer "
        f"builds the draft's attention metadata with the target's first attention group "
        f"({backend}): the draft's layers get another backend's metadata",
        where,
        profile.citations(HEAD_FACT),
        fix,
    )
