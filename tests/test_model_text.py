"""The model section of MIL text (docs/syntax.md §13): every corpus model reads back from its text
to the same Model, every kind of feature and field has a readable spelling that reads back
exactly, what the spellings cannot say rides along as bytes, and a wrong section is reported
at its place."""
import pytest

import miltext
from miltext.model import read_model
from miltext.model.section import readable_type, section_text
from miltext.model.text import model_text, parse_model
from miltext.proto import schema
from model_cases import PACKAGES, name_of

PROGRAM = """main[CoreML8](%x: (1, 4, fp32)) {
  block0() {
  } -> (%x)
}
"""


def same_model(text: str):
    """`text` is canonical and says the same Model as itself printed."""
    model = parse_model(text, "t.mil")
    assert model_text(model) == text
    again = parse_model(model_text(model), "t.mil")
    assert again.spec.SerializeToString(deterministic=True) == model.spec.SerializeToString(deterministic=True)
    return model


@pytest.mark.parametrize("package", PACKAGES, ids=name_of)
def test_corpus_model_reads_back_from_its_text(package):
    model = read_model(package)
    text = model_text(model)
    again = parse_model(text, "model.mil")
    assert again.spec.SerializeToString(deterministic=True) == model.spec.SerializeToString(deterministic=True)
    assert again.program.to_proto().SerializeToString(deterministic=True) == \
        model.program.to_proto().SerializeToString(deterministic=True)
    assert model_text(again) == text
    assert "encoded(" not in text  # every corpus feature has a readable spelling


def test_corpus_features_read_as_users_expect():
    texts = {name_of(p): model_text(read_model(p)) for p in PACKAGES}
    assert "  input %x: (1, 3, 16, 16, fp16)[shapeRange=[[1, 1], [3, 3], [8, 64], [8, 64]]]\n" in texts["flex_rangedim_torch"]
    assert "  input %img: image(width=16, height=16, colorSpace=\"RGB\")\n" in texts["torch_image_input"]
    classifier = texts["torch_classifier_strings"]
    assert classifier.startswith('model(specificationVersion=8, predictedFeatureName="classLabel", '
                                 'predictedProbabilitiesName="classLabel_probs") {\n')
    assert '  output %classLabel_probs: dictionary(keyType="string")\n' in classifier
    assert 'com.github.apple.coremltools.version="9.0"' in classifier
    assert texts["const_dtype_zoo_ios17"].startswith("model(specificationVersion=8)\n\nmain[CoreML7]")


EVERY_SPELLING = """model(specificationVersion=9,
      predictedFeatureName="label",
      predictedProbabilitiesName="probs",
      defaultFunctionName="main") {
  input %a: (1, 3, 8, 8, fp16)[shapeRange=[[1, 1], [3, 3], [1, -1], [8, 4096]], shortDescription="flexible"]
  input %b: (2, 3, fp32)[enumeratedShapes=[[2, 3], [4, 3]], isOptional=True]
  input %c: (4, int32)[intDefaultValue=7]
  input %d: (4, fp64)[doubleDefaultValue=fp64(0.5)]
  input %e: (..., int8)[floatDefaultValue=1.5]
  input %f: image(width=64, height=48, colorSpace="GRAYSCALE", enumeratedSizes=[[64, 48], [128, 96]])
  input %g: image(width=1, height=1, colorSpace="BGR", imageSizeRange=[[1, -1], [1, -1]], isOptional=True)
  input %h: (int64)[shortDescription="a count"]
  input %i: (fp64)
  input %j: sequence(elementType="string", sizeRange=[0, -1])
  output %label: (string)
  output %probs: dictionary(keyType="int64", shortDescription="per class")
  state %s: (2, 3, fp16)[shortDescription="kept"](State)
  trainingInput %t: (1, fp32)
  metadata(author="Ada \\"the first\\"", license="MIT", shortDescription="é ✓", versionString="2.1")
  userDefined(a="1", "b c"="2", "model"="3")
  function(name="main", predictedFeatureName="label") {
    input %x: (1, 4, fp32)
    output %y: (..., fp32)
    state %s: (1, fp16)(State)
  }
  function(name="other") {
  }
}

""" + PROGRAM


