"""What every engine's launch checks share (DF550-DF559): where a finding points, and the
checks that differ between engines only in how the launch spells things (:class:`Spelling`).
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

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.draft.description import EAGLE3
from draftfit.engines.remote_code import FACT as REMOTE_CODE_FACT
from draftfit.engines.remote_code import remote_code_at
from draftfit.engines.serve import first_release_where, hub_repo_id
from draftfit.escape import clip
from draftfit.location import Location
from draftfit.records import frozen
from draftfit.rule_ids import Consequence
from draftfit.serve.settings import dashed_flag as dashed

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.launch_judgement import ReleaseLaunch
    from draftfit.engines.procedure.state import BuildState
    from draftfit.engines.profile import Profile
    from draftfit.serve.settings import ServeSettings

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.DRAFT_PATH_MISSING,
    rule_ids.SERVE_SETTING_INVALID,
    rule_ids.REMOTE_CODE_NOT_TRUSTED,
)
EMITS_STAGE = "engine launch checks: those every engine shares"

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


def draft_path_is_folder(state: BuildState, s: ServeSettings, sp: Spelling) -> None:
    """A draft path that exists here and is not a folder (a file, a device): no engine
    loads a checkpoint from it. One that does not exist is judged by :func:`launch_paths`
    where the release's path lookup was read."""
    path = s.draft_model
    if not path or not os.path.lexists(path) or os.path.isdir(path):
        return
    key = s.draft_path_key or sp.draft_key
    state.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"the draft path `{clip(path)}` (`{key}`) is not a folder: {state.title} loads a "
        "draft checkpoint from a folder (or a Hub id) and fails at start-up",
        located(s, f"/speculative_config/{key}"),
        (),
        fix="name the draft's folder",
    )


# Where the release's path lookup was read (`model_path_lookup` in the engine data).
PATH_LOOKUP = "model_path_lookup"
# How a serve recipe names a target it was not given (never a path to judge).
TARGET_PLACEHOLDER = "<target>"


def launch_paths(state: BuildState, s: ServeSettings, sp: Spelling, target_flag: str) -> None:
    """A draft or target path of the launch that is not a folder here and not a Hub
    repository id either (`./draft`, `/models/draft`, `~/draft`): the release looks a path
    that is not a folder up as a Hub id, and refuses one that cannot be (fact
    `model_path_lookup`), while it builds the model configs. A relative path is resolved
    from the current folder, as the engine resolves it from its own; a Hub-shaped name is
    looked up on the Hub or in its cache by the engine and is not judged, and neither is the
    draft path of a serve recipe that converts the draft first (its folder is not written
    while the recipe is checked)."""
    if state.value(PATH_LOOKUP) != "local-or-hub-id":
        return
    draft_key = s.draft_path_key or sp.draft_key
    named = [
        ("draft", s.draft_model, f"`{draft_key}`", f"/speculative_config/{draft_key}"),
        ("target", s.target_model, f"`{target_flag}`", "/" + target_flag.lstrip("-")),
    ]
    for whose, path, setting, pointer in named:
        if not path or path == TARGET_PLACEHOLDER or os.path.lexists(path):
            continue
        if path.startswith("~") and os.path.lexists(os.path.expanduser(path)):
            continue  # an unquoted `~` is the shell's to expand before the engine sees it
        if hub_repo_id(path) or (whose == "draft" and state.checkpoint.planned):
            continue  # looked up on the Hub; or a recipe's converted folder, not written yet
        home = (
            " (a `~` is expanded by the shell only outside quotes, and never by the engine;"
            " expanded, it names nothing here either)"
            if path.startswith("~")
            else ""
        )
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"the {whose} path `{clip(path)}` ({setting}) does not exist here (resolved from "
            f"the current folder, as the engine resolves it from the folder it runs in){home}, "
            f"and it is not a Hub repository id: {state.title} refuses it while it builds the "
            "model configs (`Invalid repository ID or local directory specified`) and does "
            "not start",
            located(s, pointer),
            (PATH_LOOKUP,),
            fix=f"name the {whose}'s folder as the engine's working folder sees it (or its "
            "Hub id `OWNER/NAME`); if the launch runs on another machine, run draftfit there",
        )


