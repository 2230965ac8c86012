"""The texts the editor tests colour: every example and corpus text, in both dialects, and each
corpus program printed in both (in model.mil where that dialect can say the program)."""
import glob
import os

import miltext
from conftest import HERE, corpus_files, print_cases, proto_cases

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
