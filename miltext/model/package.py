"""`.mlpackage` folders:

    NAME.mlpackage/
      Manifest.json                              items by identifier; the root item is the model
      Data/com.apple.CoreML/model.mlmodel        the Model (see mlmodel)
      Data/com.apple.CoreML/weights/weight.bin   the weight file(s), if any

A package is written into a temporary folder beside its place and renamed into it at the end,
so a failure leaves no half-written package. The manifest's identifiers are kept from the
package being replaced, or else derived from the item paths, so packing the same model twice
gives the same files.
"""
from __future__ import annotations

import json
import os

from ..errors import InputError
from ..files import UnsafePathError, atomic_folder, join_inside, open_regular, read_regular
from .core import Model
from .mlmodel import model_to_bytes, read_mlmodel

MANIFEST = "Manifest.json"
DATA = "Data"
AUTHOR = "com.apple.CoreML"
MODEL_ITEM = f"{AUTHOR}/model.mlmodel"
WEIGHTS_ITEM = f"{AUTHOR}/weights"
DESCRIPTIONS = {MODEL_ITEM: "CoreML Model Specification", WEIGHTS_ITEM: "CoreML Model Weights"}
CHUNK = 1 << 24
MAX_MANIFEST = 1 << 20  # a real manifest is a few hundred bytes
DEFAULT_WEIGHTS = os.path.join("weights", "weight.bin")   # @model_path/weights/weight.bin
# What miltext writes in a package, so all a package may hold for miltext to replace it.
OWNED = (MANIFEST, f"{DATA}/{MODEL_ITEM}", f"{DATA}/{WEIGHTS_ITEM}/weight.bin")


def is_package(path: str) -> bool:
    return os.path.isdir(path) and (path.rstrip("/\\").lower().endswith(".mlpackage")
                                    or os.path.isfile(os.path.join(path, MANIFEST)))


