"""Every rule is one object: the identities in `draftfit.rule_ids`, the rules registered for
them, and the code that emits them agree.

(a) every identity in `ALL_RULE_IDS` has exactly one registered rule and every registered
rule is one of those identities; (b) no module names a rule by a string (an AST scan of
`src/draftfit`); (c) every identity is emitted by something: a rule with its own check, or
a reference to the constant in an emitter module.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

import draftfit
from draftfit import rule_ids
from draftfit.rule_ids import ALL_RULE_IDS, BY_NAME
from draftfit.rule_ids import RuleId as RuleIdType
from draftfit.rules import RULES, registered
from tests.source_trees import parsed

SRC = Path(draftfit.__file__).parent
CODE = re.compile(r"\bDF\d{3}\b")

# Identities declared ahead of the change that detects them and registers their
# documentation (none today); `draftfit rules` does not list them until then.
NOT_YET_REGISTERED: dict[RuleIdType, str] = {}

# String literals that may spell a rule code or name, by module and literal, with why.
ALLOWED_LITERALS: dict[tuple[str, str], str] = {
    ("cli/main.py", "rule code (DF301) or name (aux-layers-differ-from-trained)"): (
        "help text of `draftfit rule`: an example of what the user may type"
    ),
    (
        "cli/reports.py",
        "only these rules count: codes (DF108), prefixes (DF3, DF = all) or names, "
        "comma-separated (replaces the settings file's select)",
    ): "help text of --select: examples of selectors",
    (
        "settings/selection.py",
        " matches no rule (a code such as DF108, a prefix such as DF1, a rule name, or ALL; "
        "see `draftfit rules`)",
    ): "error text of a selector that names no rule: examples of selectors",
}

# Calls that tag something with a rule, the positions and keywords that carry the tag: a
# string literal there is a rule named by a string, even a misspelt one.
TAGGING_CALLS: dict[str, tuple[int, ...]] = {
    "Damage": (0,),
    "Event": (0,),
    "Finding": (0, 1),
    "SkippedRule": (0,),
    "event": (0,),
    "refuse": (0,),
    "get_rule": (0,),
    "registered": (0,),
    "_rule": (0,),
    "names_rule": (0, 1),
    "from_view_events": (1,),
}
TAG_KEYWORDS = frozenset({"rule", "kind", "code", "name", "rule_id"})

# Where a finding can come from: a reference to an identity here emits it.
EMITTER_MODULES = (
    "engines/",
    "checkpoint/",
    "rules/",
    "commands/diff_findings.py",
    "conversion/",
)

# The declarators in draftfit.rules.base: `rule` registers a check the rule module runs;
# the others register documentation for a detection that lives in an emitter module.
OWN_CHECK = "rule"
DECLARATORS = frozenset(
    {OWN_CHECK, "event_rule", "documented_rule", "_structure_rule", "_diff_rule"}
)

CONSTANTS: dict[str, RuleIdType] = {
    name: value for name, value in vars(rule_ids).items() if isinstance(value, RuleIdType)
}


@dataclass(frozen=True)
class Offender:
    module: str
    line: int
    literal: str
    why: str

    def __str__(self) -> str:
        return f"src/draftfit/{self.module}:{self.line}: {self.literal!r} ({self.why})"


def _modules() -> dict[str, ast.Module]:
    return {path.relative_to(SRC).as_posix(): parsed(path) for path in sorted(SRC.rglob("*.py"))}


def _in(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or (p.endswith("/") and module.startswith(p)) for p in prefixes)


def _docstrings(tree: ast.Module) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _tag_nodes(tree: ast.Module) -> set[int]:
    """The arguments of every tagging call that carry its rule tag."""
    found: set[int] = set()
    for node in ast.walk(tree):
        positions = (
            TAGGING_CALLS.get(_call_name(node) or "") if isinstance(node, ast.Call) else None
        )
        if isinstance(node, ast.Call) and positions is not None:
            found.update(id(node.args[i]) for i in positions if i < len(node.args))
            found.update(id(k.value) for k in node.keywords if k.arg in TAG_KEYWORDS)
    return found


def string_offenders(modules: dict[str, ast.Module]) -> list[Offender]:
    """String literals outside rule_ids.py and docstrings that name a rule."""
    out = []
    for module, tree in modules.items():
        if module == "rule_ids.py":
            continue
        docs, tags = _docstrings(tree), _tag_nodes(tree)
        for node in ast.walk(tree):
            tag = id(node) in tags
            if isinstance(node, ast.JoinedStr) and tag:
                out.append(Offender(module, node.lineno, ast.unparse(node), "a rule tag as text"))
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            if id(node) in docs or (module, node.value) in ALLOWED_LITERALS:
                continue
            if CODE.search(node.value):
                out.append(Offender(module, node.lineno, node.value, "a rule code as a string"))
            elif node.value in BY_NAME:
                constant = next(k for k, v in CONSTANTS.items() if v is BY_NAME[node.value])
                why = f"a rule name as a string: use rule_ids.{constant}"
                out.append(Offender(module, node.lineno, node.value, why))
            elif tag:
                why = "a rule tag as a string, and no rule has this name"
                out.append(Offender(module, node.lineno, node.value, why))
    return sorted(out, key=lambda o: (o.module, o.line))


def declarations(modules: dict[str, ast.Module]) -> list[tuple[str, str, str]]:
    """(module, declarator, constant) for every rule declaration in draftfit/rules."""
    out = []
    for module, tree in modules.items():
        if not module.startswith("rules/"):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and _call_name(deco) in DECLARATORS:
                    first = deco.args[0] if deco.args else None
                    name = first.id if isinstance(first, ast.Name) else ast.dump(first or deco)
                    out.append((module, str(_call_name(deco)), name))
    return out


def constant_references(modules: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Identity constant -> emitter modules that reference it (declarations not counted)."""
    refs: dict[str, set[str]] = {}
    for module, tree in modules.items():
        if not _in(module, EMITTER_MODULES):
            continue
        skip: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                for deco in node.decorator_list:
                    skip.update(id(sub) for sub in ast.walk(deco))
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            name = (
                node.id
                if isinstance(node, ast.Name)
                else node.attr
                if isinstance(node, ast.Attribute)
                else None
            )
            if name in CONSTANTS:
                refs.setdefault(name, set()).add(module)
    return refs


