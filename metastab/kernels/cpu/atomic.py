"""An atomic counter for kernels whose threads take work as they free up.

numba's parallel loops split their range into equal parts, one per thread, up front; on a machine
whose cores also run other work, the parts' threads then finish at different times and the loop
waits for the slowest. A kernel that deals its items from a shared counter with
:func:`fetch_add` keeps every thread busy to the end. What each item computes must not depend on
which thread takes it (the kernels' chains depend only on their own streams).
"""

from numba.core import types
from numba.extending import intrinsic

__all__ = ["fetch_add"]


@intrinsic
def fetch_add(typingctx, counter, v):
    """counter[0] += v, atomically; returns counter[0] before the addition (``counter``: a 1-d
    int64 array shared by the threads)."""
    if not (
        isinstance(counter, types.Array) and counter.dtype == types.int64 and counter.ndim == 1
    ):
        return None
    sig = types.int64(counter, types.int64)

    def codegen(context, builder, signature, args):
        a = context.make_array(signature.args[0])(context, builder, args[0])
        v = context.cast(builder, args[1], signature.args[1], types.int64)
        return builder.atomic_rmw("add", a.data, v, "seq_cst")

    return sig, codegen
