#> fast
"""Speed: what the engine does so that its bookkeeping costs less than its arithmetic.

Introduced in chapter `fast` (Making it fast). Most of that chapter's changes
replace lines of `engine/tensor.py`; this module holds the one tool they need:

    collector_paused   pause Python's cycle collector for a block, then restore it
"""

import gc


class collector_paused:
    """`with collector_paused():` pauses Python's cycle collector, then restores its state.

    `Tensor.backward` sweeps inside it. A graph holds no reference cycles (a
    node refers to its parents, never to its children), so reference counting
    frees it and the cycle collector finds nothing in it; but the sweep's
    allocations would trigger the collector again and again, and each time it
    would walk the whole graph (chapter `fast`, "Many small objects").
    """

    def __enter__(self):
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exception):
        if self.was_enabled:
            gc.enable()
