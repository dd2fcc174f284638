"""Print the `launch_grammar` entry of one vLLM release, read off that release's own parser.

Run with a vLLM venv's interpreter (see ../shared/oracle/setup_venv.sh; no GPU, no server):

    ~/vllm-venv/bin/python dev/vllm_launch_grammar.py > /tmp/grammar.json

It builds `vllm serve`'s argument parser exactly as the `vllm` command does (the CLI's
subcommands, each `subparser_init`), and prints one JSON object: every option string of the
`serve` subparser (`flags`), those that take no value (`no_value`: actions with `nargs=0`,
such as `store_true` and the `--no-…` halves of boolean flags), whether a unique prefix of a
long flag is taken for it (`abbreviations`: the subparser's `allow_abbrev`), the release and
the parser class. `src/draftfit/engines/vllm/data.toml`'s `launch_grammar` entries are this
output with their source line; the script is a development aid and never runs in the product
or its tests.
"""

from __future__ import annotations

import argparse
import json
import sys


def serve_parser() -> argparse.ArgumentParser:
    """The `serve` subparser, built as the `vllm` entry point builds it (on the CPU
    platform, so that defaults which ask the device resolve without one)."""
    import vllm.platforms
    from vllm.platforms.cpu import CpuPlatform

    vllm.platforms._current_platform = CpuPlatform()
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # releases before the module moved
        from vllm.utils import FlexibleArgumentParser  # type: ignore[no-redef]
    import vllm.entrypoints.cli.serve as serve_module

    parser = FlexibleArgumentParser(description="vLLM CLI")
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    for command in serve_module.cmd_init():
        command.subparser_init(subparsers)
    chosen = subparsers.choices.get("serve")
    if chosen is None:
        sys.exit("this release's CLI has no `serve` subcommand")
    return chosen


def main() -> None:
    import vllm

    parser = serve_parser()
    flags: set[str] = set()
    no_value: set[str] = set()
    for action in parser._actions:
        for option in action.option_strings:
            flags.add(option)
            if action.nargs == 0:
                no_value.add(option)
    print(
        json.dumps(
            {
                "release": vllm.__version__,
                "parser": type(parser).__module__ + "." + type(parser).__qualname__,
                "abbreviations": bool(parser.allow_abbrev),
                "flags": sorted(flags),
                "no_value": sorted(no_value),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
