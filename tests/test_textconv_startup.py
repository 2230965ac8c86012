"""`miltext textconv` starts light: git runs it once per file version, so it must not import what
it does not use (the issue's budget is a tenth of `import coremltools`; bench/textconv_startup.py
times it). These tests keep the heavy modules out, so the start-up cannot quietly regress."""
import os
import subprocess
import sys

from miltext.cli import build_parser, textconv_args

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "tests", "review", "mlp6.mlpackage")
MODEL = os.path.join(PACKAGE, "Data", "com.apple.CoreML", "model.mlmodel")
WEIGHTS = os.path.join(PACKAGE, "Data", "com.apple.CoreML", "weights", "weight.bin")

# What textconv of a model needs none of: the arrays, the parser, coremltools, protobuf's Python
# descriptor layer (miltext.proto.schema builds its pool in upb), the command-line parser.
NOT_IMPORTED = ("numpy", "lark", "miltext.text.mil.parser", "coremltools", "torch",
                "google.protobuf.descriptor_pb2", "google.protobuf.descriptor_pool",
                "google.protobuf.message_factory", "google.protobuf.text_format", "argparse")

PROBE = """
import runpy, sys
sys.argv = ["miltext", "textconv", sys.argv[1]]
try:
    runpy.run_module("miltext.cli", run_name="__main__")
except SystemExit as e:
    assert not e.code, e.code
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""


def textconv_modules(path: str, cwd=ROOT, env=None) -> tuple:
    """textconv's output for `path`, run as git runs it (a process of its own), and the modules
    it imported."""
    result = subprocess.run([sys.executable, "-c", PROBE, path], capture_output=True, text=True, cwd=cwd,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout, set(result.stderr.split())


def test_textconv_of_a_model_imports_nothing_heavy():
    text, modules = textconv_modules(MODEL)
    assert text.startswith("model(specificationVersion=") and "= linear(" in text
    assert "miltext.text.mil._fastprint" in modules or os.environ.get("MILTEXT_PURE_PYTHON") == "1"
    assert sorted(modules.intersection(NOT_IMPORTED)) == []


def test_textconv_of_a_weight_file_imports_nothing_heavy(tmp_path):
    text, modules = textconv_modules(WEIGHTS)       # its blobs named by the model.mlmodel beside it
    assert text.startswith("# weight file: 11 blobs") and "\n%var_0_weight_to_fp16: (16, 8, fp16), " in text
    assert sorted(modules.intersection(NOT_IMPORTED)) == []
    lone = tmp_path / "weight.bin"                  # with no model to name its blobs: no object model
    lone.write_bytes(open(WEIGHTS, "rb").read())
    outside = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)}   # of any repository
    text, modules = textconv_modules(str(lone), cwd=tmp_path, env=outside)
    assert text.startswith("# weight file: 11 blobs") and "\nblob: 128 x fp16, " in text
    assert sorted(modules.intersection(NOT_IMPORTED + ("google.protobuf", "dataclasses", "json"))) == []
    assert sorted(m for m in modules if m.startswith("miltext.ir.")) == []


def test_textconv_arguments_are_what_the_command_line_parser_makes():
    for argv in (["textconv", MODEL], ["textconv", "a file.mlmodel"], ["textconv", "--", "-h.mlmodel"],
                 ["textconv", "--", MODEL]):
        quick, parsed = textconv_args(argv), build_parser("textconv").parse_args(argv)
        assert vars(quick) == vars(parsed)
    # a config from before git-setup wrote `textconv --`: git appends the path as it is
    assert textconv_args(["textconv", "-h.mlmodel"]).file == "-h.mlmodel"
    for argv in (["textconv", "--help"], ["textconv", "-h"], ["textconv"], ["textconv", "a", "b"],
                 ["textconv", "--"], ["textconv", "-x", "a"], ["print", MODEL]):
        assert textconv_args(argv) is None


def test_import_miltext_loads_the_object_model_on_first_use():
    code = """
import sys
import miltext
assert not [m for m in sys.modules if m.startswith("miltext.ir.")]
from miltext import Program, TensorType
import miltext.ir as ir
assert Program is ir.Program and miltext.TensorType is TensorType
assert all(getattr(miltext, name) is getattr(ir, name) for name in ir.__all__)
assert set(ir.__all__) <= set(dir(ir)) and set(ir.__all__) <= set(miltext.__all__)
assert all(getattr(miltext, name) is not None for name in miltext.__all__)
assert set(miltext.__all__) <= set(dir(miltext))
namespace = {}
exec("from miltext import *", namespace)
assert namespace["Value"] is ir.Value and namespace["loads"] is miltext.loads
assert miltext.dtypes.by_name("fp16").bits == 16      # a submodule, imported when first named
assert not hasattr(miltext, "no_such_thing")
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
