"""The texts the editor tests colour: every example and corpus text, in both dialects, and each
corpus program printed in both (in model.mil where that dialect can say the program)."""
import glob
import os

import miltext
from support.corpus import HERE, corpus_files, print_cases, proto_cases

SAMPLES = os.path.join(HERE, "editors")


def sample(name: str) -> str:
    return os.path.join(SAMPLES, name)


def text_files() -> list[str]:
    """Examples, the editor samples, Apple's model.mil files and coremltools' prints."""
    return sorted(glob.glob(os.path.join(os.path.dirname(HERE), "examples", "*.mil"))) + \
        sorted(glob.glob(os.path.join(SAMPLES, "*.mil"))) + \
        corpus_files("modelmil", ".mil") + corpus_files("modelmil", ".txt") + print_cases()


def printed_texts() -> list[tuple[str, str]]:
    """(file name, text) of each corpus program as miltext prints it, and as model.mil."""
    out = []
    for case in proto_cases():
        with open(case, "rb") as f:
            program = miltext.Program.from_proto(f.read())
        out.append((os.path.basename(case) + ".mil", miltext.dumps(program)))
        try:
            out.append((os.path.basename(case) + ".model.mil", miltext.dumps(program, "modelmil")))
        except miltext.ProgramError:
            pass  # what model.mil cannot say (names with dots, several specializations, ...)
    return out


# Vars named like dtypes, in both dialects: (line, fragment, which occurrence of it on the line,
# "var" or "dtype"). Every highlighter colours each as that.
DTYPE_NAMED_VARS = {
    "dtype_named.mil": (
        "main[CoreML7](%str: (2, fp32), %fp16: (2, fp16)) {\n"
        "  block0() {\n"
        "    %int: (2, fp32) = add(x=%str, y=%fp16)\n"
        "  } -> (%int)\n"
        "}\n",
        [(0, "%str", 0, "var"), (0, "%fp16", 0, "var"), (0, "fp16", 1, "dtype"), (2, "%int", 0, "var"),
         (2, "%str", 0, "var"), (2, "%fp16", 0, "var"), (3, "%int", 0, "var")]),
    "dtype_named_modelmil.mil": (
        "program(1.0)\n"
        "{\n"
        "    func main<ios17>(tensor<fp32, [2]> str, tensor<fp16, [2]> fp16) {\n"
        '            tensor<fp32, [2]> int = add(x = str, y = fp16)[name = tensor<string, []>("int")];\n'
        "        } -> (int);\n"
        "}\n",
        [(2, "str", 0, "var"), (2, "fp16", 0, "dtype"), (2, "fp16", 1, "var"), (3, "int", 0, "var"),
         (3, "str", 0, "var"), (3, "fp16", 0, "var"), (3, "string", 0, "dtype"), (4, "int", 0, "var")]),
}


def dtype_named_places(text: str, expected: list) -> list[tuple]:
    """(line, start, end, kind) of each expected fragment."""
    lines = text.split("\n")
    out = []
    for line, fragment, nth, kind in expected:
        start = -1
        for _ in range(nth + 1):
            start = lines[line].index(fragment, start + 1)
        out.append((line, start, start + len(fragment), kind))
    return out
