"""Show a file as MIL text for git (`git diff`, `git log -p`): a .mlmodel, a MIL Program .pb, a
weight.bin (its blobs and their digests) or any file miltext print reads.

git runs it once per file version, often on a temporary copy with nothing beside it, so it
shows no digests beside blob references (the weight file's own text shows them), and it never
fails: a file it cannot read becomes one line saying so, with the file's size and digest.
"""
from . import write_stdout


def add_arguments(p) -> None:
    p.add_argument("file")


def run(args) -> int:
    write_stdout(textconv_text(args.file))
    return 0


def textconv_text(path: str) -> str:
    try:
        from ..model.text import file_text
        return file_text(path)
    except Exception as e:  # git shows whatever this prints; a failure must not break `git diff`
        return fallback(path, e)


def fallback(path: str, error: Exception) -> str:
    import hashlib   # here: git runs textconv once per file, so start-up counts
    reason = str(error).split("\n")[0].replace(path, "").lstrip(": ") or type(error).__name__
    text = f"# miltext: not shown as MIL text ({reason})\n"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return text
    return text + f"# {len(data)} bytes, sha256:{hashlib.sha256(data).hexdigest()[:16]}\n"
