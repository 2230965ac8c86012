"""The builders of both dialects share their callbacks (text/building.py): what one reads, the
other reads alike, with its errors in the same words at the same places."""
import pytest

import miltext

_MODELMIL = """program(1.0)
[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{"coremlc-version", "3500.32.1"}})]
{
    func main<ios17>(tensor<fp32, [1, 3]> x) {
            tensor<int32, [2]> y = const()[name = tensor<string, []>("y"), val = tensor<int32, [2]>([INT, 1])];
        } -> (y);
}
"""


@pytest.mark.parametrize("text,at", [
    (_MODELMIL, "INT"),   # at the integer
    ("main[CoreML7]() {\n  block0() {\n    %y: (2, int32) = const(val=(2, int32)([INT, 1]), name=\"y\")\n  } -> (%y)\n}\n",
     "[INT"),             # at the list of plain numbers, one token
], ids=["model.mil", "mil"])
def test_an_integer_too_long_for_mil_is_an_error_at_its_place(text, at):
    """A 5,000-digit integer (past Python's own limit on converting one) is refused where it is
    written, in either dialect: before the shared base, model.mil's was an internal error."""
    digits = "9" * 5000
    line = next(i for i, t in enumerate(text.split("\n"), 1) if "INT" in t)
    column = text.split("\n")[line - 1].index(at) + 1
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text.replace("INT", digits))
    assert (info.value.line, info.value.column) == (line, column)
    assert "an integer of 5,000 digits is out of range" in str(info.value)


def test_model_mil_attributes_given_twice_and_negative_dims_are_told_as_in_mil():
    text = _MODELMIL.replace("INT", "1").replace('[name = tensor<string, []>("y"), ',
                                                   '[name = tensor<string, []>("y"), name = tensor<string, []>("z"), ')
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text)
    assert "attribute 'name' is given twice" in str(info.value)
    text = _MODELMIL.replace("INT", "1").replace("tensor<int32, [2]> y", "tensor<int32, [ -2 ]> y")
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text)
    assert "a dimension cannot be negative (-2)" in str(info.value)
