#> fast
"""Speed: what the engine does so that its bookkeeping costs less than its arithmetic.

Introduced in chapter `fast` (Making it fast). That chapter's changes replace
lines of `engine/tensor.py` and `engine/memory.py`; this module holds the one
tool it gives the reader:

    collector_paused   pause Python's cycle collector for a block, then restore it
"""

import gc


class collector_paused:
    """`with collector_paused():` pauses Python's cycle collector, then restores its state.

    For a deep forward pass: a graph holds no reference cycles (a node refers
    to its parents, never to its children), so reference counting frees it and
    the collector finds nothing in it, but building it triggers the collector
    again and again, and each full pass walks the whole graph built so far
    (chapter `fast`, "Many small objects"). Code inside must make no cycles of
    its own, or call gc.collect() after the block.
    """

    def __enter__(self):
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exception):
        if self.was_enabled:
            gc.enable()
