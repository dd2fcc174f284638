"""Each module that emits findings declares the rules it emits, and the declaration is true.

A module that emits declares at its top `EMITS: tuple[RuleId, ...] = (rule_ids.X, ...)` and
`EMITS_STAGE = "..."` (where in the procedure it is). This test reads every module of the
package with `ast` (it walks the package, so modules may move) and collects what each one
really emits, from the places a rule tag is attached to a finding:

* the first argument (or `rule=`) of the records that carry a rule: the reader's `Damage`,
  the engine view's `Event`, the report's `Finding`;
* the argument of any function that passes one of its own parameters on to such a place
  (the engine procedure's `refuse` and `event`, the reader's `fail`, ...), found by
  following parameters through every module until nothing new is found;
* the first element of a yielded tuple (the diff's `(rule, message, location)`);
* the decorator `@rule(X, ...)` of a check that produces violations of its own (not only
  `from_view_events`, which hands on what the engine procedure emitted).

A tag is a `rule_ids` constant (`rule_ids.X` or a name imported from it), a conditional
between constants, or a local variable assigned from those; a tag the scan cannot read is
reported, so a new way of emitting fails here instead of going unseen. `Finding(rule.id,
...)` re-stamps a rule's violations and emits nothing new.

It then requires: each module's declaration equals what it emits (no module emits without
declaring, none declares what it does not emit); every identity in `ALL_RULE_IDS` is
emitted somewhere; the declarations :mod:`draftfit.commands.detection` imports at run time
are the ones read here, and the compiled index `draftfit rule` reads is current.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import draftfit
from draftfit import rule_ids
from draftfit.commands.detection import (
    DECLARATION,
    STAGE,
    compiled_index,
    declaring_modules,
    detections,
    index_text,
)
from draftfit.rule_ids import ALL_RULE_IDS, RuleId
from tests.source_trees import parsed

SRC = Path(draftfit.__file__).parent
RULE_IDS = "draftfit.rule_ids"
CONSTANTS = {name for name, value in vars(rule_ids).items() if isinstance(value, RuleId)}

# Records whose first field is the rule they are tagged with.
TAGGED_RECORDS = ("Damage", "Event", "Finding")
TAG_FIELD = "rule"
# The declarator of a rule that holds its own check (draftfit.rules.base.rule), and the
# call through which a check hands on the engine procedure's events.
OWN_CHECK = "rule"
FORWARD = "from_view_events"
# `rule.id`: a registered rule's identity, re-stamped on its violations.
RESTAMP = "id"


@dataclass(frozen=True)
class Tagging:
    """A call whose argument at `position` (or keyword `keyword`) is a rule tag."""

    position: int
    keyword: str


@dataclass
class Resolved:
    """What a tag expression can be: constants, parameters it passes on, or unreadable."""

    constants: set[str] = field(default_factory=set)
    params: set[str] = field(default_factory=set)
    unreadable: bool = False

    def add(self, other: Resolved) -> None:
        self.constants |= other.constants
        self.params |= other.params
        self.unreadable |= other.unreadable


class ModuleScan:
    """One module's syntax tree with the names under which it sees `draftfit.rule_ids`."""

    def __init__(self, name: str, tree: ast.Module) -> None:
        self.name = name
        self.tree = tree
        self.modules: set[str] = set()  # local names of the rule_ids module
        self.constants: dict[str, str] = {}  # local name -> rule_ids constant
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, ast.ImportFrom) and node.module == "draftfit":
                self.modules |= {a.asname or a.name for a in node.names if a.name == "rule_ids"}
            if isinstance(node, ast.ImportFrom) and node.module == RULE_IDS:
                for alias in node.names:
                    if alias.name in CONSTANTS:
                        self.constants[alias.asname or alias.name] = alias.name
            if isinstance(node, ast.Import):
                self.modules |= {a.asname for a in node.names if a.name == RULE_IDS and a.asname}

    def constant(self, node: ast.AST) -> str | None:
        """The rule_ids constant `node` names, if it names one."""
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in self.modules
            and node.attr in CONSTANTS
        ):
            return node.attr
        return None

    def function_of(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
        return None

    def params(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
        """The parameters a caller passes (a method's `self` or `cls` left out)."""
        names = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
        in_class = isinstance(self.parents.get(fn), ast.ClassDef)
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
        return names[1:] if in_class and not static and names else names

    def resolve(
        self, node: ast.AST, fn: ast.FunctionDef | ast.AsyncFunctionDef | None, depth: int = 0
    ) -> Resolved:
        """What the tag expression `node`, inside `fn`, can evaluate to."""
        out = Resolved()
        found = self.constant(node)
        if found is not None:
            out.constants.add(found)
        elif isinstance(node, ast.IfExp):
            out.add(self.resolve(node.body, fn, depth))
            out.add(self.resolve(node.orelse, fn, depth))
        elif isinstance(node, ast.Name) and fn is not None and depth < 8:
            all_params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
            values = list(self._assigned(node.id, fn))
            if node.id in all_params and not values:
                out.params.add(node.id)
            elif values:
                for value in values:
                    out.add(self.resolve(value, fn, depth + 1))
            else:
                out.unreadable = True
        else:
            out.unreadable = True
        return out

    def _assigned(self, name: str, fn: ast.AST) -> Iterator[ast.AST]:
        """The values a local variable `name` is given in `fn` (assignments, loops over a
        literal tuple, list or set)."""
        for node in ast.walk(fn):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            value = getattr(node, "value", None)
            if value is not None and any(isinstance(t, ast.Name) and t.id == name for t in targets):
                yield value
            elif (
                isinstance(node, (ast.For, ast.comprehension))
                and isinstance(node.target, ast.Name)
                and node.target.id == name
            ):
                if isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)):
                    yield from node.iter.elts
                else:
                    yield node.iter  # unreadable: reported


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _tag(call: ast.Call, tagging: Tagging) -> ast.AST | None:
    for keyword in call.keywords:
        if keyword.arg == tagging.keyword:
            return keyword.value
    if tagging.position < len(call.args):
        return call.args[tagging.position]
    return None


