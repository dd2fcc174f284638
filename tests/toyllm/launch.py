"""ToyLLM's launch part: `toyllm serve MODEL --tp N --kv-dtype D --no-graphs`.

Its flag table is what its (imagined) argument parser declares; reading a launch and
judging it at each release is :class:`~draftfit.engines.launch_part.EngineLaunch`'s.
"""

from __future__ import annotations

from draftfit.engines.launch_part import EngineLaunch
from draftfit.serve.reading import FlagTarget

FLAGS = {
    "--tp": FlagTarget("tensor_parallel_size", "int"),
    "--kv-dtype": FlagTarget("kv_cache_dtype"),
    "--no-graphs": FlagTarget("cuda_graphs", "off-when-true"),
}


class ToyLaunch(EngineLaunch):
    """The command words that start a ToyLLM launch, and its flags."""

    engine = "toyllm"
    commands = (("toyllm", "serve"),)
    shown_command = "toyllm serve"
    flags = FLAGS
    booleans = frozenset({"--no-graphs"})
    hint_flags = frozenset({"--kv-dtype"})


LAUNCH = ToyLaunch()