def remote_code_trusted(state: BuildState, s: ServeSettings, flag: str) -> None:
    """A whole launch without `flag` (the release's trust-remote-code flag) whose target's or
    draft's config names code of its own for `AutoConfig` with a model type the release
    does not read natively (fact `config_model_types`): Transformers refuses that config
    without running its code, and the engine does not start (DF560). A launch that gives
    only some flags is not judged: the flag may be among the others."""
    if s.trust_remote_code or not s.full_launch:
        return
    target = state.target.config if state.target is not None else None
    found = remote_code_at(state.profile, state.checkpoint.config, target)
    if not found.needed:
        return
    checked = (state.checkpoint.config, target)
    fixed_in = first_release_where(
        state.profile,
        lambda later: not (code := remote_code_at(later, *checked)).needed and not code.unread,
    )
    types = ", ".join(f"`{clip(c.model_type)}`" for c in found.needed if c.model_type)
    upgrade = (
        f", or serve with {state.profile.data.title} {fixed_in} or later, "
        f"which reads {types} natively"
        if fixed_in and types
        else ""
    )
    for code in found.needed:
        state.refuse(
            rule_ids.REMOTE_CODE_NOT_TRUSTED,
            f"the launch has no `{flag}`, and the {code.whose}'s config.json names code of its "
            f"own (`auto_map.AutoConfig`: `{clip(code.code)}`) with {code.shown_type}, for "
            f"which {state.title} has no class (neither its own nor Transformers "
            f"{found.transformers}'s): Transformers refuses the config without running that "
            "code (`... contains custom code which must be executed to correctly load the "
            "model ...`) and the server does not start",
            located(s, "/trust_remote_code"),
            (REMOTE_CODE_FACT,),
            fix=f"add `{flag}` (read that code first: the engine runs it){upgrade}",
        )


def release_launch(state: BuildState) -> ReleaseLaunch:
    """What the engine's launch part decided about the launch at this release (its grammar,
    what each flag stands for), given with the settings (`BuildInputs.launch`)."""
    judged = state.inputs.launch
    if judged is None:
        raise ValueError("the launch's settings came without its launch part's judgement")
    return judged


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


def _length(value: object) -> float | None:
    """A length or factor as a config writes it (an int or a float, not a bool), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def target_length(config: Mapping[str, Any], rule: Mapping[str, Any]) -> tuple[int, str] | None:
    """The target's own context length as a release derives it from its config.json (`rule`:
    the release's `..._over_target` fact), with the key it came from; None where the config
    names none and the release then takes the launch's length as given."""
    lengths = ((_length(config.get(k)), str(k)) for k in rule.get("keys") or ())
    found = [(n, k) for n, k in lengths if n is not None]
    first = bool(rule.get("first"))
    length: float
    if first:
        length, key = found[0] if found else (rule.get("default", 2048), "default")
    elif found:
        length, key = min(found)
        overriding = _length(config.get("model_max_length"))
        if overriding:
            length, key = overriding, "model_max_length"
    else:
        return None
    scaling = config.get("rope_scaling") or config.get("rope_parameters")
    if isinstance(scaling, Mapping):
        rope_type = scaling.get("rope_type", scaling.get("type"))
        stated = _length(scaling.get("factor"))
        factor = 1 if stated is None else stated
        if first:
            if "original_max_position_embeddings" in scaling or rope_type == "llama3":
                factor = 1
        elif rope_type in (rule.get("unscaled_rope") or ()) or "gemma3" in str(
            config.get("model_type", "")
        ):
            factor = 1
        elif rope_type == "yarn" and rule.get("yarn_from_original"):
            original = _length(scaling.get("original_max_position_embeddings"))
            length = length if original is None else original
        length = length * factor
    return int(length), key


