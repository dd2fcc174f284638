"""The launch checks every engine shares about paths and trust (DF557, DF559, DF560): the
draft and target paths a launch names (a folder, or a Hub id the release can look up), the
draft the launch serves (the checked one), and the remote code a config names without the
release's trust flag. Where a finding points and how an engine spells its launch are in
:mod:`draftfit.engines.launch_checks`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.engines.launch_checks import Spelling, located
from draftfit.engines.remote_code import FACT as REMOTE_CODE_FACT
from draftfit.engines.remote_code import remote_code_at
from draftfit.engines.serve import first_release_where, hub_repo_id
from draftfit.escape import clip
from draftfit.rule_ids import Consequence

if TYPE_CHECKING:
    from draftfit.engines.procedure.state import BuildState
    from draftfit.serve.settings import ServeSettings

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.DRAFT_PATH_MISSING,
    rule_ids.SERVE_SETTING_INVALID,
    rule_ids.REMOTE_CODE_NOT_TRUSTED,
)
EMITS_STAGE = "engine launch checks: the paths and trust every engine shares"


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
