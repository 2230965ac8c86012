"""The one door to coreai-core (the optional extra `miltext[coreai]`): MLIR text to an
`.aimodel`, an `.aimodel` back to text, and a run on Core AI's runtime (Linux: CPU)."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager

from ..errors import InputError

INSTALL = ("`pip install --pre coreai-core`, or in a miltext checkout "
           "`pip install -e '.[coreai]'`")


def require():
    """coreai-core's modules, or an InputError saying how to install it."""
    try:
        import coreai.authoring as authoring
        import coreai.runtime as runtime
        from coreai._compiler import ir
    except ImportError as e:
        raise InputError(f"miltext: error: Core AI needs coreai-core, which is not installed ({e}); "
                         f"install it with: {INSTALL}") from None
    return authoring, runtime, ir


def parse(text: str):
    """The AIProgram of a `coreai` module's text; ValueError with the parser's words."""
    authoring, _, ir = require()
    context = authoring.Context()._mlir_context
    with context:
        try:
            module = ir.Module.parse(text)
        except Exception as e:          # MLIRError: the parser's diagnostics
            raise ValueError(str(e)) from None
    return authoring.AIProgram._from_mlir_module(module)


def save(text: str, path: str) -> None:
    """Write the module's text as the `.aimodel` folder `path` (which must not exist)."""
    from pathlib import Path

    from coreai._compiler.passmanager import PassManager
    program = parse(text)
    module = program._module._mlir_module
    with module.context:     # locations point into a text that is not kept: not stored
        PassManager.parse("builtin.module(strip-debuginfo)").run(module.operation)
    with _quiet():
        try:
            program.save_asset(Path(path))
        except Exception as e:
            cause = e.__cause__ or e
            raise ValueError(str(cause)) from None


MLIR_BYTECODE = b"ML\xefR"      # the magic number MLIR bytecode starts with


def is_coreai_file(path: str) -> bool:
    """An `.aimodel` folder, or its MLIR bytecode (`main.mlirb`, as git hands it to textconv)."""
    if os.path.isdir(path):
        return path.rstrip("/\\").endswith(".aimodel") and os.path.isfile(os.path.join(path, "main.mlirb"))
    if not path.endswith(".mlirb") or not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return f.read(4) == MLIR_BYTECODE


def asset_text(path: str) -> str:
    """The MLIR text of an `.aimodel` folder or its `main.mlirb` (weights shown past 16
    elements as an elided resource)."""
    authoring, _, ir = require()
    from pathlib import Path
    bytecode = os.path.join(path, "main.mlirb") if os.path.isdir(path) else path
    try:
        with open(bytecode, "rb") as f:
            if f.read(4) != MLIR_BYTECODE:
                raise ValueError("no MLIR bytecode")
        program = authoring.AIProgram._load_bytecode(Path(bytecode))
    except (Exception, SystemError) as e:
        reason = str(e).strip().split("\n")[0] or type(e).__name__
        raise InputError(f"{path}: error: not a Core AI model ({reason})") from None
    module = program._module._mlir_module
    return module.operation.get_asm(large_elements_limit=16, large_resource_limit=64)


class RuntimeFailure(Exception):
    """Core AI's runtime could not compile or run a function: its own words, or how it died."""


def run(path: str, function: str, inputs: dict, states: dict | None = None, steps: int = 1) -> list:
    """The outputs (name -> numpy) of `function` of the `.aimodel` at `path`, once per step; the
    states (name -> numpy, updated in place as the runtime writes them) carry over the steps.
    The runtime works in a process of its own: when its compiler crashes (it can, on a graph
    it cannot lower), RuntimeFailure says so and this process lives on."""
    import signal
    import subprocess
    import tempfile

    import numpy as np
    require()
    states = {} if states is None else states
    with tempfile.TemporaryDirectory(prefix="miltext-coreai-") as work:
        sent, got, said = (os.path.join(work, n) for n in ("in.npz", "out.npz", "error.txt"))
        np.savez(sent, **{f"input:{k}": v for k, v in inputs.items()},
                 **{f"state:{k}": v for k, v in states.items()})
        code = f"from miltext.coreai.runtime import _child; _child({path!r}, {function!r}, {steps}, {work!r})"
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [package_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        done = subprocess.run([sys.executable, "-c", code], stdin=subprocess.DEVNULL, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if done.returncode < 0:
            name = signal.Signals(-done.returncode).name
            raise RuntimeFailure(f"it crashed ({name}) compiling or running the graph")
        if done.returncode != 0 or not os.path.exists(got):
            words = open(said).read() if os.path.exists(said) else done.stderr.decode(errors="replace")
            raise RuntimeFailure(words.strip() or f"Core AI's runtime stopped (exit {done.returncode})")
        with np.load(got) as found:
            results = [{} for _ in range(steps)]
            for key in found.files:
                kind, _, name = key.partition(":")
                if kind == "state":
                    states[name][...] = found[key]
                else:
                    results[int(kind)][name] = found[key]
    return results


def _child(path: str, function: str, steps: int, work: str) -> None:
    """The runtime's side of `run`: inputs and states from work/in.npz, each step's outputs
    and the states it leaves to work/out.npz, the runtime's error to work/error.txt."""
    import numpy as np
    loaded = np.load(os.path.join(work, "in.npz"))
    inputs = {k.partition(":")[2]: loaded[k] for k in loaded.files if k.startswith("input:")}
    states = {k.partition(":")[2]: loaded[k] for k in loaded.files if k.startswith("state:")}
    try:
        results = _run_here(path, function, inputs, states, steps)
    except Exception as e:
        with open(os.path.join(work, "error.txt"), "w") as f:
            f.write(str(e))
        sys.exit(3)
    np.savez(os.path.join(work, "out.npz"), **{f"{i}:{k}": v for i, r in enumerate(results) for k, v in r.items()},
             **{f"state:{k}": v for k, v in states.items()})


def _run_here(path: str, function: str, inputs: dict, states: dict, steps: int) -> list:
    import asyncio
    authoring, runtime, _ = require()

    async def go():
        asset = authoring.AIModelAsset.load(path)
        results = []
        async with asset.executable() as model:
            fn = model.load_function(function)
            held = {k: runtime.NDArray(v) for k, v in (states or {}).items()}
            for _ in range(steps):
                out = await fn({k: runtime.NDArray(v) for k, v in inputs.items()}, held)
                results.append({k: v.numpy() for k, v in out.items()})
            for k, v in held.items():
                states[k][...] = v.numpy()
        return results

    with _quiet():
        return asyncio.run(go())


@contextmanager
def _quiet():
    """The runtime's own chatter on stdout and stderr ("Loading function ...") held back: a
    command's output is its own."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)
