"""Run `launch_oracle.py` over many launch lines in one process of an engine venv.

    ~/vllm-venv/bin/python dev/launch_oracle_batch.py ../shared/oracle/launch_oracle.py \\
        < lines.json > results.jsonl

`lines.json` is a JSON list of launch lines; each result is the JSON object
`launch_oracle.py LINE` prints, one per output line, in the order given. The engine is
imported once (a single `launch_oracle.py` run spends most of its time importing it), and
each line goes through the oracle's own `run`: the engine's parser, engine arguments and
config classes, as in a separate run. What carries over from one line to the next is what
the engine itself keeps for a process (config classes it registered with Transformers,
Transformers' module cache), the same a server process keeps; `launch_agreement.py --batch`
uses it. A development aid: it never runs in the product or its tests.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shlex
import sys


def main() -> int:
    oracle_path = sys.argv[1]
    spec = importlib.util.spec_from_file_location("launch_oracle", oracle_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            import vllm  # noqa: F401

            oracle = module.VllmOracle()
        except ImportError:
            oracle = module.SglangOracle()
    lines = json.load(sys.stdin)
    for line in lines:
        argv = shlex.split(line.replace("\\\n", " "))
        env, argv = module.split_env(argv)
        result = {"engine": oracle.engine, "version": oracle.version, "command": line, "env": env}
        with contextlib.redirect_stdout(io.StringIO()):
            result.update(oracle.run(argv, env))
        print(module.scrub(json.dumps(result), os.getcwd()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
