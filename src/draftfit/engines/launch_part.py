"""An engine's launch part: the flags, keys and environment variables draftfit reads from
that engine's launch, the reading every engine shares, and the one judgement of a launch at
a release (:meth:`EngineLaunch.judge`: what the release's parser makes of each flag, the
method the launch selects), which the release's launch checks and the checker read.

Each engine folder's `launch.py` subclasses :class:`EngineLaunch` with its own flag tables
(names and aliases as its argument parser declares them), the command words that start its
launch, and, where the engine has one, how it reads a settings file (vLLM's
`--speculative-config` JSON and `vllm serve --config FILE`, TensorRT-LLM's
`--extra_llm_api_options` YAML). :class:`draftfit.engines.interface.Engine.launch` returns
it, loaded when asked for; :mod:`draftfit.engines.launch` finds the engine of a launch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from draftfit.draft.description import EAGLE, EAGLE3
from draftfit.engines.launch_grammar import launch_grammar
from draftfit.engines.launch_judgement import FlagMeaning, ReleaseLaunch
from draftfit.engines.serve import hub_repo_id, target_source
from draftfit.errors import UsageError
from draftfit.escape import clip
from draftfit.serve.reading import (
    FlagTarget,
    is_flag,
    json_object,
    load_file,
    read_value,
)
from draftfit.serve.settings import ServeSettings, dashed_flag

if TYPE_CHECKING:
    from draftfit.draft.target import Target
    from draftfit.engines.profile import Profile


class EngineLaunch:
    """How draftfit reads one engine's launch.

    Attributes:
        engine: the engine's name (:attr:`ServeSettings.engine`).
        commands: the launch commands, as the words a shell gives (`("vllm", "serve")`).
        shown_command: the command as a message names it.
        flags: flag -> where its value goes (every alias listed).
        booleans: flags that take no value (a store_true); every other flag takes one.
        known: flags that name the models (not settings draftfit reads): skipped with their
            value, not listed as not read.
        model_flags: the flags of `known` that name the target (`--model`, `--model-path`):
            their value is the launch's :attr:`ServeSettings.target_model`.
        model_positional: the command takes the target as its first positional word (`vllm
            serve TARGET`, `trtllm-serve TARGET`).
        hint_flags: flags only this engine has: they name the engine of a bare list of flags.
        env_vars: environment variables assigned before the command that draftfit reads.
        dashes_underscores: the parser reads `_` in a `--` flag name as `-`.
        abbreviations: the parser takes an unambiguous prefix of a long flag (argparse).
        dotted_keys: `--flag.key` sets one key of a JSON flag: the parser reads the flag
            before the dot.
        full_launch_from_command: a launch that starts with the command gives every setting
            (:attr:`ServeSettings.full_launch`).
        json_flag: the flag whose value is a JSON object of settings (`--json-flag.key`
            sets one key); json_keys: the keys of that object draftfit reads.
        config_file_flag: the flag that names a file of the engine's arguments.
        options_file_flag: the flag that names a settings file whose speculative config a
            recipe writes (TensorRT-LLM's `--extra_llm_api_options`), read by `read_config`.
        tuning: what the user chooses rather than what must change (flags, or keys of the
            JSON flag): a serve recipe that edits the launch keeps them.
        speculative_fields: settings only a speculative config gives (they win over the
            same settings of a full launch).
    """

    engine: ClassVar[str]
    commands: ClassVar[tuple[tuple[str, ...], ...]] = ()
    shown_command: ClassVar[str] = ""
    flags: ClassVar[Mapping[str, FlagTarget]] = {}
    booleans: ClassVar[frozenset[str]] = frozenset()
    known: ClassVar[frozenset[str]] = frozenset()
    model_flags: ClassVar[frozenset[str]] = frozenset()
    model_positional: ClassVar[bool] = False
    hint_flags: ClassVar[frozenset[str]] = frozenset()
    env_vars: ClassVar[Mapping[str, FlagTarget]] = {}
    dashes_underscores: ClassVar[bool] = False
    abbreviations: ClassVar[bool] = False
    dotted_keys: ClassVar[bool] = False
    full_launch_from_command: ClassVar[bool] = False
    json_flag: ClassVar[str | None] = None
    json_keys: ClassVar[Mapping[str, FlagTarget]] = {}
    config_file_flag: ClassVar[str | None] = None
    options_file_flag: ClassVar[str | None] = None
    tuning: ClassVar[frozenset[str]] = frozenset()
    speculative_fields: ClassVar[frozenset[str]] = frozenset()

    # ------------------------------------------------------------------ the judgement
    def judge(
        self, settings: ServeSettings, profile: Profile, target: Target | None
    ) -> ReleaseLaunch:
        """What `profile`'s release makes of the launch `settings` (next to the checked
        `target`), decided once before the draft is built: what its parser makes of each
        flag (its grammar, where read), the method the launch selects, and why the launch
        is not all judged there. The release's launch checks and the checker read it."""
        grammar = launch_grammar(profile)
        written: tuple[FlagMeaning, ...] = ()
        accepted: tuple[str, ...] = ()
        refused: tuple[str, ...] = ()
        unjudged: tuple[str, ...] = ()
        # flags draftfit does not read; a dotted `--flag.key` names a key of a JSON flag,
        # which the key checks judge
        unread = [flag for flag in settings.ignored_flags if flag.startswith("-")]
        if grammar is not None:
            written = tuple(
                FlagMeaning(base, tuple(grammar.meaning(base)))
                for base in (self.parsed_flag(f) for f in dict.fromkeys(settings.flags_written))
            )
            judged = [flag for flag in unread if "." not in flag]
            refused = tuple(flag for flag in judged if len(grammar.meaning(flag)) != 1)
            accepted = tuple(flag for flag in judged if flag not in refused)
        elif unread:
            unjudged = (
                f"the launch's flags {', '.join(unread)} were not checked: {profile.title}'s "
                "argument parser was not read",
            )
        return ReleaseLaunch(
            profile.key,
            settings,
            grammar,
            written,
            accepted,
            refused,
            method=self.selected_method(settings, profile),
            method_left_to_engine=self.method_left_to_engine(settings),
            unjudged=unjudged,
            other_target=tuple(other_target_reason(settings, target)),
        )

    def selected_method(self, settings: ServeSettings, profile: Profile) -> str | None:
        """The draftfit method (`eagle3`, `eagle`) that the method the launch names selects
        at `profile`'s release; None when it names none of them. None by default: the
        checked method stays the draft's own."""
        return None

    def method_left_to_engine(self, settings: ServeSettings) -> bool:
        """Whether the launch names a draft but no method, so that the release resolves the
        method itself (and that is what is checked). False by default: the engine takes
        the method from a flag or key of its own."""
        return False

    def parsed_flag(self, flag: str) -> str:
        """The flag its parser reads for `flag` as the launch writes it (before a `.key`
        where the parser reads dotted keys)."""
        return flag.split(".", 1)[0] if self.dotted_keys else flag

    # ------------------------------------------------------------------ spelling
    def normalised(self, flag: str) -> str:
        """`flag` as the engine's parser reads it (vLLM: underscores as dashes)."""
        return dashed_flag(flag) if self.dashes_underscores else flag

    def same_flag(self, a: str, b: str) -> bool:
        """Whether two spellings name one flag (an alias, vLLM's underscores)."""
        a, b = self.normalised(a), self.normalised(b)
        if a == b:
            return True
        return a in self.flags and b in self.flags and self.flags[a] == self.flags[b]

    def spellings(self, flag: str) -> tuple[str, ...]:
        """`flag` and its aliases, as the flag table writes them."""
        target = self.flags.get(flag)
        if target is None:
            return (flag,)
        return (flag, *(name for name, other in self.flags.items() if other == target))

    def unabbreviated(self, flag: str) -> str:
        """`flag` as the one flag draftfit reads that it abbreviates (argparse takes a unique
        prefix of a long flag: `--speculative-algo` is `--speculative-algorithm`), else as
        written. Whether the release's parser takes the abbreviation (another flag of its
        may share the prefix) is judged per release (DF559)."""
        if not self.abbreviations or not flag.startswith("--") or "." in flag:
            return flag
        names = [*self.flags, *self.known, *self.booleans]
        if flag in names:
            return flag
        matches = {name for name in names if name.startswith(flag)}
        return matches.pop() if len(matches) == 1 else flag

    def command_at(self, words: Sequence[str], index: int) -> tuple[str, ...] | None:
        """The command of this engine that starts at `words[index]`, if any."""
        for command in self.commands:
            if tuple(words[index : index + len(command)]) == command:
                return command
        return None

    def _dotted_target(self, flag: str) -> FlagTarget | None:
        """`--json-flag.key`: the target of that key of the JSON flag."""
        if self.json_flag is None or not flag.startswith(self.json_flag + "."):
            return None
        return self.json_keys.get(flag.split(".", 1)[1])

    # ------------------------------------------------------------------ settings files
    def config_score(self, data: Mapping[str, Any]) -> int:
        """How surely the `--serve-config` mapping `data` holds this engine's settings (0:
        not at all); the highest score reads it, the first engine on a tie."""
        return 0

    def read_config(self, data: Mapping[str, Any], given_by: str) -> ServeSettings:
        """The settings the `--serve-config` mapping `data` gives."""
        raise UsageError(f"{given_by}: draftfit reads no settings file of {self.engine}")

    def with_options(
        self, data: Mapping[str, Any], base: ServeSettings, what: str
    ) -> ServeSettings:
        """`base` with the settings file `data` the launch names applied; `what` names the
        file in errors."""
        raise UsageError(f"{what}: draftfit reads no settings file of {self.engine}")

    def with_config_file(
        self, settings: ServeSettings, name: str, json_given: bool
    ) -> ServeSettings:
        """`settings` completed by the file of engine arguments `name` the launch names."""
        return settings

    def with_json(self, data: Mapping[str, Any], settings: ServeSettings) -> ServeSettings:
        """`settings` with the JSON flag's object `data` read."""
        return settings

    # ------------------------------------------------------------------ the command line
    def read_args(
        self,
        words_given: Sequence[str],
        words: Sequence[str],
        assignments: Sequence[tuple[str, str]],
        rest: Sequence[str],
    ) -> ServeSettings:
        """The settings of a launch of this engine: `assignments` are the `NAME=value` words
        before the command, `rest` the words after it (all of `words` for flags alone)."""
        values: dict[str, Any] = {}
        ignored: list[str] = []
        written: list[str] = []
        unreadable: list[str] = []
        for name, text_value in assignments:
            env_target = self.env_vars.get(name)
            if env_target is None or not text_value:
                ignored.append(name)
                continue
            values[env_target.field] = read_value(env_target, text_value, f"--serve-args: {name}")
        json_data: Mapping[str, Any] | None = None
        options: tuple[str, str] | None = None  # a settings file the launch names
        config_file: str | None = None  # a file of engine arguments
        after_command = len(rest) < len(words)
        positional: str | None = None  # the command's first positional word
        named: str | None = None  # the target a model flag names
        index = 0
        while index < len(rest):
            word = rest[index]
            index += 1
            if not word.startswith("-") or word == "-":
                # the model, or a value of a flag not read
                if positional is None and after_command and self.model_positional:
                    positional = word
                continue
            flag, inline = word.split("=", 1) if "=" in word else (word, None)
            flag = self.normalised(flag)
            written.append(flag)
            flag = self.unabbreviated(flag)
            if flag in self.known:
                value_word = inline
                takes = flag not in self.booleans and inline is None
                if takes and index < len(rest) and not is_flag(rest[index]):
                    value_word = rest[index]
                    index += 1
                if flag in self.model_flags and value_word is not None:
                    named = value_word
                continue
            target = self.flags.get(flag)
            if target is None:
                target = self._dotted_target(flag)
            takes_value = flag not in self.booleans
            value: str | None = inline
            if takes_value and value is None:
                if index < len(rest) and not is_flag(rest[index]):
                    value = rest[index]
                    index += 1
                elif target is not None:
                    unreadable.append(f"{flag}: expected one argument")
                    continue
            if flag == self.config_file_flag and value:
                config_file = value  # engine arguments as YAML, read below
                continue
            if target is None:
                ignored.append(flag)
                continue
            what = f"--serve-args: {flag}"
            if target.kind == "yaml-file":
                options = (flag, value or "")
                continue
            # A value the engine's parser cannot convert stops the launch there: a finding
            # for each release (DF559), not a usage error of draftfit's.
            try:
                if target.kind == "json":
                    json_data = {**(json_data or {}), **json_object(value or "", what)}
                    continue
                values[target.field] = read_value(target, True if value is None else value, what)
            except UsageError as exc:
                unreadable.append(str(exc).removeprefix("--serve-args: "))
        model = named if named is not None else positional
        if model is not None:
            values["target_model"] = model
        settings = ServeSettings(
            self.engine,
            "--serve-args",
            **values,
            ignored_flags=tuple(ignored),
            unreadable_values=tuple(unreadable),
            flags_written=tuple(written),
            full_launch=len(rest) < len(words) and self.full_launch_from_command,
            words=tuple(words_given),
        )
        if config_file is not None:
            settings = self.with_config_file(settings, config_file, json_data is not None)
        if options is not None:
            what = f"--serve-args: {options[0]} {clip(options[1])}"
            data = load_file(options[1], what, "the path is read from the current directory")
            return self.with_options(data, settings, what)
        if json_data is None:
            return settings
        return self.with_json(json_data, settings)


