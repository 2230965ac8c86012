"""Copy the shared corpus (../shared/corpus) into tests/corpus, so the tests run on a fresh
clone that has no ../shared beside it.

    python scripts/sync_corpus.py [--shared ../shared]

Files over 1 MiB are left out (the tests make their large cases themselves), and so is wild/:
its third-party files come into tests/ only once their licence allows it (tests/corpus/wild/README.md).
"""
import argparse
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT = 1 << 20
CURATED = {"wild"}  # folders kept by hand in tests/corpus


def sync(shared: str) -> int:
    source = os.path.join(shared, "corpus")
    target = os.path.join(ROOT, "tests", "corpus")
    copied = 0
    for folder, _, files in os.walk(source):
        rel = os.path.relpath(folder, source)
        if rel.split(os.sep)[0] in CURATED:
            continue
        for name in files:
            src = os.path.join(folder, name)
            if os.path.getsize(src) > LIMIT:
                continue
            dst = os.path.join(target, rel, name)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst)
            copied += 1
    return copied


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    args = ap.parse_args()
    print(f"copied {sync(args.shared)} files into tests/corpus")
    return 0


if __name__ == "__main__":
    sys.exit(main())
