"""A kernel's choices kept with its step (Args.planned, issue 30): a conv works out its
settings, padding and path on its first run and keeps them for the next runs whose input and
weight have the shapes they had, with the same threads lent; another shape, another thread
count or a setting given by a var works them out again. A max_pool keeps its layout the same
way. Whatever is kept, the results are the definition's and the memory limit is still checked."""
import numpy as np
import pytest

import miltext
from miltext.interpreter import RunError, Session, blas_threads
from miltext.interpreter.kernels import conv as conv_kernel

RNG = np.random.default_rng(5)
W = (RNG.standard_normal((8, 4, 3, 3)) / 6).astype(np.float32)


def program(pad: str) -> str:
    return f"""main[CoreML7](%x: (1, 4, is0, is1, fp32), %w: (8, 4, 3, 3, fp32), %p: (4, int32)) {{
  block0() {{
    %y = conv(x=%x, weight=%w, pad_type="custom", pad={pad}, name="c")
  }} -> (%y)
}}"""


def definition(x, pad):
    """The correlation as the op defines it, in float64."""
    top, bottom, left, right = pad
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    return np.einsum("nchwij,kcij->nkhw", windows, W.astype(np.float64))


@pytest.fixture
def paths(monkeypatch):
    """The times each conv worked out its path."""
    worked = []
    path = conv_kernel._path

    def counted(*args):
        worked.append(args[2].shape)
        return path(*args)
    monkeypatch.setattr(conv_kernel, "_path", counted)
    return worked


def test_a_conv_works_out_its_path_once_for_the_same_shapes(paths):
    session = Session(miltext.loads(program("[1, 1, 1, 1]")))
    p = np.array([9, 9, 9, 9], np.int32)         # not read: the pad is the op's literal
    for size in (12, 12, 12, 20, 20, 12):
        x = RNG.standard_normal((1, 4, size, size)).astype(np.float32)
        y = session.run({"x": x, "w": W, "p": p})["y"]
        np.testing.assert_allclose(y, definition(x, (1, 1, 1, 1)), rtol=1e-4, atol=1e-4)
    assert paths == [(1, 4, 12, 12), (1, 4, 20, 20), (1, 4, 12, 12)]


def test_a_conv_whose_padding_is_a_var_works_it_out_at_every_run(paths):
    session = Session(miltext.loads(program("%p")))
    x = RNG.standard_normal((1, 4, 12, 12)).astype(np.float32)
    for pad in ((1, 1, 1, 1), (0, 0, 0, 0), (2, 0, 1, 0)):
        y = session.run({"x": x, "w": W, "p": np.array(pad, np.int32)})["y"]
        np.testing.assert_allclose(y, definition(x, pad), rtol=1e-4, atol=1e-4)
    assert len(paths) == 3


def test_other_threads_lent_work_the_path_out_again(paths, monkeypatch):
    setter = blas_threads._local_setter()
    if setter is None:
        pytest.skip("a BLAS other than NumPy's bundled OpenBLAS lends no threads")
    monkeypatch.setattr("os.getloadavg", lambda: (0.0, 0.0, 0.0))
    session = Session(miltext.loads(program("[1, 1, 1, 1]")))
    x = RNG.standard_normal((1, 4, 12, 12)).astype(np.float32)
    p = np.zeros(4, np.int32)
    for threads in (1, 1, 2, 2, 1):
        before = setter(threads)
        try:
            session.run({"x": x, "w": W, "p": p})
        finally:
            setter(before)
    assert len(paths) == 3


def pool_program(kernel: str) -> str:
    return f"""main[CoreML7](%x: (1, 3, is0, is1, fp32), %k: (2, int32)) {{
  block0() {{
    %y = max_pool(x=%x, kernel_sizes={kernel}, strides=[2, 2], pad_type="custom", pad=[1, 1, 1, 1],
                  ceil_mode=true, name="p")
  }} -> (%y)
}}"""


def pool_definition(x, k: int):
    """Each window's max as the op defines it: -inf padding, ceil mode dropping a window that
    would start in the end padding."""
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1 + k), (1, 1 + k)), constant_values=-np.inf)
    def size(n):
        out = -(-(n + 2 - k) // 2) + 1
        return out - 1 if (out - 1) * 2 >= n + 1 else out
    ho, wo = size(x.shape[2]), size(x.shape[3])
    return np.array([[[[padded[0, c, 2 * i:2 * i + k, 2 * j:2 * j + k].max() for j in range(wo)]
                       for i in range(ho)] for c in range(x.shape[1])]])


@pytest.fixture
def pool_plans(monkeypatch):
    """The input shapes each max_pool worked out its plan for."""
    from miltext.interpreter.kernels import pool
    worked = []
    plan = pool._MaxPlan

    class Counted(plan):
        __slots__ = ()

        def __init__(self, a, x):
            worked.append(x.shape)
            super().__init__(a, x)
    monkeypatch.setattr(pool, "_MaxPlan", Counted)
    return worked


def test_a_max_pool_works_out_its_plan_once_for_the_same_shape(pool_plans):
    session = Session(miltext.loads(pool_program("[3, 3]")))
    for size in (9, 9, 9, 12, 12, 9):
        x = RNG.standard_normal((1, 3, size, size)).astype(np.float32)
        y = session.run({"x": x, "k": np.array([5, 5], np.int32)})["y"]
        np.testing.assert_array_equal(y, pool_definition(x, 3))
    assert pool_plans == [(1, 3, 9, 9), (1, 3, 12, 12), (1, 3, 9, 9)]


def test_a_kept_max_pool_plan_still_checks_the_memory_limit(pool_plans):
    session = Session(miltext.loads(pool_program("[3, 3]")))
    x = RNG.standard_normal((1, 3, 40, 40)).astype(np.float32)
    session.run({"x": x, "k": np.zeros(2, np.int32)})
    # the padded input, in float64: 1 x 3 x 45 x 45 x 8 bytes
    with pytest.raises(RunError, match="the padded input"):
        session.run({"x": x, "k": np.zeros(2, np.int32)}, max_memory=40_000)
    assert pool_plans == [(1, 3, 40, 40)]