def _tagged_calls(
    scan: ModuleScan, taggings: dict[str, Tagging]
) -> Iterator[tuple[ast.Call, ast.AST]]:
    """Every call that tags something, with its tag (a tagged record handed on whole, as
    in `view.refuse(Event(...))`, is read where it is made)."""
    for node in ast.walk(scan.tree):
        if isinstance(node, ast.Call):
            tagging = taggings.get(_call_name(node) or "")
            tag = _tag(node, tagging) if tagging else None
            if tag is None:
                continue
            if isinstance(tag, ast.Call) and _call_name(tag) in taggings:
                continue
            yield node, tag


def taggings_of(scans: list[ModuleScan]) -> dict[str, Tagging]:
    """The tagged records, then every function that passes a parameter on as a tag, until
    no new one is found."""
    found = {name: Tagging(0, TAG_FIELD) for name in TAGGED_RECORDS}
    changed = True
    while changed:
        changed = False
        for scan in scans:
            for call, tag in _tagged_calls(scan, found):
                fn = scan.function_of(call)
                if fn is None or fn.name in found:
                    continue
                passed = scan.resolve(tag, fn).params
                params = scan.params(fn)
                for param in sorted(passed):
                    if param in params:
                        found[fn.name] = Tagging(params.index(param), param)
                        changed = True
                        break
    return found


def _makes_own_violations(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a check yields or returns something other than the engine's forwarded events."""
    for node in ast.walk(fn):
        value = node.value if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Return)) else None
        if isinstance(node, (ast.Yield, ast.YieldFrom)) and value is None:
            return True
        if value is None:
            continue
        if isinstance(value, ast.Call) and _call_name(value) == FORWARD:
            continue
        if isinstance(node, ast.Return) and isinstance(value, ast.Constant) and value.value is None:
            continue
        return True
    return False


@dataclass
class Emission:
    """What one module emits and declares, and what the scan could not read."""

    emitted: set[str] = field(default_factory=set)
    declared: list[str] | None = None
    stage: str | None = None
    problems: list[str] = field(default_factory=list)


