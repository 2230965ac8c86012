"""Shared test fixtures: the corpus copied into tests/corpus (scripts/sync_corpus.py)."""
import json
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
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


@pytest.fixture(scope="session")
def corpus_manifest():
    return manifest()
