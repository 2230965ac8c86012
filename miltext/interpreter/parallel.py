"""Work split across the threads a run may use. NumPy lets go of the GIL inside its loops,
copies and BLAS calls on big arrays, so contiguous pieces of one op's work (row bands of a
convolution, chunks of an elementwise op, channels of a pool) run at once on separate
threads. How many: the threads blas_threads lends a run's big products (one outside a run,
on a busy machine, or when the BLAS was given one thread), and never more pieces than the
work has `enough`-sized parts (a hand-off costs tens of microseconds). The calling thread
takes the first piece; the others go to a few worker threads made on first use and kept
(one fewer than the threads lent, each running its BLAS on one thread); a piece no worker
has started when the calling thread is done with its own (the worker's core is busy) is run
by the calling thread. A worker never splits again, so a piece never waits for another. A
C kernel that does a whole part without the GIL (a band of a convolution, a block of a
product's columns) instead takes parts from a counter until none is left (`claimed`): the
calling thread posts the call, and the workers spinning between pieces join it in C at once,
with no task or GIL between; a worker asleep is handed a task that joins it. The threads
balance themselves, part by part."""
from __future__ import annotations

import ctypes
import os
import threading
from queue import SimpleQueue

import numpy as np

from . import blas_threads
from .fast_kernels import loaded, multiplies


