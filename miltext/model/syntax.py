"""The old name of miltext.text.section_syntax (the model section as the parser reads it), which
moved beside the parser that makes it: kept so that code written against it still imports."""
from ..text.section_syntax import Call, Feature, Section  # noqa: F401
