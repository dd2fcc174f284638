"""What every engine's launch checks share (DF559): where a finding points, how an engine
spells its launch (:class:`Spelling`), and the checks of the method and the flags, which
differ between engines only in that spelling. The shared checks of paths and trust are in
:mod:`draftfit.engines.launch_paths`, those of the context length and the pipeline in
:mod:`draftfit.engines.launch_context`.
What the release's parser makes of each flag, and the method the launch selects, were
decided once by the engine's launch part (a
:class:`~draftfit.engines.launch_judgement.ReleaseLaunch`, given to the procedure with the
settings); the checks here read that decision.

Each engine's folder holds its own settings checks (`engines/<engine>/launch_checks.py`),
run by its launch step only when settings were given for this engine (`--serve-config`,
`--serve-args`); each check reads the settings
(:class:`~draftfit.serve.settings.ServeSettings`) and the engine data, and emits an event
tagged with the rule that reports it (:mod:`draftfit.rules.serving`). Without settings
these rules are skipped, not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.escape import clip
from draftfit.location import Location
from draftfit.records import frozen
from draftfit.rule_ids import Consequence
from draftfit.serve.settings import dashed_flag as dashed

if TYPE_CHECKING:
    from draftfit.engines.launch_judgement import ReleaseLaunch
    from draftfit.engines.procedure.state import BuildState
    from draftfit.engines.profile import Profile
    from draftfit.serve.settings import ServeSettings

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.SERVE_SETTING_INVALID,)
EMITS_STAGE = "engine launch checks: the method and flags every engine shares"

SERVE = "serving settings"


@frozen
class Spelling:
    """How one engine's launch spells what the shared checks judge.

    Attributes:
        prog: how its argument parser names itself in an error (`vllm serve`).
        command: the words after which its flags start, for the switch check.
        model_positional: the command takes the model as its one positional word.
        dotted: `--flag.key` sets one key of a JSON flag (the flag is the part before the dot)
            and `_` in a flag name reads as `-`.
        flag_hints: flags that releases renamed or never had, and what to write instead.
        method_flag: the setting that names the method; method_pointer: where it points;
            method_facts: the facts the method names come from; method_exact_case: whether
            the release takes the name only as written.
        draft_key: how the draft path's setting is named when the launch does not say.
    """

    prog: str = ""
    command: tuple[str, ...] = ()
    model_positional: bool = False
    dotted: bool = False
    flag_hints: Mapping[str, str] | None = None
    method_flag: str = "method"
    method_pointer: str = "/method"
    method_facts: tuple[str, ...] = ()
    method_exact_case: bool = False
    draft_key: str = "draft model path"

    def flag(self, word: str) -> str:
        """`word` as the parser reads the flag (before a dot, dashes for underscores)."""
        return dashed(word).split(".", 1)[0] if self.dotted else word


# A quantization method's name (`fp8`, `awq_marlin`, `compressed-tensors`, `modelopt_fp4`).
_METHOD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


def method_known(
    state: BuildState,
    s: ServeSettings,
    sp: Spelling,
    known: Sequence[str],
    known_at: Callable[[Profile], Sequence[str]] | None = None,
) -> None:
    """A method name that is not one of this release's EAGLE methods (`known`, as the
    launch writes them; nothing is judged when empty). `known_at` gives a later release's
    names, to say which release first has the draft's own method when this one lacks it."""
    named = s.method
    if named is None or not known:
        return
    own = state.draft.method
    lowered = named.strip().lower()
    if own is not None and lowered == own.lower() and lowered not in {k.lower() for k in known}:
        _own_method_missing(state, s, sp, named, known, known_at)
        return
    if _names(named, known, sp):
        return
    flag = sp.method_flag
    import difflib  # only when a name is unknown

    close = difflib.get_close_matches(named.lower(), [k.lower() for k in known], n=1)
    use = next((k for k in known if close and k.lower() == close[0]), known[0])
    guess = f". Did you mean `{use}`?" if close else ""
    listed = ", ".join(f"`{k}`" for k in known)
    state.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"`{flag}` is `{clip(named)}`, not a method with which {state.title} serves an EAGLE "
        f"draft ({listed}): the launch is refused while its arguments are parsed, or runs "
        f"another method, and the draft is not served as EAGLE{guess}",
        located(s, sp.method_pointer),
        sp.method_facts,
        fix=f"set `{flag}` to `{use}`",
    )