def threads(work: int, enough: int) -> int:
    """The threads for `work` units when a piece pays from `enough` of them: 1, or up to the
    run's lent threads."""
    if work < 2 * enough:           # most ops of a model of small ops: asked first
        return 1
    lent = blas_threads.lent()
    return 1 if lent <= 1 else min(lent, _CORES, work // enough)


def sharing() -> tuple:
    """What the kernels' shares of work follow from besides their sizes: the threads the run
    lends, the cores, and the part sizes below (a kernel's choices kept for it hold while
    this is as it was)."""
    return blas_threads.lent(), _CORES, COLUMNS, BLOCK_CLAIMS, _CLAIMS


def split(count: int, work, pieces: int) -> None:
    """work(start, stop) over `pieces` contiguous parts of range(count), at once; returns when
    every part is done, raising the first part's error."""
    pieces = min(pieces, count)
    if pieces <= 1:
        if count:
            work(0, count)
        return
    bounds = [count * i // pieces for i in range(pieces + 1)]
    tasks = [_Task(work, bounds[i], bounds[i + 1]) for i in range(1, pieces)]
    _POOL.start(len(tasks))
    _POOL.hand(tasks)
    failed = None
    try:
        work(bounds[0], bounds[1])
    except BaseException as error:
        failed = error
    native = loaded()
    for task in tasks:      # every part done before returning (they write into the caller's arrays)
        if task.take():     # no worker has started it (its core is busy): the caller runs it
            if failed is None:
                task.run()
            continue
        if native is not None:      # awake for the worker's word (woken from sleep, it took ~90 us)
            native.spin(task.finished, 0, _AWAIT)
        task.done.wait()
    if failed is not None:
        raise failed
    for task in tasks:
        if task.error is not None:
            raise task.error


def bands(count: int, work, pieces: int, macs: int) -> None:
    """work(start, stop) over range(count) (bands of a convolution's products): shared among
    `pieces` threads, or on the calling thread with the BLAS threads a product of `macs`
    multiply-adds takes."""
    if pieces > 1:
        split(count, work, pieces)
    else:
        with blas_threads.sized(macs):
            work(0, count)


def claims(parts: int, pieces: int) -> bool:
    """Whether `parts` taken from a counter are enough for `pieces` threads: _CLAIMS each, so
    a thread that starts late or runs on a slower core can take fewer (with fewer, a 28x28
    layer's Winograd bands of 10 tile rows and 4 ran slower than NumPy's halves)."""
    return parts >= _CLAIMS * pieces


def claimed(native, run, pieces: int, macs: int) -> None:
    """run(counter) (a kernel of the C kernels `native`, taking its parts from counter[0], an
    int64 each part bumps, until none is left; a first phase's from counter[2], counted in
    counter[3]) shared with `pieces` - 1 workers (counter[1]), which join it as it runs, so a
    thread that starts late or runs on a slower core takes fewer parts; on one thread, with the
    BLAS threads a product of `macs` multiply-adds takes."""
    counter = np.zeros(4, np.int64)
    if pieces <= 1:
        with blas_threads.sized(macs):
            run(counter)
        return
    counter[1] = helpers = pieces - 1
    _POOL.start(helpers)
    asleep = helpers - native.spinners()
    if asleep > 0:          # woken by a task, they join the call in C when they get to it
        _POOL.hand([_Task(_join, native, 0) for _ in range(asleep)])
    run(counter)


def _join(native, unused: int) -> None:
    """A woken worker's task: the C call `native` posted now, joined (none: nothing to do)."""
    native.join()


def chunks(fn, inputs: tuple, out, pieces: int):
    """fn(*inputs, out=out) taken over `pieces` chunks of the flat elements; each input is
    C-contiguous of out's shape, or 0-dimensional."""
    flat_out = out.reshape(-1)
    flat = [x.reshape(-1) if x.ndim else x for x in inputs]

    def part(start, stop):
        fn(*(x[start:stop] if x.ndim else x for x in flat), out=flat_out[start:stop])
    split(flat_out.size, part, pieces)
    return out


def by_parts(native, run, size: int, piece: int) -> None:
    """run(counter) (a kernel of the C kernels `native` over `size` elements, taking its parts
    from the counter; all of them at once given None), shared (claimed) among the run's threads
    when each gets `piece` elements."""
    share = threads(size, piece)
    if share > 1:
        claimed(native, run, share, 0)
    else:
        run(None)


# Multiply-adds a thread's part of a product must have: half of what blas_threads would
# lend a product more BLAS threads at, so every product it would lend them to is shared by the
# pool instead. The two must not meet in a run: OpenBLAS's lent thread spins for ~100 ms
# after its product, taking the pool's core.
PIECE = blas_threads.SMALL // 2


def product(x, w, out, pieces: int, bias=None):
    """np.matmul(x, w, out=out) (+ bias, of w's columns, when given) for x (M, K) and w (K, N)
    (a transposed view is fine), the output's columns shared among `pieces` threads, each
    adding the bias to its part while it is in cache: in blocks taken from a counter by the C
    kernels (float32, x and out C-contiguous, w or its transpose too; a linear's weight as
    stored multiplies x's transpose, see product_columns), else in halves."""
    native = loaded()
    if _claims_product(native, x, w, out, pieces, bias):
        m, k = x.shape
        n = w.shape[1]
        transposed = not w.flags.c_contiguous
        given = w.T if transposed else w
        block = _product_block(n, pieces, m)
        turned = transposed and 4 * block * m <= TURNED
        claimed(native, lambda counter: native.product_columns(x, given, bias, out, counter, m, k, n, block,
                                                               transposed, turned), pieces, m * k * n)
        return out

    def part(start, stop):
        np.matmul(x, w[:, start:stop], out=out[:, start:stop])
        if bias is not None:
            out[:, start:stop] += bias[start:stop]
    split(w.shape[1], part, pieces)
    return out


def _claims_product(native, x, w, out, pieces: int, bias) -> bool:
    """Whether product's C kernels (`native`) take x, w, out and bias, in a block for each
    thread at least."""
    n = w.shape[1]
    if native is None or not x.size or not w.size or -(-n // _product_block(n, pieces, len(x))) < pieces:
        return False
    f32 = np.float32
    if x.dtype != f32 or w.dtype != f32 or out.dtype != f32 or not (x.flags.c_contiguous and out.flags.c_contiguous):
        return False
    if not (w.flags.c_contiguous or w.T.flags.c_contiguous):
        return False
    if bias is not None and (bias.dtype != f32 or bias.shape != w.shape[1:] or not bias.flags.c_contiguous):
        return False
    return multiplies(native)


def _product_block(n: int, pieces: int, m: int) -> int:
    """Columns a block of a product's n (of m rows) holds: the columns shared evenly among the
    threads (in multiples of 64), no wider than a turned product of TURNED bytes (PRODUCT_MIN
    at the least): one block a thread, as the BLAS packs x again for each block (on two
    threads a GPT-2 block's 768-column linears ran 20% faster in halves than in blocks of 128
    from a counter), many for long inputs."""
    even = -(-n // pieces // 64) * 64
    return max(1, min(n, even, max(PRODUCT_MIN, TURNED // (4 * m))))


def matmul(x, y, out, pieces: int):
    """np.matmul(x, y, out=out) for x and y of rank 2 or more (batch dims broadcast), shared
    among `pieces` threads: a stack of float32 products by the C kernels, its entries taken
    from a counter, each operand read in place where a matrix's rows or columns are one float
    apart (attention's heads, views of a split: on two threads a GPT-2 block's took 0.84 ms
    shared in halves by NumPy's matmul, as long as on one); else over the first batch dim of
    out with more than one entry (an operand's own dim of 1 taken whole), else over out's
    columns."""
    native = loaded()
    entries = out.size // max(out.shape[-1] * out.shape[-2], 1) if out.ndim > 2 else 1
    if (native is not None and claims(entries, pieces) and x.dtype == y.dtype == out.dtype == np.float32
            and out.flags.c_contiguous and out.size and x.shape[-1] and multiplies(native)):
        stack = out.shape[:-2]
        xs, ys = (np.broadcast_to(_readable(v), stack + v.shape[-2:]) for v in (x, y))
        claimed(native, lambda counter: native.products(xs, ys, out, counter), pieces, 0)
        return out
    lead = out.ndim - 2
    axis = next((i for i in range(lead) if out.shape[i] > 1), None)
    if axis is None:
        return product(x.reshape(x.shape[-2:]), y.reshape(y.shape[-2:]), out.reshape(out.shape[-2:]), pieces)

    def take(v, start, stop):
        own = axis - (out.ndim - v.ndim)        # the axis in v's dims (v may have fewer)
        return v if own < 0 or v.shape[own] == 1 else v[(slice(None),) * own + (slice(start, stop),)]

    def part(start, stop):
        np.matmul(take(x, start, stop), take(y, start, stop), out=take(out, start, stop))
    split(out.shape[axis], part, pieces)
    return out


def _readable(v):
    """v, or a C-contiguous copy where products could not read it in place: a matrix's rows
    or columns one float apart, the others at least a row or column's length apart, no stride
    negative."""
    rows, cols = v.shape[-2:]
    row_stride, col_stride = v.strides[-2:]
    by_rows = (cols == 1 or col_stride == 4) and (rows == 1 or row_stride >= 4 * cols)
    by_columns = (rows == 1 or row_stride == 4) and (cols == 1 or col_stride >= 4 * rows)
    whole_floats = row_stride % 4 == col_stride % 4 == 0
    return v if min(v.strides) >= 0 and whole_floats and (by_rows or by_columns) else np.ascontiguousarray(v)


class _Task:
    """A part of a split, run by the first thread to take it: a worker, or the caller once
    its own part is done. `done` is set when it has run; `finished` is set to 1 by a worker
    that ran it once the worker has let go of the GIL (what the caller spins on)."""
    __slots__ = ("work", "start", "stop", "done", "error", "taken", "finished")

    def __init__(self, work, start: int, stop: int):
        self.work, self.start, self.stop = work, start, stop
        self.done, self.error, self.taken = threading.Event(), None, threading.Lock()
        self.finished = np.zeros(1, np.int64)

    def take(self) -> bool:
        """Whether the calling thread is the first to take the task (it then runs it)."""
        return self.taken.acquire(False)

    def run(self) -> None:
        try:
            self.work(self.start, self.stop)
        except BaseException as error:      # handed to the caller, which raises it
            self.error = error
        finally:
            self.done.set()


_CORES = blas_threads.cores()
# Outputs (a product's columns) each part taken from a counter holds: ResNet-18's 56x56 layers
# ran 14% faster in Winograd bands of 140 tiles than in one band or in halves, a band's data
# staying in the core's cache, and as fast as in bands of 200.
COLUMNS = 128
# Bytes of a product's block turned in C (see product_columns): one whole 128-token linear of
# GPT-2 fits (128 x 3072 x 4 is 1.5 MB); a long input's columns are cut into narrower blocks,
# of PRODUCT_MIN at the least, multiplied in the BLAS's other order where even those are past it.
TURNED = 1 << 21
PRODUCT_MIN = 128
_CLAIMS = 3
# Parts each thread takes where every part multiplies the same shared operand (blocks of a
# layer's output channels, each by all the layer's windows): the BLAS packs that operand again
# for every part, so one part a thread. ResNet-18 on two threads: 22.8 ms against 23.8 with
# _CLAIMS parts a thread (alternating runs in one process), the 7x7 and 14x14 layers gaining.
BLOCK_CLAIMS = 1
# Seconds a worker stays awake after a piece, waiting for the next without sleeping: woken from
# sleep it starts 30-60 us late, on a core the machine has clocked down (in a ResNet-18 run its
# pieces took 20-80% longer than the caller's same-sized ones); a run's gaps between shared ops
# are shorter than this.
_SPIN = 0.002
# Seconds a caller waits awake for a worker's piece (its own core has nothing else to do); past
# that it sleeps.
_AWAIT = 0.05


class _Pool:
    """Worker threads taking tasks from one queue; made when first needed, at most one per
    core but one, and kept for the process's life (daemons: they never hold up its exit)."""

    def __init__(self):
        self.queue = SimpleQueue()
        self.signal = np.zeros(1, np.int64)     # bumped at each hand-off: what spinning workers watch
        self.workers = 0
        self.lock = threading.Lock()

    def hand(self, tasks: list) -> None:
        for task in tasks:
            self.queue.put(task)
        self.signal[0] += 1

    def start(self, count: int) -> None:
        if self.workers >= count:
            return
        with self.lock:
            while self.workers < min(count, max(_CORES - 1, 1)):
                threading.Thread(target=self._serve, name=f"miltext-worker-{self.workers}", daemon=True).start()
                self.workers += 1

    def _serve(self) -> None:
        setter = blas_threads._local_setter()
        if setter is not None:
            setter(1)                       # the pieces share the cores: one BLAS thread each
        finished = None                     # the last task's word to its caller, given in the spin
        while True:
            native = loaded()
            if native is not None:     # awake a while for the next piece (seen read first: a
                seen = int(self.signal[0])      # hand-off after it ends the spin at once)
                wait = _SPIN if self.queue.empty() else 0.0
                native.spin(self.signal, seen, wait, finished, True)
            finished = None
            task = self.queue.get()
            if task.take():
                task.run()
                finished = task.finished

    def _forked(self) -> None:
        """A forked child has none of its parent's threads: it makes its own."""
        self.queue, self.signal, self.workers, self.lock = SimpleQueue(), np.zeros(1, np.int64), 0, threading.Lock()


def keep_freed_memory() -> None:
    """From a process's first run on, glibc's malloc keeps what a run frees for the next
    (thresholds pinned at the values its own dynamic rule climbs to: arrays below 32 MB from
    its heaps, which it trims only past 64 MB free). Left to the rule, a ResNet-18 run on two
    threads (a worker's arena beside the main one) gave ~15 MB back and faulted it in again
    each time (3,600 page faults, 10-17 ms of system time, a quarter of the run); a GPT-2
    block on one thread spent 3 ms a run in the kernel against 1 pinned, and ran 1.4-2.5 ms
    slower. Once a process; elsewhere (no glibc) nothing changes."""
    global _kept
    if _kept:
        return
    _kept = True
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    mallopt(_M_TRIM_THRESHOLD, 64 << 20)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3        # glibc's malloc.h
_kept = False
_POOL = _Pool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL._forked)
