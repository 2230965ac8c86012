"""A kernel's choices kept with its step (Args.planned, issue 30): a conv works out its
settings, padding and path on its first run and keeps them for the next runs whose input and
weight have the shapes they had, with the same threads lent; another shape, another thread
count or a setting given by a var works them out again. Whatever is kept, the results are
the definition's."""
import numpy as np
import pytest

import miltext
from miltext.interpreter import Session, blas_threads
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