def emission(scan: ModuleScan, taggings: dict[str, Tagging]) -> Emission:
    out = Emission()
    for call, tag in _tagged_calls(scan, taggings):
        if isinstance(tag, ast.Attribute) and tag.attr == RESTAMP and scan.constant(tag) is None:
            continue
        fn = scan.function_of(call)
        resolved = scan.resolve(tag, fn)
        out.emitted |= resolved.constants
        if resolved.unreadable:
            out.problems.append(
                f"line {call.lineno}: `{ast.unparse(call)[:80]}` tags a finding with "
                f"`{ast.unparse(tag)}`, which is not a rule_ids constant"
            )
    for node in ast.walk(scan.tree):
        if isinstance(node, ast.Yield) and isinstance(node.value, ast.Tuple) and node.value.elts:
            out.emitted |= scan.resolve(node.value.elts[0], scan.function_of(node)).constants
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and _call_name(deco) == OWN_CHECK
                    and deco.args
                    and _makes_own_violations(node)
                ):
                    found = scan.constant(deco.args[0])
                    if found is not None:
                        out.emitted.add(found)
    for stmt in scan.tree.body:
        target, value = _top_assignment(stmt)
        if target == DECLARATION:
            if isinstance(value, ast.Tuple):
                names = [scan.constant(e) for e in value.elts]
                out.declared = [n for n in names if n is not None]
                if None in names:
                    out.problems.append(f"{DECLARATION} lists something that is not a rule")
            else:
                out.problems.append(f"{DECLARATION} is not a tuple of rule_ids constants")
                out.declared = []
        elif target == STAGE:
            text = value.value if isinstance(value, ast.Constant) else None
            out.stage = text if isinstance(text, str) else None
            if out.stage is None:
                out.problems.append(f"{STAGE} is not a string")
    return out


def _top_assignment(stmt: ast.stmt) -> tuple[str | None, ast.AST | None]:
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id, stmt.value
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return stmt.targets[0].id, stmt.value
    return None, None


def check_declarations(scans: list[ModuleScan]) -> dict[str, Emission]:
    """Every module's emission, with its problems: an undeclared or a declared-only rule,
    a rule declared twice, a declaration without a stage, a tag the scan cannot read."""
    taggings = taggings_of(scans)
    out = {}
    for scan in scans:
        item = emission(scan, taggings)
        declared = item.declared if item.declared is not None else []
        for name in sorted(item.emitted - set(declared)):
            item.problems.append(f"emits {name} without declaring it in {DECLARATION}")
        for name in sorted(set(declared) - item.emitted):
            item.problems.append(f"declares {name} in {DECLARATION} but does not emit it")
        for name in sorted({n for n in declared if declared.count(n) > 1}):
            item.problems.append(f"declares {name} twice")
        if item.declared is not None and not item.stage:
            item.problems.append(f"declares {DECLARATION} without {STAGE}")
        if item.stage is not None and item.declared is None:
            item.problems.append(f"has {STAGE} without {DECLARATION}")
        out[scan.name] = item
    return out


def package_scans() -> list[ModuleScan]:
    scans = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        scans.append(ModuleScan(name, parsed(path)))
    return scans


@pytest.fixture(scope="module")
def package() -> dict[str, Emission]:
    return check_declarations(package_scans())


# ---------------------------------------------------------------- the package


def test_every_module_declares_what_it_emits(package: dict[str, Emission]) -> None:
    problems = [f"{name}: {p}" for name, item in package.items() for p in item.problems]
    assert problems == [], "\n".join(problems)


def test_every_rule_is_declared_as_emitted_somewhere(package: dict[str, Emission]) -> None:
    declared = {n for item in package.values() for n in item.declared or []}
    by_constant = {getattr(rule_ids, name): name for name in CONSTANTS}
    silent = [str(r) for r in ALL_RULE_IDS if by_constant[r] not in declared]
    assert silent == [], f"no module declares it emits: {silent}"


def test_the_run_time_declarations_are_the_ones_read_here(package: dict[str, Emission]) -> None:
    """What `draftfit rule` and the rule pages show is imported from the same modules."""
    read = {name: item for name, item in package.items() if item.declared is not None}
    assert sorted(declaring_modules()) == sorted(read)
    computed: dict[str, set[tuple[str, str]]] = {}
    for name, item in read.items():
        for constant in item.declared or []:
            code = getattr(rule_ids, constant).code
            computed.setdefault(code, set()).add((name, str(item.stage)))
    found = {code: {(d.module, d.stage) for d in where} for code, where in detections().items()}
    assert found == computed


def test_the_compiled_index_is_current() -> None:
    assert compiled_index() == detections(), "run `PYTHONPATH=src python dev/gen_rule_docs.py`"
    path = Path(draftfit.commands.detection.__file__).with_name("detected_in.json")
    assert path.read_text(encoding="utf-8") == index_text(detections())


# ---------------------------------------------------------------- the scan itself