def context_over_target(state: BuildState, s: ServeSettings, key: str, flag: str) -> None:
    """A launch context length (`flag`) longer than the target's own: the release refuses
    it while it builds the target's model config, unless the launch sets the variable the
    release reads to allow it (fact `key`; nothing is judged where it was not read)."""
    asked = s.context_length
    if asked is None or asked < 0 or s.allow_longer_context or state.target is None:
        return  # an allowed longer context: positions past the target's are the launch's risk
    rule = state.value(key)
    if not isinstance(rule, Mapping):
        return
    derived = target_length(state.target.text_config, rule)
    if derived is None or asked <= derived[0]:
        return
    length, source = derived
    env = str(rule.get("env", ""))
    where = f"`{source}` in its config.json" if source != "default" else "its default"
    state.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"`{flag} {asked}` is longer than the target's own context length, {length} "
        f"({where}): {state.title} raises ValueError while it builds the target's model "
        f"config and does not start, unless {env}=1 is set",
        located(s, "/" + flag.lstrip("-")),
        (key,),
        fix=f"cap `{flag}` at {length}, or set {env}=1 only if the target is known to serve "
        f"longer contexts (past {length} positions it can give NaNs or out-of-bounds errors)",
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


def same_draft(state: BuildState, named: str) -> bool | None:
    """Whether the draft path a launch names is the checked draft, as the engine resolves
    it: a folder relative to the engine's working folder (here), or a Hub id matched
    against `hf://` or a Hub cache folder. None when it cannot be told (a path that is not
    a folder here may be the serving machine's; a Hub id where the checked draft's
    repository is not known)."""
    from draftfit.origins.hub import PREFIX  # only a launch's draft path is compared

    source = state.checkpoint.origin
    if os.path.isdir(named):
        if source.startswith(PREFIX):
            return False
        return os.path.realpath(named) == os.path.realpath(source)
    repo = source[len(PREFIX) :].split("@", 1)[0] if source.startswith(PREFIX) else None
    repo = repo or (
        state.checkpoint.hub_origin.repo_id if state.checkpoint.hub_origin is not None else None
    )
    hub_like = named.count("/") == 1 and not named.startswith((".", "/", "~"))
    if hub_like and repo is not None:
        return named == repo
    return None  # a path of the serving machine, or a Hub id of unknown weights


def draft_is_checked(
    state: BuildState,
    s: ServeSettings,
    key: str,
    pointer: str,
    missing: str,
    consequence: Consequence | None = None,
) -> None:
    """A whole launch that names no draft (`missing`: what the engine does then, and
    `consequence` where that is not a refusal) or another draft than the checked one; `key`
    names the draft path's setting, `pointer` where."""
    if s.draft_model is None:
        state.refuse(
            rule_ids.DRAFT_PATH_MISSING,
            f"the launch names no draft (`{key}`): {missing}; the checked draft is not what runs",
            located(s, pointer),
            (),
            fix=f"name the draft's folder with `{key}`",
            consequence=consequence,
        )
        return
    if same_draft(state, s.draft_model) is not False:
        return
    state.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"the launch's draft path `{clip(s.draft_model)}` (`{key}`) is not the checked "
        f"draft `{clip(state.checkpoint.origin)}` (paths resolved from the current folder, as the "
        "engine resolves them from its own): the checked draft is not what runs",
        located(s, pointer),
        (),
        fix=f"check the draft the launch serves (`draftfit check {clip(s.draft_model)}`), "
        "or name the checked draft in the launch",
        consequence=Consequence.DRAFT_NOT_SERVED,
    )


def located(settings: ServeSettings, pointer: str) -> Location:
    return Location(f"{SERVE} ({settings.given_by})", pointer)


def pipeline_stages(state: BuildState, s: ServeSettings) -> int | None:
    """The pipeline-parallel size when it splits an EAGLE-3 target, else None."""
    pp = s.pipeline_parallel_size
    if pp is None or pp < 2 or state.method != EAGLE3:
        return None
    return pp