def test_every_spelling_reads_back_exactly():
    model = same_model(EVERY_SPELLING)
    desc = model.spec.description
    a = desc.input[0].type.multiArrayType
    assert list(a.shape) == [1, 3, 8, 8] and a.dataType == 65552
    assert [(r.lowerBound, r.upperBound) for r in a.shapeRange.sizeRanges] == [(1, 1), (3, 3), (1, -1), (8, 4096)]
    assert desc.input[0].shortDescription == "flexible" and desc.input[1].type.isOptional
    assert desc.input[2].type.multiArrayType.intDefaultValue == 7
    assert desc.input[5].type.imageType.colorSpace == 10
    assert [(s.width, s.height) for s in desc.input[5].type.imageType.enumeratedSizes.sizes] == [(64, 48), (128, 96)]
    assert desc.input[7].type.WhichOneof("Type") == "int64Type"
    assert desc.output[1].type.dictionaryType.WhichOneof("KeyType") == "int64KeyType"
    assert desc.state[0].type.stateType.arrayType.shape == [2, 3]
    assert desc.metadata.author == 'Ada "the first"' and dict(desc.metadata.userDefined) == {"a": "1", "b c": "2", "model": "3"}
    assert [f.name for f in desc.functions] == ["main", "other"] and desc.defaultFunctionName == "main"


def test_a_model_without_description_has_no_braces_and_an_empty_one_has_them():
    bare = same_model("model(specificationVersion=7)\n\n" + PROGRAM)
    assert not bare.spec.HasField("description") and bare.spec.specificationVersion == 7
    empty = same_model("model(specificationVersion=7) {\n}\n\n" + PROGRAM)
    assert empty.spec.HasField("description") and not empty.spec.description.ListFields()


def test_metadata_present_but_empty_is_kept():
    model = same_model("model(specificationVersion=8) {\n  metadata()\n}\n\n" + PROGRAM)
    assert model.spec.description.HasField("metadata")


def test_specification_version_left_out_is_the_programs():
    model = parse_model("model() {\n}\n\n" + PROGRAM)
    assert model.spec.specificationVersion == 9  # CoreML8
    assert model_text(model).startswith("model(specificationVersion=9) {\n}\n")


def feature_spec(**fields):
    spec = schema.Model(specificationVersion=8)
    spec.description.input.add(**fields)
    return spec


def ragged_shapes(f):
    shapes = f.type.multiArrayType.enumeratedShapes.shapes
    shapes.add(shape=[1, 2])
    shapes.add(shape=[3])


@pytest.mark.parametrize("build", [
    ragged_shapes,                                                          # shapes of two ranks
    lambda f: setattr(f.type.multiArrayType, "dataType", 12345),            # a data type to come
    lambda f: f.type.SetInParent(),                                         # a type of no kind
    lambda f: f.type.multiArrayType.shape.append(-1),                       # a negative size
    lambda f: f.type.MergeFromString(b"\xe8\x04\x01"),                      # an unknown field
    lambda f: f.type.stateType.SetInParent(),                               # a state of nothing
], ids=["ragged-shapes", "unknown-dtype", "no-kind", "negative-size", "unknown-field", "empty-state"])
def test_what_no_spelling_says_is_encoded_and_read_back_exactly(build):
    spec = feature_spec(name="x")
    build(spec.description.input[0])
    text = section_text(spec)
    assert "input %x: encoded(data=uint8(" in text
    model = same_model(text + "\n" + PROGRAM)
    assert model.spec.SerializeToString(deterministic=True) == spec.SerializeToString(deterministic=True)


