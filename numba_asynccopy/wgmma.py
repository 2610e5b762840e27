"""Warpgroup matrix multiply-accumulate (Hopper, sm_90a): ``wgmma``.

A warpgroup is 128 consecutive threads (four warps, the first a multiple of
128).  Every function here except :func:`wgmma_descriptor` and the fragment
helpers is warpgroup-collective: all 128 threads call it, at the same place.

The pieces:

- :func:`wgmma_descriptor` turns a shared-memory view of an operand tile
  into the 64-bit matrix descriptor the MMA reads.  Its start address,
  leading and stride byte offsets come from the view (its address and
  strides); its swizzle is the ``swizzle`` of the ``TensorMap`` that wrote
  the tile (``None``, 32, 64 or 128 bytes), so a tile a TMA copy filled
  feeds the MMA with no layout arithmetic.
- An accumulator *fragment* is a Numba value, a tuple of N/2 float32
  (:func:`wgmma_zero`), that :func:`wgmma_mma_async` takes and returns; it
  stays in registers as long as the kernel indexes it only with constants
  (pass it on whole; use :func:`wgmma_store` to write it out).  An f16
  accumulator (``wgmma_zero(N, dtype="f16")``, f16 or fp8 inputs) is a
  tuple of N/4 uint32, each holding two f16 of the f32 layout's adjacent
  elements (``2w``, ``2w + 1``): half the registers.
- :func:`wgmma_fence`, :func:`wgmma_commit_group` and
  :func:`wgmma_wait_group` order the asynchronous MMAs.  The fence and the
  wait take the fragment and return it, so the compiler cannot move a read
  or a write of the accumulators across them.

The m64nNk16 fragment layout (f32 accumulators): warp ``w`` of the
warpgroup owns rows ``16w .. 16w + 15``; lane ``l`` holds rows ``16w + l/4``
and ``16w + l/4 + 8``, columns ``8i + 2(l % 4) + {0, 1}``, element ``4i + 2h +
j`` being row ``16w + l/4 + 8h``, column ``8i + 2(l % 4) + j``.

Example::

    acc = ac.wgmma_zero(64)                      # m64n64, 32 floats a thread
    acc = ac.wgmma_fence(acc)
    acc = ac.wgmma_mma_async(acc, ac.wgmma_descriptor(a[:, 0:16], swizzle=128),
                             ac.wgmma_descriptor(b[:, 0:16], swizzle=128),
                             dtype="bf16", scale_d=False)
    ac.wgmma_commit_group()
    acc = ac.wgmma_wait_group(0, acc)
    ac.wgmma_store(acc, c, 0, 0)
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.cuda import cgutils

from . import _rules
from . import checked as _checked
from .bulk import check_space
from ._compat import TypingError, intrinsic
from ._forms import form, select
from ._lowering import I32, I64, asm, linear_tid, pure_asm, shared_addr32, trap_if
from ._regions import View, bool_or_runtime, itemsize, literal_value

#: the N of m64nNk*: 8..256 in steps of 8
WGMMA_N = tuple(range(8, 257, 8))
#: input type -> (PTX type, K of one MMA, element bytes)
WGMMA_INPUTS = {"bf16": ("bf16", 16, 2), "f16": ("f16", 16, 2), "tf32": ("tf32", 8, 4),
                "e4m3": ("e4m3", 32, 1), "e5m2": ("e5m2", 32, 1)}
#: swizzle (bytes; None: interleaved core matrices) -> the descriptor's layout code
SWIZZLE_CODES = {None: 0, 128: 1, 64: 2, 32: 3}
MAJORS = ("K", "MN")
#: bytes of one row of a K-major operand slice (K elements), for every input type
K_BYTES = 32
#: accumulator types (PTX's D type): f32 for every input, f16 for f16 and fp8 inputs
ACC_TYPES = ("f32", "f16")
F16_ACC_INPUTS = ("f16", "e4m3", "e5m2")

# --- compile time -----------------------------------------------------------------


def fragment_info(api: str, ty, name: str = "acc") -> tuple[int, str]:
    """(N, accumulator type) of a fragment: N/2 float32 (``"f32"``) or N/4
    uint32 of packed f16 pairs (``"f16"``)."""
    if isinstance(ty, types.UniTuple):
        if ty.dtype == types.float32 and 2 * ty.count in WGMMA_N:
            return 2 * ty.count, "f32"
        if ty.dtype == types.uint32 and 4 * ty.count in WGMMA_N:
            return 4 * ty.count, "f16"
    raise TypingError(f"{api}: {_rules.wgmma_fragment(name=name, got=ty)}; "
                      f"{_rules.wgmma_fragment_f16()}")


def fragment_n(api: str, ty, name: str = "acc") -> int:
    """The N of an accumulator fragment (f32 or f16)."""
    return fragment_info(api, ty, name)[0]


def _check_descriptor(api: str, name: str, ty) -> None:
    if not (isinstance(ty, types.Integer) and ty.bitwidth == 64):
        raise TypingError(f"{api}: `{name}` must be a matrix descriptor (the uint64 of "
                          f"ac.wgmma_descriptor), got {ty}")


def _a_is_registers(api: str, ty) -> bool:
    if isinstance(ty, types.UniTuple) and ty.count == 4 and ty.dtype == types.uint32:
        return True
    if isinstance(ty, types.Integer) and ty.bitwidth == 64:
        return False
    raise TypingError(f"{api}: `a` must be a matrix descriptor (uint64, ac.wgmma_descriptor) or "
                      f"an A fragment in registers (4 x uint32, ac.wgmma_load_a), got {ty}")


def _imm_scale(api: str, name: str, ty) -> int:
    v = literal_value(ty, api, name, kind=int)
    if v not in (1, -1):
        raise TypingError(f"{api}: `{name}`={v} must be 1 or -1 (a negate immediate)")
    return v


def _flag(api: str, name: str, ty) -> bool:
    v = literal_value(ty, api, name, kind=bool)
    if not isinstance(v, bool):
        raise TypingError(f"{api}: {_rules.bool_constant(name=name, value=repr(v))}")
    return v


# --- lowering helpers --------------------------------------------------------------


def _fragment_values(builder, val, count: int):
    return [builder.extract_value(val, i) for i in range(count)]


def _pack_fragment(context, builder, ty, values):
    out = context.get_constant_undef(ty)
    for i, v in enumerate(values):
        out = builder.insert_value(out, v, i)
    return out


def _tied(builder, text: str, values, extra=(), extra_cons=()):
    """Run ``text`` with the fragment ``values`` as tied in/out registers
    ($0..$m-1 out, $m..$2m-1 in: ``f`` for f32 accumulators, ``r`` for the
    b32 words of f16 ones), then ``extra`` inputs; returns the new values.
    The asm both reads and redefines every accumulator register, so nothing
    is moved across it."""
    m = len(values)
    reg = "f" if isinstance(values[0].type, ir.FloatType) else "r"
    cons = [f"={reg}"] * m + [str(i) for i in range(m)] + list(extra_cons)
    ret = ir.LiteralStructType([values[0].type] * m)
    r = asm(builder, text, ",".join(cons), list(values) + list(extra), ret=ret)
    return [builder.extract_value(r, i) for i in range(m)]


def _regs(first: int, count: int) -> str:
    return "{" + ", ".join(f"${first + i}" for i in range(count)) + "}"


# --- synchronisation ---------------------------------------------------------------


@intrinsic
def wgmma_fence(typingctx, acc=None):
    """Order register accesses before the next ``wgmma_mma_async``.

    PTX: ``wgmma.fence.sync.aligned;`` (sm_90a, PTX ISA 8.0),
    warpgroup-collective.  Needed before the first MMA of a warpgroup and
    whenever the accumulators or a register A were written by other
    instructions since the last MMA.  Pass the fragment (``acc =
    ac.wgmma_fence(acc)``) so that the writes that made it stay before the
    fence; with no argument it returns None.

    Example::

        acc = ac.wgmma_fence(ac.wgmma_zero(128))
    """
    api = "wgmma_fence"
    f = select("wgmma.fence")
    text = f.opcode + ";"
    if acc is None or isinstance(acc, (types.NoneType, types.Omitted)):
        def codegen(context, builder, sig, args):
            asm(builder, text, "")
            return context.get_dummy_value()

        return types.none(acc), codegen
    fragment_n(api, acc)

    def codegen(context, builder, sig, args):
        vals = _tied(builder, text, _fragment_values(builder, args[0], acc.count))
        return _pack_fragment(context, builder, sig.return_type, vals)

    return acc(acc), codegen


@intrinsic
def wgmma_commit_group(typingctx):
    """Close the warpgroup's MMAs issued since the last commit into a group.

    PTX: ``wgmma.commit_group.sync.aligned;`` (sm_90a, PTX ISA 8.0),
    warpgroup-collective.

    Example::

        ac.wgmma_commit_group()
    """
    f = select("wgmma.commit_group")

    def codegen(context, builder, sig, args):
        asm(builder, f.opcode + ";", "")
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def wgmma_wait_group(typingctx, n, acc=None):
    """Wait until at most ``n`` committed MMA groups of the warpgroup are
    pending; ``n`` is a compile-time constant 0..7.

    PTX: ``wgmma.wait_group.sync.aligned N;`` (sm_90a, PTX ISA 8.0),
    warpgroup-collective.  The accumulators of an MMA (and the shared tiles
    it reads) may be used only after a wait covers its group: pass the
    fragment and use the one returned (``acc = ac.wgmma_wait_group(0,
    acc)``), which ties the registers to the wait.

    Example::

        ac.wgmma_commit_group()
        acc = ac.wgmma_wait_group(0, acc)
        ac.wgmma_store(acc, c, row0, col0)
    """
    api = "wgmma_wait_group"
    f = select("wgmma.wait_group")
    depth = literal_value(n, api, "n", kind=int)
    if not 0 <= depth <= _rules.WGMMA_MAX_PENDING:
        raise TypingError(f"{api}: " + _rules.outside_range(
            name="n", value=depth, lo=0, hi=_rules.WGMMA_MAX_PENDING))
    text = f"{f.opcode} {depth};"
    if acc is None or isinstance(acc, (types.NoneType, types.Omitted)):
        def codegen(context, builder, sig, args):
            asm(builder, text, "")
            return context.get_dummy_value()

        return types.none(n, acc), codegen
    fragment_n(api, acc)
    m = acc.count

    def codegen(context, builder, sig, args):
        vals = _tied(builder, text, _fragment_values(builder, args[1], m))
        return _pack_fragment(context, builder, sig.return_type, vals)

    return acc(n, acc), codegen


# --- the MMA -----------------------------------------------------------------------


@intrinsic
def wgmma_mma_async(typingctx, acc, a, b, *, dtype=None, scale_d=True, scale_a=1, scale_b=1,
                    trans_a=False, trans_b=False):
    """Issue D = A x B + D (``scale_d`` true) or D = A x B (false) for one
    m64nNk warpgroup tile; returns the new accumulator fragment.

    PTX: ``wgmma.mma_async.sync.aligned.m64nNkK.D.T.T d, a-desc|a-regs,
    b-desc, scale-d, imm-scale-a, imm-scale-b{, imm-trans-a, imm-trans-b};``
    (sm_90a, PTX ISA 8.0), warpgroup-collective, asynchronous: commit it
    (:func:`wgmma_commit_group`) and wait (:func:`wgmma_wait_group`) before
    reading the result or changing the shared tiles it reads.

    - ``acc``: the f32 fragment of N/2 values (``ac.wgmma_zero(N)``), N in
      8..256 step 8; its length gives N.  An f16 fragment (N/4 uint32,
      ``ac.wgmma_zero(N, dtype="f16")``) makes the MMA accumulate in f16
      (D type ``.f16``): f16 and fp8 inputs only.
    - ``a``: a descriptor of the 64 x K tile of A (``ac.wgmma_descriptor``),
      or the A fragment in registers (4 x uint32, :func:`wgmma_load_a`).
    - ``b``: a descriptor of the N x K tile of B (K-major) or, with
      ``trans_b=True``, of its K x N tile (N-major).
    - ``dtype``: the input type, ``"bf16"``, ``"f16"`` (K = 16), ``"tf32"``
      (K = 8) or ``"e4m3"``/``"e5m2"`` (K = 32); required.
    - ``scale_d``: a bool constant or a run-time bool (False: the old
      accumulators are ignored, no zeroing needed).
    - ``scale_a``/``scale_b``: 1 or -1 (negate A or B), constants.
    - ``trans_a``/``trans_b``: constants; True reads the operand M-/N-major
      (its descriptor made with ``major="MN"``).  bf16/f16 only; ``trans_a``
      only for A from a descriptor.

    Example::

        acc = ac.wgmma_fence(acc)
        for kk in range(4):              # a 64 x 64 k-tile: four k16 steps
            acc = ac.wgmma_mma_async(acc, ac.wgmma_descriptor(sa[:, 16 * kk:16 * kk + 16], swizzle=128),
                                     ac.wgmma_descriptor(sb[:, 16 * kk:16 * kk + 16], swizzle=128),
                                     dtype="bf16")
        ac.wgmma_commit_group()
        acc = ac.wgmma_wait_group(0, acc)
    """
    api = "wgmma_mma_async"
    n, acc_t = fragment_info(api, acc)
    regs_a = _a_is_registers(api, a)
    _check_descriptor(api, "b", b)
    t = literal_value(dtype, api, "dtype", kind=str, allowed=tuple(WGMMA_INPUTS))
    ptx_t, k, _ = WGMMA_INPUTS[t]
    if acc_t == "f16" and t not in F16_ACC_INPUTS:
        raise TypingError(f"{api}: {_rules.wgmma_acc_dtype(dtype=t)}")
    key = "wgmma.mma_async" if t in ("bf16", "f16") else f"wgmma.mma_async.{'tf32' if t == 'tf32' else 'f8'}"
    row = select(key + (".f16" if acc_t == "f16" else ""))
    sd = bool_or_runtime(scale_d, api, "scale_d")
    sa, sb = _imm_scale(api, "scale_a", scale_a), _imm_scale(api, "scale_b", scale_b)
    ta, tb = _flag(api, "trans_a", trans_a), _flag(api, "trans_b", trans_b)
    if t not in ("bf16", "f16") and (ta or tb):
        raise TypingError(f"{api}: {_rules.wgmma_no_transpose(dtype=t)}")
    if regs_a and ta:
        raise TypingError(f"{api}: `trans_a`=True needs A from a descriptor (A in registers "
                          "is always K-major, as wgmma_load_a lays it out)")
    opcode = row.opcode.format(n=n, k=k, t=ptx_t)
    m = acc.count  # N/2 f32 or N/4 b32 (f16 pairs) registers
    a_ops = _regs(2 * m, 4) if regs_a else f"${2 * m}"
    nxt = 2 * m + (4 if regs_a else 1)
    imms = [str(sa), str(sb)]
    if t in ("bf16", "f16"):
        imms += ([] if regs_a else [str(int(ta))]) + [str(int(tb))]
    text = (f"{{ .reg .pred p; setp.ne.b32 p, ${nxt + 1}, 0; {opcode} {_regs(0, m)}, {a_ops}, "
            f"${nxt}, p, {', '.join(imms)}; }}")
    extra_cons = (["r"] * 4 if regs_a else ["l"]) + ["l", "r"]

    def codegen(context, builder, sig, args):
        vals = _fragment_values(builder, args[0], m)
        if regs_a:
            a_vals = [builder.extract_value(args[1], i) for i in range(4)]
        else:
            a_vals = [context.cast(builder, args[1], sig.args[1], types.uint64)]
        b_val = context.cast(builder, args[2], sig.args[2], types.uint64)
        if sd is None:
            sd_val = builder.zext(context.cast(builder, args[4], sig.args[4], types.boolean), I32)
        else:
            sd_val = ir.Constant(I32, int(sd))
        out = _tied(builder, text, vals, a_vals + [b_val, sd_val], extra_cons)
        return _pack_fragment(context, builder, sig.return_type, out)

    return acc(acc, a, b, dtype, scale_d, scale_a, scale_b, trans_a, trans_b), codegen


# --- descriptors ---------------------------------------------------------------------


def descriptor_geometry(ndim: int, swizzle, major: str) -> str:
    """What the view of a descriptor must look like (for messages and docs)."""
    if major == "K":
        if swizzle is None:
            return "[2, rows, 16 bytes] (two 16-byte K halves of interleaved 8 x 16-byte core matrices)"
        return f"[rows, 32 bytes] with a {swizzle}-byte row pitch (one K slice of the swizzled tile)"
    if swizzle is None:
        return "[blocks, K, 16 bytes] (8-element M/N blocks of interleaved core matrices)"
    return f"[blocks, K, {swizzle} bytes] ({swizzle}-byte M/N atoms of the swizzled tile)"


@intrinsic
def wgmma_descriptor(typingctx, tile, swizzle=None, major="K"):
    """The 64-bit shared-memory matrix descriptor of the operand ``tile``.

    No PTX form of its own: integer arithmetic on the view's address and
    strides (bits 0-13 start address >> 4, 16-29 leading byte offset >> 4,
    32-45 stride byte offset >> 4, 62-63 the swizzle mode).

    - ``swizzle``: ``None``, 32, 64 or 128: the swizzle the tile was
      written with (the ``TensorMap``'s), a constant.
    - ``major``: ``"K"`` (the default; K contiguous: A row-major, B stored
      N x K) or ``"MN"`` (M/N contiguous: B stored K x N; pass
      ``trans_b=True`` to the MMA), a constant.
    - ``tile``: a shared-memory view, the operand as the MMA reads it, in
      the layout the swizzle mode gives it:

      - K-major, swizzled: 2-D ``[rows, K]`` whose rows are 32 bytes
        (16 bf16/f16, 8 tf32, 32 fp8) with a row pitch of ``swizzle``
        bytes: ``tile[:, 16 * kk:16 * kk + 16]`` of a box TMA wrote with an
        inner dimension of ``swizzle`` bytes.
      - K-major, no swizzle: 3-D ``[2, rows, 16 bytes]``: the two K halves,
        each ``rows`` dense 16-byte rows (TMA boxes of 8 bf16 columns).
      - M/N-major, swizzled: 3-D ``[blocks, K, swizzle bytes]``: the M/N
        extent in ``swizzle``-byte atoms, each K rows (a box per atom).
      - M/N-major, no swizzle: 3-D ``[blocks, K, 16 bytes]``.

      ``rows`` (M or N) is a multiple of 8.  A swizzled tile's 8-row atom
      must start on a multiple of ``8 x swizzle`` bytes (1024 for 128-byte
      swizzle), as TMA needs for that swizzle.  Checked mode traps on a
      view that is not in shared memory, strides that do not match, and a
      misaligned base; the simulator checks the same and that the swizzle
      is the one the tile was written with.

    Example::

        sa = cuda.shared.array((64, 64), np.float16, alignment=1024)  # TMA box, 128B swizzle
        da = ac.wgmma_descriptor(sa[:, 16:32], swizzle=128)           # K step 1
    """
    api = "wgmma_descriptor"
    if not isinstance(tile, types.Array):
        raise TypingError(f"{api}: `tile` must be a shared-memory array view, got {tile}")
    sw = literal_value(swizzle, api, "swizzle", kind=int, required=False,
                       allowed=tuple(SWIZZLE_CODES))
    mj = literal_value(major, api, "major", kind=str, allowed=MAJORS)
    want = 2 if (mj == "K" and sw is not None) else 3
    if tile.ndim != want:
        raise TypingError(f"{api}: {_rules.wgmma_view(name='tile', ndim=tile.ndim, major=mj, swizzle=sw, geometry=descriptor_geometry(want, sw, mj))}")
    isz = itemsize(tile.dtype)
    if isz not in (1, 2, 4):
        raise TypingError(f"{api}: `tile` has {isz}-byte elements; an MMA operand has 1-, 2- or "
                          "4-byte elements")
    code = SWIZZLE_CODES[sw]

    def codegen(context, builder, sig, args):
        v = View(context, builder, sig.args[0], args[0], "tile")
        addr = builder.zext(shared_addr32(builder, v.data), I64)
        s = [builder.zext(x, I64) if x.type != I64 else x for x in v.strides]
        c = lambda x: ir.Constant(I64, x)  # noqa: E731
        if mj == "K" and sw is not None:
            lbo, sbo = c(16), builder.mul(s[0], c(8))
        elif mj == "K":
            lbo, sbo = s[0], builder.mul(s[1], c(8))
        elif sw is not None:
            lbo, sbo = s[0], builder.mul(s[1], c(8))
        else:
            lbo, sbo = builder.mul(s[1], c(8)), s[0]
        if _checked._note_compiled():
            _check_descriptor_view(context, builder, api, v, addr, s, sw, mj, isz)

        def field(x, shift):
            return builder.shl(builder.and_(builder.lshr(x, c(4)), c(0x3FFF)), c(shift))

        d = builder.or_(field(addr, 0), field(lbo, 16))
        d = builder.or_(d, field(sbo, 32))
        return builder.or_(d, c(code << 62))

    return types.uint64(tile, swizzle, major), codegen


def _check_descriptor_view(context, builder, api, v: View, addr, s, sw, mj, isz) -> None:
    """Checked mode: shared memory, the strides of the layout, the base alignment."""
    check_space(context, builder, api, v, "shared")
    c = lambda x: ir.Constant(I64, x)  # noqa: E731
    inner = 16 if sw is None else sw
    pitch = sw if (mj == "K" and sw is not None) else 16 if sw is None else sw
    # element axis dense, rows at the pitch of the layout
    for axis, expect in ((v.ty.ndim - 1, isz), (v.ty.ndim - 2, pitch)):
        bad = builder.icmp_unsigned("!=", s[axis], c(expect))
        trap_if(context, builder, bad, api, _rules.wgmma_stride(
            name="tile", axis=axis, stride="%lld", expect=expect, swizzle=sw, major=mj), [s[axis]])
    if sw is None:
        mis = builder.and_(addr, c(15))
        trap_if(context, builder, builder.icmp_unsigned("!=", mis, c(0)), api,
                _rules.wgmma_base_align(name="tile", addr="0x%llx", align=16, swizzle=sw), [addr])
    else:
        # the swizzle atom (8 rows of `sw` bytes) the view starts in begins at row 0
        off = builder.and_(addr, c(8 * sw - 1))
        bad = builder.icmp_unsigned(">=", off, c(inner))
        trap_if(context, builder, bad, api,
                _rules.wgmma_base_align(name="tile", addr="0x%llx", align=8 * sw, swizzle=sw), [addr])


# --- fragments -----------------------------------------------------------------------


@intrinsic
def wgmma_zero(typingctx, n, dtype="f32"):
    """A zero accumulator fragment of an m64nN MMA; ``n`` a constant in
    8..256 step 8.  No PTX form of its own.

    ``dtype`` (a constant): ``"f32"`` (the default: N/2 float32 a thread)
    or ``"f16"`` (f16 accumulation, for f16 and fp8 inputs: N/4 uint32 a
    thread, each two f16 of adjacent columns).

    Example::

        acc = ac.wgmma_zero(256)                  # 128 registers a thread
        acc16 = ac.wgmma_zero(256, dtype="f16")   # 64 registers a thread
    """
    api = "wgmma_zero"
    nv = literal_value(n, api, "n", kind=int)
    if nv not in WGMMA_N:
        raise TypingError(f"{api}: `n`={nv} is not an N of m64nNk16 (8..256 in steps of 8)")
    dt = literal_value(dtype, api, "dtype", kind=str, allowed=ACC_TYPES)
    if dt == "f16":
        ty = types.UniTuple(types.uint32, nv // 4)
        zero = ir.Constant(I32, 0)
    else:
        ty = types.UniTuple(types.float32, nv // 2)
        zero = ir.Constant(ir.FloatType(), 0.0)

    def codegen(context, builder, sig, args):
        return _pack_fragment(context, builder, ty, [zero] * ty.count)

    return ty(n, dtype), codegen


def _lane_coords(builder):
    """(row of the lane's first element within the warpgroup's 64 rows, column pair base)."""
    tid = linear_tid(builder)
    lane = builder.and_(tid, ir.Constant(I32, 31))
    warp = builder.and_(builder.lshr(tid, ir.Constant(I32, 5)), ir.Constant(I32, 3))
    row = builder.add(builder.shl(warp, ir.Constant(I32, 4)), builder.lshr(lane, ir.Constant(I32, 2)))
    col = builder.shl(builder.and_(lane, ir.Constant(I32, 3)), ir.Constant(I32, 1))
    return row, col


STORE_TYPES = ("float32", "float16", "bf16")


@intrinsic
def wgmma_store(typingctx, acc, out, row0, col0, *, dtype=None, scale=None):
    """Store the warpgroup's m64nN fragment ``acc`` to ``out[row0:row0 + 64,
    col0:col0 + N]`` (a 2-D array in global or shared memory); elements past
    ``out``'s edges are not stored (a masked store).

    ``dtype`` (a constant) converts: ``"float32"`` (the default for a
    float32 ``out``), ``"float16"`` (float16 ``out``, round to nearest) or
    ``"bf16"`` (``out`` of uint16/int16 holding bfloat16 bits,
    ``cvt.rn.bf16.f32``).  An f16 fragment (``wgmma_zero(N, dtype="f16")``)
    stores its f16 values as they are to a float16 ``out``, widened exactly
    to float32, or rounded to bf16.  Every thread of the warpgroup calls it
    with the same ``row0``/``col0``; no lane arithmetic in user code.

    ``scale`` (a run-time float, optional) multiplies every element in f32
    before the conversion: a GEMM's alpha, or the product of an fp8 GEMM's
    per-tensor scales.

    Example::

        acc = ac.wgmma_wait_group(0, acc)
        ac.wgmma_store(acc, c, 64 * cuda.blockIdx.y, 128 * cuda.blockIdx.x)
        ac.wgmma_store(acc, c16, 0, 0, dtype="bf16", scale=sa * sb)   # scaled, to bf16
    """
    api = "wgmma_store"
    n, acc_t = fragment_info(api, acc)
    if not (isinstance(out, types.Array) and out.ndim == 2):
        raise TypingError(f"{api}: `out` must be a 2-D array, got {out}")
    for name, ty in (("row0", row0), ("col0", col0)):
        if not isinstance(getattr(ty, "literal_type", ty), types.Integer):
            raise TypingError(f"{api}: `{name}` must be an integer, got {ty}")
    default = {types.float32: "float32", types.float16: "float16"}.get(out.dtype)
    dt = literal_value(dtype, api, "dtype", kind=str, required=False, allowed=STORE_TYPES) or default
    okay = {"float32": (types.float32,), "float16": (types.float16,),
            "bf16": (types.uint16, types.int16)}
    if dt is None or out.dtype not in okay[dt]:
        raise TypingError(f"{api}: `out` of {out.dtype} cannot hold dtype={dt!r}: float32 and "
                          "float16 arrays store as themselves, bf16 goes to a uint16/int16 array "
                          "(dtype=\"bf16\")")
    scaled = not (scale is None or isinstance(scale, (types.NoneType, types.Omitted)))
    number = getattr(scale, "literal_type", scale)
    if scaled and (isinstance(number, types.Boolean)
                   or not isinstance(number, (types.Float, types.Integer))):
        raise TypingError(f"{api}: `scale` must be a number (a float32 multiplier), got {scale}")

    def codegen(context, builder, sig, args):
        aty = sig.args[1]
        ary = context.make_array(aty)(context, builder, args[1])
        shape = cgutils.unpack_tuple(builder, ary.shape, 2)
        strides = cgutils.unpack_tuple(builder, ary.strides, 2)
        intp = shape[0].type
        r0 = context.cast(builder, args[2], sig.args[2], types.intp)
        c0 = context.cast(builder, args[3], sig.args[3], types.intp)
        lrow, lcol = _lane_coords(builder)
        base_r = builder.add(r0, builder.zext(lrow, intp))
        base_c = builder.add(c0, builder.zext(lcol, intp))
        vals = _fragment_values(builder, args[0], acc.count)
        if acc_t == "f16":  # element j: half j % 2 of word j // 2, widened exactly to f32
            halves = []
            for w in vals:
                for e in range(2):
                    bits = builder.trunc(builder.lshr(w, ir.Constant(I32, 16 * e)), ir.IntType(16))
                    halves.append(builder.fpext(builder.bitcast(bits, ir.HalfType()), ir.FloatType()))
            vals = halves
        if scaled:  # in f32, before the conversion
            sty = getattr(sig.args[5], "literal_type", sig.args[5])
            f = context.cast(builder, args[5], sty, types.float32)
            vals = [builder.fmul(v, f) for v in vals]
        isz = context.get_abi_sizeof(context.get_data_type(aty.dtype))
        k = lambda x: ir.Constant(intp, x)  # noqa: E731
        # the whole 64 x N block inside `out`, rows dense and pairs aligned:
        # one 2-element vector store per pair, no per-element test
        inside = builder.and_(
            builder.and_(builder.icmp_signed(">=", r0, k(0)), builder.icmp_signed(">=", c0, k(0))),
            builder.and_(builder.icmp_signed("<=", builder.add(r0, k(64)), shape[0]),
                         builder.icmp_signed("<=", builder.add(c0, k(n)), shape[1])))
        misaligned = builder.or_(builder.or_(builder.ptrtoint(ary.data, intp), strides[0]),
                                 builder.mul(c0, k(isz)))
        full = builder.and_(
            builder.and_(inside, builder.icmp_signed("==", strides[1], k(isz))),
            builder.icmp_signed("==", builder.and_(misaligned, k(2 * isz - 1)), k(0)))
        with builder.if_else(full, likely=True) as (fast, masked):
            with fast:
                _store_pairs(context, builder, ary.data, strides[0], base_r, base_c, vals, dt, isz)
            with masked:
                _store_masked(context, builder, aty, ary, shape, strides, base_r, base_c, vals, dt)
        return context.get_dummy_value()

    return types.void(acc, out, row0, col0, dtype, scale), codegen


#: the PTX that packs two f32 into one 32-bit pair of 16-bit values (the first, low half)
_PACK = {"float16": "cvt.rn.f16x2.f32 $0, $2, $1;", "bf16": "cvt.rn.bf16x2.f32 $0, $2, $1;"}


def _store_pairs(context, builder, data, stride0, base_r, base_c, vals, dt, isz) -> None:
    """The unmasked epilogue: each lane's column pairs as 8-byte (f32) or
    4-byte (16-bit) stores, from two row pointers."""
    intp = base_r.type
    i8p = ir.IntType(8).as_pointer()
    raw = builder.bitcast(data, i8p)
    rows = []
    for h in range(2):
        r = builder.add(base_r, ir.Constant(intp, 8 * h))
        off = builder.add(builder.mul(r, stride0), builder.mul(base_c, ir.Constant(intp, isz)))
        rows.append(builder.gep(raw, [off]))
    f32 = ir.FloatType()
    # row by row (h outer): a warp's store covers half of each 32-byte sector
    # of its 8 rows, the next column pair's store the other half; issued one
    # after the other, L1 hands L2 whole sectors (interleaving the two rows
    # sent about 25 % more write sectors to L2 in the conv2d epilogue, ncu)
    for h, i in [(h, i) for h in range(2) for i in range(len(vals) // 4)]:
        j = 4 * i + 2 * h  # the pair's first value
        p = builder.gep(rows[h], [ir.Constant(intp, 8 * i * isz)])
        if dt == "float32":
            vec = ir.VectorType(f32, 2)
            v = builder.insert_element(ir.Constant(vec, ir.Undefined), vals[j], ir.Constant(I32, 0))
            v = builder.insert_element(v, vals[j + 1], ir.Constant(I32, 1))
            st = builder.store(v, builder.bitcast(p, vec.as_pointer()))
            st.align = 8
        else:
            v = pure_asm(builder, _PACK[dt], "=r,f,f", [vals[j], vals[j + 1]], ret=I32)
            st = builder.store(v, builder.bitcast(p, I32.as_pointer()))
            st.align = 4


def _store_masked(context, builder, aty, ary, shape, strides, base_r, base_c, vals, dt) -> None:
    """The masked epilogue: element by element, each inside `out` stored."""
    intp = base_r.type
    for j, v in enumerate(vals):
        i, h, e = j // 4, (j // 2) % 2, j % 2
        r = builder.add(base_r, ir.Constant(intp, 8 * h))
        col = builder.add(base_c, ir.Constant(intp, 8 * i + e))
        ok = builder.and_(
            builder.and_(builder.icmp_signed(">=", r, ir.Constant(intp, 0)),
                         builder.icmp_signed("<", r, shape[0])),
            builder.and_(builder.icmp_signed(">=", col, ir.Constant(intp, 0)),
                         builder.icmp_signed("<", col, shape[1])))
        with builder.if_then(ok, likely=True):
            ptr = cgutils.get_item_pointer2(context, builder, ary.data, shape, strides,
                                            aty.layout, [r, col], wraparound=False)
            if dt == "float32":
                builder.store(v, ptr)
            elif dt == "float16":
                builder.store(context.cast(builder, v, types.float32, types.float16), ptr)
            else:
                bits = asm(builder, "cvt.rn.bf16.f32 $0, $1;", "=h,f", [v],
                           ret=ir.IntType(16), clobber_memory=False)
                builder.store(bits, ptr)


@intrinsic
def wgmma_load_a(typingctx, a, row0, col0):
    """The register A fragment of the 64 x 16 tile ``a[row0:row0 + 64,
    col0:col0 + 16]`` of 16-bit elements (bf16 bits in uint16/int16, or
    float16) from global or shared memory: 4 x uint32 a thread, for
    ``wgmma_mma_async(acc, frag, b_desc, ...)``.  Warpgroup-wide like the
    MMA (each warp loads its 16 rows).

    Example::

        fa = ac.wgmma_load_a(a_tile, 0, 16 * kk)
        acc = ac.wgmma_mma_async(acc, fa, db, dtype="bf16")
    """
    api = "wgmma_load_a"
    if not (isinstance(a, types.Array) and a.ndim == 2 and itemsize(a.dtype) == 2):
        raise TypingError(f"{api}: `a` must be a 2-D array of 16-bit elements (bf16 bits in "
                          f"uint16/int16, or float16), got {a}")
    for name, ty in (("row0", row0), ("col0", col0)):
        if not isinstance(getattr(ty, "literal_type", ty), types.Integer):
            raise TypingError(f"{api}: `{name}` must be an integer, got {ty}")
    ret = types.UniTuple(types.uint32, 4)

    def codegen(context, builder, sig, args):
        aty = sig.args[0]
        ary = context.make_array(aty)(context, builder, args[0])
        shape = cgutils.unpack_tuple(builder, ary.shape, 2)
        strides = cgutils.unpack_tuple(builder, ary.strides, 2)
        intp = shape[0].type
        r0 = context.cast(builder, args[1], sig.args[1], types.intp)
        c0 = context.cast(builder, args[2], sig.args[2], types.intp)
        lrow, lcol = _lane_coords(builder)
        base_r = builder.add(r0, builder.zext(lrow, intp))
        base_c = builder.add(c0, builder.zext(lcol, intp))
        i16 = ir.IntType(16)
        regs = []
        for q in range(4):  # reg q: rows +8*(q%2), cols +8*(q//2), two adjacent elements
            r = builder.add(base_r, ir.Constant(intp, 8 * (q % 2)))
            halves = []
            for e in range(2):
                col = builder.add(base_c, ir.Constant(intp, 8 * (q // 2) + e))
                ptr = cgutils.get_item_pointer2(context, builder, ary.data, shape, strides,
                                                aty.layout, [r, col], wraparound=False)
                halves.append(builder.zext(builder.bitcast(builder.load(ptr), i16)
                                           if ptr.type.pointee != i16 else builder.load(ptr), I32))
            regs.append(builder.or_(halves[0], builder.shl(halves[1], ir.Constant(I32, 16))))
        return _pack_fragment(context, builder, ret, regs)

    return ret(a, row0, col0), codegen


# --- register reallocation ---------------------------------------------------------------


def _setmaxnreg(api: str, op: str):
    def typing(typingctx, r):
        f = select("setmaxnreg")
        v = literal_value(r, api, "r", kind=int)
        if not (24 <= v <= 256 and v % 8 == 0):
            raise TypingError(f"{api}: {_rules.setmaxnreg_count(value=v)}")
        text = f"{f.opcode.format(op=op)} {v};"

        def codegen(context, builder, sig, args):
            asm(builder, text, "")
            return context.get_dummy_value()

        return types.void(r), codegen

    typing.__name__ = typing.__qualname__ = api
    return typing


def setmaxnreg_inc(typingctx, r):
    """Raise this warpgroup's per-thread register limit to ``r``.

    PTX: ``setmaxnreg.inc.sync.aligned.u32 r;`` (sm_90a, PTX ISA 8.0),
    warpgroup-collective; ``r`` a constant multiple of 8 in 24..256.  Blocks
    until enough registers are free (released by other warpgroups'
    :func:`setmaxnreg_dec`); the kernel's register count at launch must not
    exceed ``r``.

    The kernel needs a register limit: compile it with
    ``@cuda.jit(launch_bounds=(threads, 1))`` (or ``max_registers=``).
    Measured with ptxas 13: without one, ptxas drops every ``setmaxnreg``
    without a word, and the warpgroups keep the launch's register count.

    Example::

        if cuda.threadIdx.x >= 128:          # consumer warpgroups
            ac.setmaxnreg_inc(232)
        else:                                # the producer
            ac.setmaxnreg_dec(40)
    """
    return _setmaxnreg("setmaxnreg_inc", "inc")(typingctx, r)


def setmaxnreg_dec(typingctx, r):
    """Lower this warpgroup's per-thread register limit to ``r``, releasing
    registers for :func:`setmaxnreg_inc` of other warpgroups.

    PTX: ``setmaxnreg.dec.sync.aligned.u32 r;`` (sm_90a, PTX ISA 8.0),
    warpgroup-collective; ``r`` a constant multiple of 8 in 24..256.  Like
    :func:`setmaxnreg_inc`, it needs a kernel compiled with launch bounds.

    Example::

        ac.setmaxnreg_dec(40)
    """
    return _setmaxnreg("setmaxnreg_dec", "dec")(typingctx, r)


setmaxnreg_inc = intrinsic(setmaxnreg_inc)
setmaxnreg_dec = intrinsic(setmaxnreg_dec)


# --- what checked mode checks here (the README's table is made from these) ------

_checked.declare("wgmma_descriptor", "tile", _rules.not_in_space, name="tile", space="shared")
_checked.declare("wgmma_descriptor", "tile", _rules.wgmma_stride, name="tile", axis="k", stride="…",
                 expect="…", swizzle="…", major="…")
_checked.declare("wgmma_descriptor", "tile", _rules.wgmma_base_align, name="tile", addr="…",
                 align="8 x swizzle", swizzle="…")
