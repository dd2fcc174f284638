"""The human-readable `draftfit demo`: the story around the check and diff reports."""

from __future__ import annotations

from draftfit.commands.demo import DIFF_INTRO, INTRO, OUTRO, DemoResult
from draftfit.render.diff_text import render_diff
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.text import render_check


def render_demo(demo: DemoResult, options: RenderOptions = PLAIN) -> str:
    return (
        INTRO.format(size=demo.size_gb)
        + "\n"
        + render_check(demo.report, options)
        + "\n"
        + DIFF_INTRO
        + "\n"
        + render_diff(demo.diff, options, raw_limit=5)
        + "\n"
        + OUTRO
    )
