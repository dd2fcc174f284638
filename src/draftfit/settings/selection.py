"""Which rules count: `--select` / `--extend-select` / `--ignore` and the settings file.

A finding whose rule is not selected, or is ignored, is *suppressed*: it stays in the report
(JSON shows `"suppressed": true` and the reason) but counts for neither the verdicts nor the
exit status, and the text report leaves it out. How the layers combine:

* the selected rules are the command line's `--select` if given, else the settings file's
  `select` if given, else every rule; plus every `extend-select` of the file and of the
  command line;
* a rule matched by any `ignore` (file or command line) is suppressed even when selected;
* a selector is `ALL`, a code (`DF108`), a code prefix (`DF1`, `DF`) or a rule name
  (`method-mismatch`); one that matches no rule is a usage error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from draftfit.errors import UsageError
from draftfit.records import field, frozen
from draftfit.report import Finding, Report, Suppression, findings_by_engine, verdict_for
from draftfit.rule_ids import ALL_RULE_IDS, RuleId
from draftfit.settings.config_file import FileSettings

_PREFIX = re.compile(r"DF\d{0,3}")


def _matches(selector: str, rule: RuleId) -> bool:
    text = selector.strip()
    if text.upper() == "ALL":
        return True
    if _PREFIX.fullmatch(text.upper()):
        return rule.code.startswith(text.upper())
    return rule.name == text.lower()


def validate(selectors: Iterable[str], where: str) -> None:
    """Raise a usage error for a selector that names no rule."""
    for selector in selectors:
        if not any(_matches(selector, rule) for rule in ALL_RULE_IDS):
            raise UsageError(
                f"{where}: {selector!r} matches no rule (a code such as DF108, a prefix such "
                "as DF1, a rule name, or ALL; see `draftfit rules`)"
            )


@frozen
class Ignore:
    """One ignore in force: its selector, the reason shown, and where it was given."""

    selector: str
    reason: str
    source: str


@frozen
class Selection:
    """The rule selection in force for one checkpoint (see the module docstring)."""

    select: tuple[str, ...] = ("ALL",)
    select_source: str = "default"
    extend_select: tuple[str, ...] = ()
    ignores: tuple[Ignore, ...] = field(default=())
    settings_file: Path | None = None

    @classmethod
    def build(
        cls,
        *,
        select: Sequence[str] | None = None,
        extend_select: Sequence[str] = (),
        ignore: Sequence[str] = (),
        settings: FileSettings | None = None,
        checkpoint: Path | None = None,
    ) -> Selection:
        """Combine the command line's selectors with a settings file's (either may be empty)
        for the checkpoint folder `checkpoint` (None for a Hub checkpoint)."""
        validate(select or (), "--select")
        validate(extend_select, "--extend-select")
        validate(ignore, "--ignore")
        chosen: tuple[str, ...] = ("ALL",)
        chosen_source = "default"
        extended = tuple(extend_select)
        ignores: list[Ignore] = []
        if settings is not None:
            where = str(settings.path)
            validate(settings.select or (), f"{where}: select")
            validate(settings.extend_select, f"{where}: extend-select")
            validate(settings.ignore, f"{where}: ignore")
            for pattern, pattern_ignores in settings.per_checkpoint:
                validate(pattern_ignores, f"{where}: per-checkpoint-ignores {pattern!r}")
            file_ignores = settings.ignores_for(checkpoint)
            if settings.select is not None:
                chosen, chosen_source = settings.select, where
            extended = settings.extend_select + extended
            ignores.extend(
                Ignore(sel, reason or f"ignored in {where}", where)
                for sel, reason in file_ignores.items()
            )
        if select is not None:
            chosen, chosen_source = tuple(select), "--select"
        ignores.extend(Ignore(sel, f"--ignore {sel}", "--ignore") for sel in ignore)
        return cls(
            chosen,
            chosen_source,
            extended,
            tuple(ignores),
            settings.path if settings is not None else None,
        )

    @property
    def is_default(self) -> bool:
        """True when every rule counts (nothing to suppress)."""
        return self.select == ("ALL",) and not self.ignores

    def suppression(self, rule: RuleId) -> Suppression | None:
        """Why findings of `rule` do not count, or None when they do."""
        for item in self.ignores:
            if _matches(item.selector, rule):
                return Suppression(item.reason, item.source)
        selected = any(_matches(s, rule) for s in self.select + self.extend_select)
        if not selected:
            where = self.select_source
            shown = " ".join(self.select)
            if where == "--select":
                return Suppression(f"not selected (--select {shown})", "--select")
            return Suppression(f"not selected (select = {list(self.select)} in {where})", where)
        return None

    def apply(self, findings: Iterable[Finding]) -> None:
        """Mark every finding of a rule that does not count (clearing earlier marks)."""
        for finding in findings:
            finding.suppression = self.suppression(finding.rule)


def apply_to_report(report: Report, selection: Selection) -> Report:
    """Mark `report`'s suppressed findings and recompute each engine version's verdict
    (checks that did not run still keep it from `compatible`)."""
    selection.apply(report.findings)
    applying = findings_by_engine(report.findings)
    for result in report.engines:
        result.verdict, result.counts = verdict_for(
            applying.get(result.key, []), result.key, result.unverified_reasons
        )
    return report
