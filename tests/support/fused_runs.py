"""Running a program with its ops folded together (interpreter/fusion.py) and without: what the
fusion tests compare."""
import miltext
from miltext.interpreter import blas_threads


def program(body: str, inputs: str, outputs: str) -> str:
    """A main function of one block: `body`'s op lines, taking `inputs`, giving `outputs`."""
    return f"main[CoreML7]({inputs}) {{\n  block0() {{\n{body}  }} -> ({outputs})\n}}\n"


def runs(text: str, inputs: dict, threads: int = 1):
    """The outputs of a run without an observer (its ops folded), twice (the second with the kept
    plans, to the same bits), and of one with an observer (every op run alone), and what the
    observer saw; on `threads` threads where NumPy's BLAS lends them."""
    setter = blas_threads._local_setter()
    before = setter(threads) if setter is not None else None
    try:
        session = miltext.Session(miltext.loads(text))
        plain, again = session.run(inputs), session.run(inputs)
        seen = {}
        observed = session.run(inputs, observer=lambda fn, path, op, values: seen.update(values))
    finally:
        if setter is not None:
            setter(before)
    for name in plain:
        assert again[name].tobytes() == plain[name].tobytes()
    return plain, observed, seen
