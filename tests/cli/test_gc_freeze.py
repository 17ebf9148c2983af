"""`biasbound._gc.imports_frozen`: the collector's state around a command's run (structural, no timing)."""

from __future__ import annotations

import gc
import sys

import pytest

from biasbound._gc import imports_frozen


@pytest.fixture
def collector():
    """Restore the collector however a test leaves it (a failed assertion inside the block must not leak)."""
    was = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


def test_the_block_runs_frozen_and_ends_unfrozen(collector):
    gc.enable()
    gc.unfreeze()
    sys.modules.pop("biasbound._rounding", None)
    with imports_frozen("biasbound._rounding"):
        assert "biasbound._rounding" in sys.modules  # imported before the block
        assert gc.isenabled()  # objects made inside are collected as usual
        frozen = gc.get_freeze_count()
        assert frozen > 1000  # this process's modules and the test's objects are out of the passes
        garbage = []
        garbage.append(garbage)  # a cycle made inside the block is still collected
        del garbage
        assert gc.collect() >= 1
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()


def test_an_error_in_the_block_still_unfreezes(collector):
    gc.enable()
    gc.unfreeze()
    with pytest.raises(RuntimeError), imports_frozen():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_a_process_that_manages_its_collector_is_left_alone(collector):
    gc.disable()
    with imports_frozen("biasbound._rounding"):
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    assert not gc.isenabled()
    gc.enable()
    gc.freeze()  # someone froze before: their freeze is theirs to undo
    before = gc.get_freeze_count()
    with imports_frozen():
        assert before - 100 <= gc.get_freeze_count() <= before  # nothing added (freed objects leave the count)
    assert gc.get_freeze_count() >= before - 100  # not unfrozen


@pytest.mark.slow  # a fresh interpreter (about 0.3 s)
def test_a_process_that_ran_the_block_skips_the_last_full_pass_at_exit():
    """The interpreter's final full collection walks what is not frozen: after the block, next to nothing."""
    import subprocess

    code = ("import gc, sys\nfrom biasbound._gc import imports_frozen\n"
            "keep = [[k] for k in range(20000)]\n"  # long-lived objects the last pass would walk
            "with imports_frozen():\n    pass\n"
            "def seen(phase, info):\n"
            "    if phase == 'start' and info['generation'] == 2:\n"
            "        sys.stderr.write(f'{len(gc.get_objects(generation=2))}\\n')\n"
            "gc.callbacks.append(seen)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    walked = [int(x) for x in out.stderr.split()]
    assert walked and walked[-1] < 1000, out.stderr  # without the freeze at exit: the 20,000 lists and more
