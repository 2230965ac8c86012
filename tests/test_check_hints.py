"""Help for the writer outside the case files: a bare name where a var is meant is a parse
error that says so; `build` refuses the warnings Core ML cannot load; the note about
coremltools' print comes only for text that looks like one."""
import pytest

import miltext


def program(*lines: str, inputs: str = "%x: (1, 2, fp32)") -> str:
    body = "".join(f"    {line}\n" for line in lines)
    return f"main[CoreML7]({inputs}) {{\n  block0() {{\n{body}  }} -> (%x)\n}}\n"


@pytest.mark.parametrize("line", ["%k = relu(x=x)", '%k: (1, 2, fp32) = relu(x=x, name="k")'])
def test_a_bare_name_where_a_var_is_meant_says_to_write_it_with_percent(line):
    with pytest.raises(miltext.ParseError) as caught:
        miltext.loads(program(line))
    e = caught.value
    assert (e.line, e.column) == (3, line.index("x=x") + 7)
    assert "x is a bare name: write %x for the var x" in e.message


def check(text):
    return miltext.check(miltext.loads(text), source=text)


def test_unknown_ops_and_names_defined_twice_are_errors_but_not_custom_ops():
    found = check(program("%a = reluu(x=%x)", "%b = my_kernel(x=%x)[custom=True]",
                          "%c = relu(x=%x)", "%c = relu(x=%x)"))
    assert [(d.rule, d.severity) for d in found] == [
        ("unknown-op", "error"), ("custom-op", "warning"), ("redefinition", "error")]


PRINT_NOTE = "the print leaves out every const op"


def test_the_print_note_comes_with_text_that_looks_like_a_print():
    printed = program('%y: (1, 2, fp32)(Tensor) = add(x=%x, y=%w_to_fp32, name="y")')
    [error] = check(printed)
    assert error.rule == "undefined-name" and PRINT_NOTE in error.notes[0].message


@pytest.mark.parametrize("line", ["%y = add(x=%x, y=%w)", '%y: (1, 2, fp32) = add(x=%x, y=%w)'])
def test_the_print_note_does_not_come_with_hand_written_text(line):
    [error] = check(program(line))
    assert error.rule == "undefined-name" and error.notes == []