@pytest.fixture(scope="module")
def modules() -> dict[str, ast.Module]:
    return _modules()


# ---------------------------------------------------------------- (a) identities and rules


def test_identities_are_unique_and_listed() -> None:
    codes = Counter(item.code for item in ALL_RULE_IDS)
    names = Counter(item.name for item in ALL_RULE_IDS)
    assert [c for c, n in codes.items() if n > 1] == []
    assert [c for c, n in names.items() if n > 1] == []
    assert all(CODE.fullmatch(item.code) for item in ALL_RULE_IDS)
    listed = set(ALL_RULE_IDS)
    assert sorted(n for n, v in CONSTANTS.items() if v not in listed) == []
    assert sorted(BY_NAME) == sorted(names)


def test_every_identity_has_exactly_one_registered_rule(modules: dict[str, ast.Module]) -> None:
    declared = Counter(constant for _, _, constant in declarations(modules))
    unknown = sorted(c for c in declared if c not in CONSTANTS)
    assert unknown == [], f"declarations not naming a rule_ids constant: {unknown}"
    twice = sorted(c for c, n in declared.items() if n > 1)
    assert twice == [], f"identities declared more than once: {twice}"
    for item in RULES.values():
        assert item.id in ALL_RULE_IDS, f"{item.id} is registered but not in ALL_RULE_IDS"
        assert registered(item.id) is item
        module = item.check.__module__.rsplit(".", 1)[-1]
        assert item.family == module, f"{item.id} is declared in rules/{module}.py"
    missing = [str(r) for r in ALL_RULE_IDS if r.code not in RULES and r not in NOT_YET_REGISTERED]
    assert missing == [], f"identities without a registered rule: {missing}"
    assert len(RULES) == len(declared)


def test_identities_declared_ahead_of_their_rule() -> None:
    waiting = [f"{r}: {why}" for r, why in NOT_YET_REGISTERED.items() if r.code not in RULES]
    if waiting:
        pytest.skip("no registered rule yet for " + "; ".join(waiting))


# ---------------------------------------------------------------- (b) no rule as a string


def test_no_module_names_a_rule_by_string(modules: dict[str, ast.Module]) -> None:
    offenders = string_offenders(modules)
    assert offenders == [], "name rules by their rule_ids constant:\n" + "\n".join(
        map(str, offenders)
    )


def test_scan_catches_rule_strings() -> None:
    """The scan itself: codes, exact names and any literal tag are caught; docs are not."""
    tree = ast.parse(
        '"""DF301 in a docstring is documentation."""\n'
        "def f(view, Damage, names, ctx):\n"
        '    """aux-ids-duplicate here too."""\n'
        '    view.refuse("method-unsuported", "a message")\n'
        '    from_view_events(ctx, "lm-head-missing-reduced-vocb")\n'
        '    Damage(kind="truncated-file")\n'
        '    codes = {"DF505"}\n'
        '    return names == "missing-d2t", "plain text mentioning missing-d2t"\n'
    )
    found = {(o.line, o.literal) for o in string_offenders({"x.py": tree})}
    assert found == {
        (4, "method-unsuported"),
        (5, "lm-head-missing-reduced-vocb"),
        (6, "truncated-file"),
        (7, "DF505"),
        (8, "missing-d2t"),
    }


# ---------------------------------------------------------------- (c) every rule is emitted


def test_every_identity_is_emitted(modules: dict[str, ast.Module]) -> None:
    own_check = {c for _, deco, c in declarations(modules) if deco == OWN_CHECK}
    refs = constant_references(modules)
    silent = [
        str(item)
        for constant, item in CONSTANTS.items()
        if constant not in own_check and constant not in refs and item not in NOT_YET_REGISTERED
    ]
    assert silent == [], f"identities nothing emits: {silent}"