def read_manifest(path: str) -> dict:
    """The package's manifest, checked to be an object whose itemInfoEntries is an object."""
    manifest_path = os.path.join(path, MANIFEST)
    if not os.path.lexists(manifest_path):
        raise InputError(f"{path}: not a model package (no {MANIFEST})")
    data = read_regular(manifest_path, limit=MAX_MANIFEST)
    try:
        manifest = json.loads(data.decode("utf-8-sig"))   # a byte-order mark is no mistake
    except RecursionError:
        raise InputError(f"{manifest_path}: not a package manifest (nested too deeply)") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{manifest_path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None
    except ValueError as e:
        raise InputError(f"{manifest_path}: not valid JSON ({e})") from None
    if not isinstance(manifest, dict):
        raise InputError(f"{manifest_path}: not a package manifest (a JSON {_json_kind(manifest)}, "
                         "where an object with itemInfoEntries belongs)")
    entries = manifest.get("itemInfoEntries")
    if not isinstance(entries, dict):
        what = "missing" if entries is None else f"a JSON {_json_kind(entries)}, not an object"
        raise InputError(f"{manifest_path}: no itemInfoEntries (it is {what})")
    return manifest


def _json_kind(value) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "null"
    kinds = ((bool, "boolean"), (str, "string"), ((int, float), "number"), (list, "list"), (dict, "object"))
    return next(name for kind, name in kinds if isinstance(value, kind))


def model_file(path: str) -> str:
    """The path of the package's root model file, checked to stay inside the package."""
    manifest = read_manifest(path)
    manifest_path = os.path.join(path, MANIFEST)
    root = manifest.get("rootModelIdentifier")
    if not isinstance(root, str):
        what = "missing" if root is None else f"a JSON {_json_kind(root)}, not a string"
        raise InputError(f"{manifest_path}: no rootModelIdentifier (it is {what})")
    entry = manifest["itemInfoEntries"].get(root)
    if entry is None:
        raise InputError(f"{manifest_path}: the root model {root!r} is no item of itemInfoEntries")
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        raise InputError(f"{manifest_path}: the root model {root!r} has no item with a path")
    item = entry["path"]
    file = join_inside(os.path.join(path, DATA), item, root=path)
    if file is None or join_inside(path, os.path.relpath(os.path.dirname(file), path)) is None:
        raise UnsafePathError(f"{manifest_path}: the model's path {item!r} leads out of the package")
    if not os.path.isfile(file):
        raise InputError(f"{path}: the model file {os.path.join(DATA, item)} is missing")
    return file


def read_package(path: str) -> Model:
    file = model_file(path)
    return read_mlmodel(file, os.path.dirname(file))


def write_package(model: Model, path: str, progress) -> None:
    """Write `model` as a package at `path`, with the weight files of `model.folder`, each blob
    checked against its type first."""
    from . import weight_refs  # here: reading a package (git's textconv) needs none of them
    from .blobs import Weights, files_to_copy
    from .weights import WeightWriter
    # npy(...) and safetensors(...) values: their tensors go after the blobs of weight.bin
    plan = weight_refs.plan(model.program, model.folder, model.folder and os.path.join(model.folder, DEFAULT_WEIGHTS),
                            model.confine_refs)
    with plan.applied():
        data = model_to_bytes(model)
    with Weights(model.folder, model.source) as weights:
        weights.check_all(model.program)
    files = files_to_copy(model.program, model.folder) if model.folder else []
    base = DEFAULT_WEIGHTS if DEFAULT_WEIGHTS in files else None
    sizes = {f: os.path.getsize(os.path.join(model.folder, f)) for f in files}
    progress.total = len(data) + sum(sizes.values()) + plan.size
    ids = _identifiers(path)
    with atomic_folder(path, OWNED) as tmp:
        content = os.path.join(tmp, DATA, AUTHOR)
        os.makedirs(content)
        with open(os.path.join(content, "model.mlmodel"), "wb") as f:
            f.write(data)
        progress.advance(len(data), "model.mlmodel")
        for name in files:
            if plan and name == base:
                continue   # written below, with the referenced tensors after its blobs
            target = os.path.join(content, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            copy_file(os.path.join(model.folder, name), target, progress)
        if plan:
            os.makedirs(os.path.join(content, "weights"), exist_ok=True)
            with WeightWriter(os.path.join(content, DEFAULT_WEIGHTS),
                              base=base and os.path.join(model.folder, base)) as writer:
                plan.write(writer, progress)
        items = [MODEL_ITEM] + ([WEIGHTS_ITEM] if os.path.isdir(os.path.join(content, "weights")) else [])
        entries = {ids.get(item) or _identifier(item): {"author": AUTHOR, "description": DESCRIPTIONS[item],
                                                        "name": item.split("/")[-1], "path": item}
                   for item in items}
        manifest = {"fileFormatVersion": "1.0.0", "itemInfoEntries": entries,
                    "rootModelIdentifier": ids.get(MODEL_ITEM) or _identifier(MODEL_ITEM)}
        with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as f:
            f.write(json.dumps(manifest, indent=4, sort_keys=True) + "\n")


def copy_file(source: str, target: str, progress) -> None:
    with open_regular(source) as src, open(target, "wb") as dst:
        while True:
            chunk = src.read(CHUNK)
            if not chunk:
                break
            dst.write(chunk)
            progress.advance(len(chunk), os.path.basename(source))


def _identifiers(path: str) -> dict:
    """item path -> identifier, from the package being replaced (if it has a readable manifest)."""
    try:
        entries = read_manifest(path)["itemInfoEntries"] if is_package(path) else {}
    except InputError:
        return {}
    return {e["path"]: key for key, e in entries.items() if isinstance(e, dict) and isinstance(e.get("path"), str)}


def _identifier(item: str) -> str:
    import uuid  # here, not at the top: textconv's start-up (see miltext.lazy)
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"miltext:{item}"))