def _names(named: str, known: Sequence[str], sp: Spelling) -> bool:
    """Whether `named` is one of the `known` method names, as the release's parser reads it.
    vLLM validates the name as written (a Literal of lower-case names: `EAGLE3` is refused,
    vllm/config/speculative.py:1623-1634@v0.34.0); SGLang's algorithm names take any case."""
    if sp.method_exact_case:
        return named in known
    return named.strip().lower() in {k.lower() for k in known}


def _own_method_missing(
    state: BuildState,
    s: ServeSettings,
    sp: Spelling,
    named: str,
    known: Sequence[str],
    known_at: Callable[[Profile], Sequence[str]] | None,
) -> None:
    """The launch names the draft's own method, which this release does not have: no other
    name serves the draft (an EAGLE-3 draft run as EAGLE-1 is refused or drafts garbage),
    so the fix is a release that has it (spelled as that release writes it), not the
    nearest name this one knows."""
    from draftfit.engines.serve import first_release_where

    lowered = named.strip().lower()

    def spelled_at(later: Profile) -> str | None:
        names = known_at(later) if known_at is not None else ()
        return next((k for k in names if k.lower() == lowered), None)

    first = first_release_where(state.profile, lambda later: spelled_at(later) is not None)
    if first is not None:
        spelling = spelled_at(state.profile.data.resolve(first)) or named
        fix = (
            f"use {state.profile.data.title} {first} or later, with `{sp.method_flag}` `{spelling}`"
        )
    else:
        fix = f"use a {state.profile.data.title} release that has it (`draftfit engines`)"
    listed = ", ".join(f"`{k}`" for k in known)
    state.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"`{sp.method_flag}` is `{clip(named)}`, the draft's own method, which {state.title} "
        f"does not have (it serves EAGLE drafts only as {listed}): the launch is refused "
        "while its arguments are parsed, and no other method serves this draft",
        located(s, sp.method_pointer),
        sp.method_facts,
        fix=fix,
    )


def quantization_names(state: BuildState, s: ServeSettings) -> None:
    """A quantization setting that is not a method name (`-1`, `64`)."""
    for field, pointer in (
        ("quantization", "/quantization"),
        ("draft_quantization", "/speculative_config/quantization"),
    ):
        value = getattr(s, field)
        if value is None or _METHOD_NAME.fullmatch(value):
            continue
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"`{pointer[1:]}` is `{clip(value)}`, which names no quantization method: "
            f"{state.title} refuses it at start-up",
            located(s, pointer),
            (),
            fix="give a quantization method by name (`fp8`, `awq`, ...) or leave it out",
        )


def release_launch(state: BuildState) -> ReleaseLaunch:
    """What the engine's launch part decided about the launch at this release (its grammar,
    what each flag stands for), given with the settings (`BuildInputs.launch`)."""
    judged = state.inputs.launch
    if judged is None:
        raise ValueError("the launch's settings came without its launch part's judgement")
    return judged


def parser_checks(state: BuildState, s: ServeSettings, sp: Spelling) -> None:
    """What the release's argument parser makes of the launch line itself, whatever it
    serves: a flag it does not take, a value it cannot read, a word after a switch (the
    checks an MTP launch shares with an EAGLE one)."""
    launch_flags(state, s, sp)
    unreadable_values(state, s, sp)
    value_after_switch(state, s, sp)


