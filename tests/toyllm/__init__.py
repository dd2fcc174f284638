"""ToyLLM, a fourth engine built the way CONTRIBUTING.md's "A new (fourth) engine" recipe
says, as the test of that recipe (`tests/test_engine_interface.py`).

A real engine's folder is `src/draftfit/engines/<name>/`; this one lives with the tests so
that the shipped registry does not list it. Its files are the recipe's: its data (here
TensorRT-LLM's under another title, see :mod:`.engine`), :mod:`.procedure` (its
`EngineProcedure`: the steps it runs, in order), :mod:`.launch` (its launch part),
:mod:`.launch_checks` (what a release does with the launch) and :mod:`.engine` (the Engine,
one instance, exported here). Registering it is one line in `ENGINES`; the tests add it to
a copy of that tuple instead.

Importing the package loads only the Engine; the procedure loads when a draft is checked.
"""

from tests.toyllm.engine import TOYLLM

__all__ = ["TOYLLM"]