def test_unknown_fields_of_model_description_and_metadata_ride_along():
    spec = schema.Model(specificationVersion=8)
    spec.MergeFromString(b"\x50\x01")                       # isUpdatable
    spec.description.metadata.author = "x"
    spec.description.metadata.MergeFromString(b"\xa8\x06\x02")
    spec.description.MergeFromString(b"\xe8\x04\x07")
    spec.description.functions.add(name="f").MergeFromString(b"\x38\x01")
    text = section_text(spec)
    assert "unknownFields=uint8([80, 1])" in text and "descriptionUnknownFields=uint8([232, 4, 7])" in text
    model = same_model(text + "\n" + PROGRAM)
    assert model.spec.SerializeToString(deterministic=True) == spec.SerializeToString(deterministic=True)


def test_readable_type_of_a_plain_array():
    f = schema.FeatureDescription(name="x")
    f.type.multiArrayType.shape.extend([1, 2])
    f.type.multiArrayType.dataType = 65568
    assert miltext.text.mil.printer.type_text(readable_type(f)) == "(1, 2, fp32)"


def test_long_calls_put_one_field_per_line():
    spec = schema.Model(specificationVersion=8)
    spec.description.metadata.userDefined.update({f"com.example.key{i}": "v" * 20 for i in range(4)})
    text = section_text(spec)
    assert text.splitlines()[1:3] == ['  userDefined(com.example.key0="vvvvvvvvvvvvvvvvvvvv",',
                                      '              com.example.key1="vvvvvvvvvvvvvvvvvvvv",']


def test_loads_reads_a_model_text_as_its_program():
    assert miltext.loads(EVERY_SPELLING) == miltext.loads(PROGRAM)


@pytest.mark.parametrize("section,place,message", [
    ("  inpt %x: (1, fp32)", (2, 3), "unknown kind of feature 'inpt'"),
    ("  input %x: (1, ?, fp32)", (2, 3), "a feature's shape is a list of sizes"),
    ("  input %x: (1, bool)", (2, 3), "a model's arrays are fp32, fp64, int32, int8, fp16, not bool"),
    ("  input %x: (1, fp32)[shapeRange=[1, 2]]", (2, 3), "shapeRange= takes a list of integers"),
    ("  input %x: (1, fp32)[colour=1]", (2, 3), "a feature's type has no field 'colour'"),
    ("  input %x: image(width=1, height=1, colorSpace=\"CMYK\")", (2, 38), "colorSpace is 'CMYK'"),
    ("  input %x: picture(width=1)", (2, 13), "unknown feature type picture(...)"),
    ("  metadata(authr=\"x\")", (2, 12), "metadata(...) has no field 'authr'"),
    ("  function(predictedFeatureName=\"x\") {\n  }", (2, 3), "function(...) needs name="),
    ("  output %y: dictionary(keyType=\"fp32\")", (2, 25), "keyType is 'fp32'"),
    ("  widgets()", (2, 3), "unknown part of a model description: widgets(...)"),
    ("  input %x: (1, fp32)[shapeRange=[[-1, 2]]]", (2, 3), "a lower bound is 0 or more, not -1"),
    ("  input %x: image(width=1, height=1, enumeratedSizes=[[-1, 2]])", (2, 3), "a number out of range"),
    ("  input %x: (99999999999999999999, fp32)", (2, 13), "a dimension must be below 2^64"),
])
def test_a_wrong_section_is_reported_at_its_place(section, place, message):
    text = "model(specificationVersion=8) {\n" + section + "\n}\n\n" + PROGRAM
    with pytest.raises(miltext.ParseError) as info:
        parse_model(text, "bad.mil")
    e = info.value
    assert (e.line, e.column) == place, str(e)
    assert e.message.startswith(message), e.message
    assert str(e).startswith(f"bad.mil:{place[0]}:{place[1]}: error: ")


def test_description_fields_need_a_description():
    with pytest.raises(miltext.ParseError, match="add braces after model"):
        parse_model('model(specificationVersion=8, predictedFeatureName="y")\n\n' + PROGRAM, "bad.mil")
