"""shared.idle_gc: a full collection on an idle moment after enough work, not before."""

import gc

from shared.idle_gc import IdleCollection


def _full_passes() -> int:
    return gc.get_stats()[2]["collections"]


def test_collects_on_idle_only_after_enough_work() -> None:
    collection = IdleCollection(after=3)
    before = _full_passes()
    collection.worked(2)
    assert not collection.idle()  # too little work since the start
    assert _full_passes() == before
    collection.worked()
    assert collection.idle()
    assert _full_passes() == before + 1
    assert not collection.idle()  # the count starts again
    assert collection.collections == 1


def test_the_idle_pass_frees_cyclic_garbage() -> None:
    class Node:
        pass

    was = gc.isenabled()
    gc.disable()
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a
        del a, b
        collection = IdleCollection(after=1)
        collection.worked()
        assert collection.idle()
        assert not [o for o in gc.get_objects() if type(o).__name__ == "Node"]
    finally:
        if was:
            gc.enable()