def eagle_method(named: str | None) -> str | None:
    """`eagle3` or `eagle` when the method a launch names is one of them (any spelling
    case), else None (no method named, or another kind)."""
    name = (named or "").strip().lower()
    return name if name in (EAGLE3, EAGLE) else None


def same_target(named: str, target: Target) -> bool | None:
    """Whether the target path a launch names is the checked target, as the engine resolves
    it: a folder relative to the engine's working folder (here), or a Hub id matched against
    the checked target's (an `hf://` target, or a folder of the Hub cache). None when it
    cannot be told (a path that is no folder here; a Hub id next to a checked folder, which
    may be its download)."""
    source = target_source(target)
    if os.path.isdir(named):
        if source is not None and source.hub and not os.path.isdir(target.origin):
            return None  # a folder here, a Hub repository checked: maybe its download
        return os.path.realpath(named) == os.path.realpath(target.origin)
    if hub_repo_id(named) and source is not None and source.hub:
        return named == source.name
    return None


def other_target_reason(settings: ServeSettings | None, target: Target | None) -> list[str]:
    """Why a verdict is not proof when the launch serves another target than the checked
    one (`--target`): the findings are for the checked target, and what runs was not checked."""
    named = settings.target_model if settings is not None else None
    if not named or target is None or same_target(named, target) is not False:
        return []
    return [
        f"the launch serves the target `{clip(named)}`, not the checked target "
        f"`{clip(target.origin)}` (check with `--target {clip(named)}`)"
    ]
