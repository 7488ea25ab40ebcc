"""Software prefetch for numba kernels: ``prefetch(arr, i)`` hints that ``arr[i]`` will be read soon.

It compiles to LLVM's ``llvm.prefetch`` (read, high locality), which never faults and
changes no value, so it only affects speed. Used by the word-major large-K sweep
(_mh.py), whose next tokens' document lists sit at random places in memory.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, idx):
    """Prefetch the cache line holding arr[idx] (1-d array, integer index); no effect on results."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        arr_ty, _ = signature.args
        ary = context.make_array(arr_ty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, arr_ty, ary, [args[1]])
        i32, byte_ptr = ir.IntType(32), ir.IntType(8).as_pointer()
        # one declaration for every element type (an int32 and a uint16 array in one kernel would otherwise
        # declare the intrinsic twice with different pointer types)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, byte_ptr), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
