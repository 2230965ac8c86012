"""Bulk work (parsing, printing, encoding, decoding) and the garbage collector."""
import gc

import pytest

import miltext

PROGRAM = "main[CoreML7](%x: (2, fp32)) {\n  block0() {\n" + "".join(
    f'    %y{i}: (2, fp32) = relu(x=%x, name="y{i}")\n' for i in range(2000)) + "  } -> (%y0)\n}\n"


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_on_again_and_the_new_objects_are_not_young(collector_on):
    gc.collect()
    program = miltext.loads(PROGRAM)
    assert gc.isenabled()
    # Everything loads() built went to the oldest generation: no collection is due that would
    # walk the whole program again.
    assert gc.get_count()[0] < 100
    assert any(o is program for o in gc.get_objects(generation=2))
    assert len(program.functions["main"].blocks["CoreML7"].operations) == 2000


def test_a_disabled_collector_stays_disabled():
    was = gc.isenabled()
    gc.disable()
    try:
        miltext.dumps(miltext.loads(PROGRAM))
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_objects_the_caller_froze_stay_frozen(collector_on):
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        miltext.loads(PROGRAM).to_proto()
        # (a few frozen objects may die meanwhile; undoing the freeze would leave none)
        assert gc.get_freeze_count() > frozen * 0.9
    finally:
        gc.unfreeze()