def launch_flags(state: BuildState, s: ServeSettings, sp: Spelling) -> None:
    """A flag the release's argument parser does not take (unknown, or an abbreviation two
    of its flags share): the parser prints an error and the server does not start."""
    judged = release_launch(state)
    grammar = judged.grammar
    if grammar is None:
        return
    for item in judged.written:
        if item.taken:
            continue
        base, meant = item.flag, item.meant
        if meant:
            # Every flag the prefix matches, as argparse lists them: the one meant may be
            # any (`--speculative-draft` is `--speculative-draft-model-path` as often as not).
            printed = (
                f"{sp.prog}: error: ambiguous option: {clip(base)} could match {', '.join(meant)}"
            )
            fix = "write the whole flag, one of " + ", ".join(f"`{m}`" for m in meant)
        else:
            printed = f"{sp.prog}: error: unrecognized arguments: {clip(base)}"
            hint = (sp.flag_hints or {}).get(base)
            if hint is None:
                import difflib  # only when a name is unknown

                close = difflib.get_close_matches(base, sorted(grammar.flags), n=2, cutoff=0.75)
                hint = " / ".join(f"`{c}`" for c in close) or None
            fix = f"did you mean {hint}?" if hint else f"leave {base} out"
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"`{clip(base)}`: {state.title}'s argument parser does not take it and the server "
            f"does not start (`{printed}`)",
            located(s, "/" + clip(base.lstrip("-"))),
            ("launch_grammar",),
            fix=fix,
        )


def unreadable_values(state: BuildState, s: ServeSettings, sp: Spelling) -> None:
    """A flag whose value the release's parser cannot convert (not valid JSON, not an
    integer) or that ends the launch without its value: argparse prints an error and the
    server does not start. Where the release's parser was not read, the launch still cannot
    configure the draft as written, so the checked draft is not served as given."""
    grammar = release_launch(state).grammar
    for item in dict.fromkeys(s.unreadable_values):
        flag, _, why = item.partition(": ")
        if "JSON" in why:
            fix = (
                "write the value as one JSON object, every string in double quotes and the "
                'whole in single quotes for the shell: `\'{"method": "eagle3", ...}\'`'
            )
        elif "expected one argument" in why:
            fix = f"give `{clip(flag)}` its value, or leave the flag out"
        else:
            fix = f"give `{clip(flag)}` a value of its type ({clip(why, 80)})"
        where = located(s, "/" + clip(flag.lstrip("-")))
        if grammar is None:
            state.refuse(
                rule_ids.SERVE_SETTING_INVALID,
                f"`{clip(flag)}`: {clip(why, 200)}; the launch cannot set it as written, so "
                f"the checked draft is not served as given (how {state.title}'s parser "
                "reports it was not read)",
                where,
                (),
                fix=fix,
                consequence=Consequence.DRAFT_NOT_SERVED,
            )
            continue
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"`{clip(flag)}`: {clip(why, 200)}; {state.title}'s argument parser cannot read the "
            f"value, prints `{sp.prog}: error: argument {clip(flag)}: ...` and the server "
            "does not start",
            where,
            ("launch_grammar",),
            fix=fix,
        )


def value_after_switch(state: BuildState, s: ServeSettings, sp: Spelling) -> None:
    """vLLM / SGLang: a word after a flag that takes no value (`--enforce-eager true`,
    `--disable-cuda-graph true`) where the parser has no place for it (vLLM once the model
    was named; SGLang's launch_server takes no positional word): it refuses the launch."""
    grammar = release_launch(state).grammar
    if grammar is None or not s.words:
        return
    command = list(sp.command)
    words = list(s.words)
    starts = [i + 2 for i in range(len(words) - 1) if words[i : i + 2] == command]
    if not command or not starts:
        return
    # vLLM's `serve` takes the model as its one positional word; SGLang's takes none.
    model_named = not sp.model_positional
    index = starts[0]
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-") or word == "-":
            model_named = True  # the model (a positional); a second one is judged below
            continue
        if "=" in word:
            continue
        flag = sp.flag(word)
        meant = grammar.meaning(flag)
        if len(meant) != 1:
            return  # an unknown or ambiguous flag is already a finding; stop reading here
        if meant[0] not in grammar.switches:
            index += 1  # its value
            continue
        if index < len(words) and not words[index].startswith("-") and model_named:
            stray = words[index]
            state.refuse(
                rule_ids.SERVE_SETTING_INVALID,
                f"`{clip(word)}` takes no value, so `{clip(stray)}` after it is an extra "
                f"argument: {state.title}'s argument parser refuses the launch (`{sp.prog}: "
                f"error: unrecognized arguments: {clip(stray)}`)",
                located(s, "/" + clip(word.lstrip("-"))),
                ("launch_grammar",),
                fix=f"write `{clip(word)}` alone (it is a switch)",
            )
            return


def located(settings: ServeSettings, pointer: str) -> Location:
    return Location(f"{SERVE} ({settings.given_by})", pointer)
