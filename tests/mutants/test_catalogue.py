"""The mutant catalogue stays applicable: each mutant's text occurs exactly once in its file, changes it, and names
tests that exist."""

from __future__ import annotations

import pytest

from tests.mutants import MUTANTS
from tests.mutants.run import REPO


def test_names_are_unique():
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_each_mutant_applies_once_to_product_code_and_names_existing_tests(mutant):
    assert not mutant.path.startswith("tests/"), "a mutant changes product code, never a test"
    text = (REPO / mutant.path).read_text(encoding="utf-8")
    assert text.count(mutant.find) == 1 and mutant.find != mutant.replace
    for node in mutant.tests:
        path, _, name = node.partition("::")
        assert (REPO / path).exists(), node
        if name:  # a test, or one of its parametrized cases (``name[ids]``)
            assert f"def {name.partition('[')[0]}(" in (REPO / path).read_text(encoding="utf-8"), node


def test_each_demos_own_mutants_are_in_the_catalogue():
    """A demo keeps its mutants in tests/<id>/mutants.py; the catalogue finds them from the folder."""
    import importlib

    own = [path for path in sorted((REPO / "tests").glob("*/mutants.py"))]
    assert own, "no demo keeps its own mutants yet"
    for path in own:
        names = {m.name for m in importlib.import_module(f"tests.{path.parent.name}.mutants").MUTANTS}
        assert names and names <= {m.name for m in MUTANTS}, path
