"""miltext's own dialect of MIL text (and coremltools' print, which it reads): its
parser, the builder that turns the parse into the object model, and its printers (Python, and
the optional C one)."""
