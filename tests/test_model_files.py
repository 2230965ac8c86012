""".mlmodel and .mlpackage files: every field of the Model around the program is kept exactly
(fields miltext's schema does not know included), a package has the layout Core ML expects,
and packing the same model twice gives the same files."""
import json
import os

import pytest

import miltext
from miltext.model import Model, read_model, write_model
from miltext.model.mlmodel import model_from_bytes, model_to_bytes
from miltext.model.program_files import InputError
from miltext.proto import schema
from model_cases import PACKAGES, copy_package, coremltools_model, mlmodel_of, name_of, read, weights_of

# Fields a real .mlmodel may hold that miltext's Model.proto leaves out: isUpdatable (10) and a
# field from the future (901, a string), in the model, and another (77) in its description.
UNKNOWN_MODEL = b"\x50\x01" + b"\xaa\x38\x03abc"
UNKNOWN_DESCRIPTION = b"\xe8\x04\x07"


def with_unknown_fields(data: bytes) -> bytes:
    spec = schema.Model.FromString(data)
    spec.description.MergeFromString(UNKNOWN_DESCRIPTION)
    spec.MergeFromString(UNKNOWN_MODEL)
    return spec.SerializeToString()


@pytest.mark.parametrize("package", PACKAGES, ids=name_of)
def test_mlmodel_is_written_back_as_coremltools_reads_it(package):
    data = read(mlmodel_of(package))
    model = model_from_bytes(data, "model.mlmodel", None)
    assert miltext.dumps(model.program) == miltext.dumps(miltext.Program.from_proto(read(package[:-len(".mlpackage")] + ".pb")))
    assert coremltools_model(model_to_bytes(model)) == coremltools_model(data)


def test_fields_the_schema_does_not_know_are_kept(tmp_path):
    data = with_unknown_fields(read(mlmodel_of(PACKAGES[0])))
    theirs = coremltools_model(data)
    assert theirs.isUpdatable  # coremltools knows field 10; miltext keeps it without knowing it
    path = tmp_path / "model.mlmodel"
    path.write_bytes(data)
    assert coremltools_model(model_to_bytes(read_model(str(path)))) == theirs


WEIGHTLESS = """main[CoreML7](%x: (1, 4, fp32)) {
  block0() {
    %y: (1, 4, fp32) = relu(x=%x, name="y")
  } -> (%y)
}
"""


def test_mlmodel_file_round_trip_on_disk(tmp_path):
    model = read_model(PACKAGES[0])
    model.program = miltext.loads(WEIGHTLESS)
    target = tmp_path / "plain.mlmodel"
    write_model(model, str(target))
    again = read_model(str(target))
    assert again.spec == model.spec and again.program == model.program
    assert again.folder == str(tmp_path)


def test_a_model_with_weights_is_no_single_mlmodel(tmp_path):
    model = read_model(PACKAGES[0])
    with pytest.raises(InputError, match="cannot carry weight files.*write a .mlpackage"):
        write_model(model, str(tmp_path / "x.mlmodel"))
    assert os.listdir(tmp_path) == []


def test_a_model_that_is_no_ml_program_is_refused(tmp_path):
    path = tmp_path / "nn.mlmodel"
    path.write_bytes(b"\x08\x04" + b"\xaa\x1f\x00")   # specificationVersion 4, an empty neuralNetwork (500)
    with pytest.raises(InputError, match="not an ML program"):
        read_model(str(path))


@pytest.mark.parametrize("package", PACKAGES, ids=name_of)
def test_package_is_written_with_the_layout_core_ml_expects(package, tmp_path):
    model = read_model(package)
    target = str(tmp_path / "out.mlpackage")
    write_model(model, target)
    manifest = json.loads(read(os.path.join(target, "Manifest.json")))
    entries = manifest["itemInfoEntries"]
    root = entries[manifest["rootModelIdentifier"]]
    assert manifest["fileFormatVersion"] == "1.0.0"
    assert root == {"author": "com.apple.CoreML", "description": "CoreML Model Specification",
                    "name": "model.mlmodel", "path": "com.apple.CoreML/model.mlmodel"}
    assert {e["path"] for e in entries.values()} == {"com.apple.CoreML/model.mlmodel", "com.apple.CoreML/weights"}
    assert coremltools_model(read(mlmodel_of(target))) == coremltools_model(read(mlmodel_of(package)))
    assert read(weights_of(target)) == read(weights_of(package))


def test_packing_twice_gives_the_same_files_and_keeps_the_identifiers(tmp_path):
    package = copy_package(PACKAGES[0], tmp_path)
    before = json.loads(read(os.path.join(package, "Manifest.json")))
    model = read_model(package)
    write_model(model, package)            # in place: the old package's identifiers stay
    assert json.loads(read(os.path.join(package, "Manifest.json"))) == before
    first, second = str(tmp_path / "a.mlpackage"), str(tmp_path / "b.mlpackage")
    write_model(model, first)
    write_model(read_model(first), second)
    for name in ("Manifest.json", "Data/com.apple.CoreML/model.mlmodel", "Data/com.apple.CoreML/weights/weight.bin"):
        assert read(os.path.join(first, name)) == read(os.path.join(second, name))


def test_model_without_program_folder_still_knows_its_weights(tmp_path):
    package = copy_package(PACKAGES[0], tmp_path)
    model = read_model(package)
    assert model.folder == os.path.join(package, "Data", "com.apple.CoreML")
    assert isinstance(model, Model) and model.source == package


def test_model_proto_agrees_with_coremltools_field_by_field():
    """Every message, field and enum value of miltext's Model.proto is coremltools' own."""
    pytest.importorskip("coremltools")
    from coremltools.proto import Model_pb2  # noqa: F401 (registers coremltools' schema)
    from google.protobuf import descriptor_pool
    theirs_pool = descriptor_pool.Default()
    file = schema.POOL.FindFileByName("Model.proto")
    messages = list(file.message_types_by_name.values())
    checked = 0
    while messages:
        ours = messages.pop()
        messages.extend(ours.nested_types)
        theirs = theirs_pool.FindMessageTypeByName(ours.full_name)
        for field in ours.fields:
            other = theirs.fields_by_number[field.number]
            assert (other.name, other.type, other.is_repeated) == (field.name, field.type, field.is_repeated), field.full_name
            for kind in ("message_type", "enum_type"):
                if getattr(field, kind) is not None:
                    assert getattr(other, kind).full_name == getattr(field, kind).full_name, field.full_name
            checked += 1
        for enum in ours.enum_types:
            values = {v.name: v.number for v in theirs_pool.FindEnumTypeByName(enum.full_name).values}
            assert {v.name: v.number for v in enum.values}.items() <= values.items()
    assert checked > 50