SNIPPET = """
from draftfit import rule_ids
from draftfit.rule_ids import MISSING_CONFIG as MISSING
from draftfit.rules.base import from_view_events, rule

EMITS: tuple[RuleId, ...] = ({declared})
EMITS_STAGE = "checkpoint reader: a test"


class Reader:
    def fail(self, kind, message):
        self.damage.append(Damage(kind, "f", message))

    def read(self, ok):
        self.fail(rule_ids.TRUNCATED_FILE, "short")
        kind = rule_ids.NO_WEIGHTS if ok else MISSING
        self.damage.append(Damage(rule=kind, file="f", message="m"))


def differences(a, b):
    yield (rule_ids.METHOD_DIFFERS, "m", None)
    yield ("not a rule", 1)


@rule(rule_ids.AUX_IDS_DUPLICATE, "own check")
def own(ctx):
    yield Violation("m")


@rule(rule_ids.LM_HEAD_MISSING_REDUCED_VOCAB, "forwards only")
def forwarded(ctx):
    yield from from_view_events(ctx, rule_ids.LM_HEAD_MISSING_REDUCED_VOCAB)


def restamped(item):
    return Finding(item.id, "m")


FRACTIONS = frozenset({{rule_ids.UNREADABLE_FILE}})  # a classification, not an emission
"""
EMITTED = [
    "rule_ids.TRUNCATED_FILE",
    "rule_ids.NO_WEIGHTS",
    "MISSING",
    "rule_ids.METHOD_DIFFERS",
    "rule_ids.AUX_IDS_DUPLICATE",
]


def _scan(declared: list[str], extra: str = "") -> list[str]:
    source = SNIPPET.format(declared=", ".join(declared) + ",") + extra
    return check_declarations([ModuleScan("snippet", ast.parse(source))])["snippet"].problems


def test_scan_accepts_a_true_declaration() -> None:
    assert _scan(EMITTED) == []


def test_scan_fails_on_a_missing_declaration() -> None:
    assert _scan(EMITTED[1:]) == ["emits TRUNCATED_FILE without declaring it in EMITS"]
    assert _scan([e for e in EMITTED if e != "MISSING"]) == [
        "emits MISSING_CONFIG without declaring it in EMITS"
    ]
    assert _scan([e for e in EMITTED if "AUX" not in e]) == [
        "emits AUX_IDS_DUPLICATE without declaring it in EMITS"
    ]


def test_scan_fails_on_an_extra_declaration() -> None:
    assert _scan([*EMITTED, "rule_ids.LM_HEAD_MISSING_REDUCED_VOCAB"]) == [
        "declares LM_HEAD_MISSING_REDUCED_VOCAB in EMITS but does not emit it"
    ]
    assert _scan([*EMITTED, "rule_ids.METHOD_DIFFERS"]) == ["declares METHOD_DIFFERS twice"]


def test_scan_fails_on_a_module_that_emits_without_any_declaration() -> None:
    source = "from draftfit import rule_ids\nview.refuse(Event(rule_ids.METHOD_MISMATCH, 'm'))\n"
    problems = check_declarations([ModuleScan("m", ast.parse(source))])["m"].problems
    assert problems == ["emits METHOD_MISMATCH without declaring it in EMITS"]


def test_scan_follows_a_helper_into_another_module() -> None:
    """A helper defined in one module, called with a constant from another: the caller emits."""
    helper = ast.parse(
        "class B:\n"
        "    def refuse(self, rule, message):\n"
        "        self.view.refuse(Event(rule, message))\n"
    )
    caller = ast.parse(
        "from draftfit import rule_ids\n"
        "def step(state):\n    state.refuse(rule_ids.METHOD_MISMATCH, 'm')\n"
    )
    found = check_declarations([ModuleScan("helper", helper), ModuleScan("step", caller)])
    assert found["helper"].problems == []
    assert found["step"].problems == ["emits METHOD_MISMATCH without declaring it in EMITS"]


def test_scan_reports_a_tag_it_cannot_read() -> None:
    problems = _scan(EMITTED, "\n\ndef odd(tags):\n    return Event(tags[0], 'm')\n")
    assert len(problems) == 1 and "`tags[0]`, which is not a rule_ids constant" in problems[0]


# ---------------------------------------------------------------- what `draftfit rule` says


def test_rule_command_says_where_each_rule_is_detected(capsys: pytest.CaptureFixture[str]) -> None:
    from draftfit.cli.main import main

    found = detections()
    several = max(found, key=lambda code: len(found[code]))
    for code in (several, "DF001", "DF801"):
        assert main(["rule", code]) == 0
        text = capsys.readouterr().out
        shown = [f"  {d.stage} ({d.module})" for d in found[code]]
        lines = text.splitlines()
        start = lines.index("detected in:")
        assert lines[start + 1 : start + 1 + len(shown)] == shown
        assert main(["rule", code, "--format", "json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["detected_in"] == [d.to_dict() for d in found[code]]
