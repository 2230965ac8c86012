"""The corpus copied into tests/corpus (scripts/sync_corpus.py): its folders, files and manifest."""
import json
import os

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/
CORPUS = os.path.join(HERE, "corpus")


def corpus_files(folder: str, suffix: str) -> list[str]:
    path = os.path.join(CORPUS, folder)
    return sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(suffix))


def proto_cases() -> list[str]:
    return corpus_files("coremltools", ".pb") + corpus_files("edge", ".pb")


def print_cases() -> list[str]:
    return corpus_files("coremltools", ".pymil.txt") + corpus_files("coremltools", ".pymil_src.txt")


def manifest() -> dict:
    with open(os.path.join(CORPUS, "coremltools", "manifest.json")) as f:
        return {c["name"]: c for c in json.load(f)["cases"]}


def case_id(path: str) -> str:
    return os.path.basename(path)


def print_quirks(path: str) -> set:
    """The manifest's quirks of a coremltools print (reload_print_quirks or src_print_quirks)."""
    name = os.path.basename(path).split(".")[0]
    case = manifest().get(name, {})
    key = "reload_print_quirks" if path.endswith(".pymil.txt") else "src_print_quirks"
    return set(case.get(key) or [])
