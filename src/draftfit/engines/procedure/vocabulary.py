"""Vocabulary, the part every engine shares: the embedding and the head as the engine
builds them, and whether the head covers fewer tokens than the vocabulary. Each engine's
own steps decide the draft vocabulary, what a missing embedding or head does, and `d2t`."""

from __future__ import annotations

from draftfit.engines import shapes
from draftfit.engines.procedure.dimensions import settled_layer
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.view import Vocabulary
from draftfit.records import frozen


@frozen
class Built:
    """How a parameter is built: what its absence does and the source lines behind it."""

    if_missing: str | None
    citations: tuple[str, ...]


def settled_vocabulary(state: BuildState) -> Vocabulary:
    """The vocabulary the engine's vocabulary step recorded."""
    vocab = state.view.vocabulary
    assert vocab is not None, "the vocabulary is settled before the head is built"
    return vocab


def is_reduced(vocab: Vocabulary) -> bool:
    """Whether the head covers fewer (or other) tokens than the vocabulary."""
    Vd, V = vocab.draft_vocab_size, vocab.vocab_size
    return Vd is not None and V is not None and Vd != V


def expect_embedding(state: BuildState, if_missing: str) -> None:
    """`embed_tokens.weight` [V, H], and what a missing one does."""
    H = settled_layer(state).hidden
    V = settled_vocabulary(state).vocab_size
    state.expect(
        "embed_tokens.weight",
        shapes.embedding(V, H),
        if_missing,
        state.citations("embedding_sharing"),
    )


def expect_head(state: BuildState, head: Built | None) -> None:
    """`lm_head.weight` [Vd, H] as `head` says (None: the draft builds no head)."""
    if head is None:
        return
    H = settled_layer(state).hidden
    Vd = settled_vocabulary(state).draft_vocab_size
    state.expect("lm_head.weight", shapes.lm_head(Vd, H), head.if_missing, head.citations)


def vocabulary_settled(state: BuildState) -> None:
    """Step: record whether the head covers fewer tokens than the vocabulary (once the
    head and `d2t` are built)."""
    vocab = settled_vocabulary(state)
    vocab.reduced = is_reduced(vocab)
