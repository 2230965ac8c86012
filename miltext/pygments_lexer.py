"""A Pygments lexer for MIL text in both dialects: miltext's (`main[CoreML7](%x: (2, fp32))`)
and Apple's compiled model.mil (`func main<ios17>(tensor<fp32, [2]> x)`).

Registered as the `pygments.lexers` entry point `mil`, so `pygmentize -l mil` and Sphinx or
MkDocs code blocks marked `mil` colour MIL. Needs the `pygments` extra. Like the editor
grammars (editors/), it reads line by line and tells a function from a block label by
indentation: functions start in column 0.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import Comment, Generic, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from .text import lexicon

# The dtype words the grammar reads: the names, unused, and coremltools' str and int.
DTYPE_WORDS = sorted({*lexicon.DTYPE_NAMES, *lexicon.OTHER_DTYPE_WORDS}, key=lambda w: (-len(w), w))
_NOT_AFTER = r"(?<![\w.%])"   # not the middle of a longer name
_NOT_BEFORE = f"(?!{lexicon.VAR_CHAR})"
NAME = lexicon.NAME
IDENT = lexicon.IDENT
QNAME = lexicon.STRING
VAR = lexicon.VAR
DTYPE = words(DTYPE_WORDS, prefix=_NOT_AFTER, suffix=_NOT_BEFORE).get() + "|" + _NOT_AFTER + r"dtype[0-9]+"
# A function or block header: NAME[OPSET]( then an input, the end of the line, or `) ... {`.
_HEADER = r"(\s*)(?:(\[)(\s*)(" + NAME + "|" + QNAME + r")?(\s*)(\]))?(?=\s*\((?:\s*%|\s*$|\s*\)\s*(?:\[.*\])?\s*\{))"
_HEADER_TOKENS = (Whitespace, Punctuation, Whitespace, Name.Namespace, Whitespace, Punctuation)


class MilLexer(RegexLexer):
    name = "MIL"
    aliases = ["mil"]
    filenames = ["*.mil"]

    tokens = {
        "root": [
            (r"^([ \t]*)(block)(?=\s*\(.*\{\s*$)", bygroups(Whitespace, Keyword)),  # model.mil's nested blocks
            (r"^([ \t]+)(" + NAME + "|" + QNAME + ")" + _HEADER,
             bygroups(Whitespace, Name.Label, *_HEADER_TOKENS)),
            # model.mil's declared name after its type, also when named like a dtype (`> str =`)
            (r"(>)(\s*)(" + IDENT + r")(?=\s*[=,)])", bygroups(Punctuation, Whitespace, Name.Variable)),
            (r"(->)(\s*)(\()", bygroups(Operator, Whitespace, Punctuation), "outputs"),
            (r"\n|[^\S\n]+", Whitespace),  # a line break apart: rules with ^ see where lines start
            (r"#.*$", Comment.Single),
            (r"<[A-Za-z_][\w.]* object at 0x[0-9a-fA-F]+>", Generic.Error),  # coremltools' print
            (r'(b64)(")([A-Za-z0-9+/=\s]*)(")', bygroups(String.Affix, String.Other, String.Other, String.Other)),
            (r"(?<![\w.])(?:program|model)(?=\s*\()", Keyword.Declaration),
            (r"(?<![\w.])(?:input|output|state|trainingInput)(?=\s+%)", Keyword),  # a model's features
            (r"(func)(\s+)(" + IDENT + r")(\s*)(?:(<)(\s*)(" + IDENT + r")(\s*)(>))?",
             bygroups(Keyword.Declaration, Whitespace, Name.Function, Whitespace, Punctuation,
                      Whitespace, Name.Namespace, Whitespace, Punctuation)),
            (r"^(" + NAME + "|" + QNAME + ")" + _HEADER, bygroups(Name.Function, *_HEADER_TOKENS)),
            # model.mil declarations: `int32 x = ...` (program 1.3 scalars), `tensor<...> x = ...`
            (r"(" + DTYPE + r")(\s+)(" + IDENT + r")(?=\s*[=,)])", bygroups(Keyword.Type, Whitespace, Name.Variable)),
            (VAR, Name.Variable),
            (r"(\()(\s*)(Tensor|Scalar|State|List|dict)(\s*)(\))",
             bygroups(Punctuation, Whitespace, Keyword.Type, Whitespace, Punctuation)),
            (r"(?<![\w.])(?:List|Tuple|Dict|State)(?=\s*\[)", Keyword.Type),
            (r"(?<![\w.])(?:tensor|list|tuple|dict|state)(?=\s*<)", Keyword.Type),
            (r"(?<![\w.])unknown(?![\w.])", Keyword.Type),
            (r"(?<![\w.])(?:floats|ints|bools|strings|longInts|doubles|bytes|tensor|tuple|list|dict|immediate)(?=\s*:)",
             Keyword.Pseudo),
            (r"(?<![\w.])(?:blob|BLOBFILE)(?=\s*\()", Name.Builtin),
            (DTYPE, Keyword.Type),
            (r"(?<![\w.])[-+]?nan\(0[xX][0-9a-fA-F]+\)", Number.Float),
            (r"(?<![\w.])[-+]?(?:inf|nan)(?![\w.(])", Number.Float),
            (r"(?<![\w.])[-+]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][-+]?[0-9]+(?![\w.])", Number.Float),
            (r"(?<![\w.])[-+]?0[xX][0-9a-fA-F]+(?![\w.])", Number.Hex),
            (r"(?<![\w.])[-+]?(?:[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)(?![\w.])",
             Number.Float),
            (r"(?<![\w.])[-+]?[0-9]+(?![\w.])", Number.Integer),
            (r"(?<![\w.])(?:True|False|true|false)(?![\w.])", Keyword.Constant),
            (r"(?<![\w.])(?:version|doc)(?=\s*=)", Keyword),
            (r"(?<![\w.])rank(?=\s*=\s*[-+]?[0-9])", Keyword),
            (r"(" + QNAME + r")(\s*)(=)(?!=)", bygroups(Name.Attribute, Whitespace, Operator)),
            (QNAME + r"(?=\s*\()", Name.Builtin),
            (r'"', String.Double, "double"),
            (r"'", String.Single, "single"),
            # model.mil's input bound to a bare name, also one named like a dtype (`x = str`)
            (r"(" + NAME + r")(\s*)(=)(?!=)(\s*)(?!(?:True|False|true|false|inf|nan)\b)(" + IDENT + r")(?=\s*[,)\]])",
             bygroups(Name.Attribute, Whitespace, Operator, Whitespace, Name.Variable)),
            (r"(" + NAME + r")(\s*)(=)(?!=)", bygroups(Name.Attribute, Whitespace, Operator)),
            (r"(?<![\w.])np\." + IDENT, Name.Builtin),  # np.int32(1), np.True_ in coremltools' print
            (r"(?<![\w.%])_(?![\w.])", Keyword.Constant),
            (NAME + r"(?=\s*\()", Name.Builtin),  # an op: told apart from functions and vars
            (NAME, Name.Variable),  # model.mil's bare var names; symbolic dims (is0)
            (r"->|[=*^+\-/?]", Operator),
            (r"\.\.\.", Punctuation),
            (r"[(){}\[\]<>,:;]", Punctuation),
        ],
        # A block's outputs: `-> (%a, %b)`, model.mil's `-> (a, int)`.
        "outputs": [
            (VAR, Name.Variable),
            (IDENT, Name.Variable),
            (r"[^\S\n]+", Whitespace),
            (r",", Punctuation),
            (r"\)", Punctuation, "#pop"),
            (r"", Whitespace, "#pop"),
        ],
        # Strings may span lines: coremltools prints raw strings with line breaks.
        "double": [
            (r'\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[\\"\'ntr0abfv])', String.Escape),
            (r'[^"\\]+|\\', String.Double),
            (r'"', String.Double, "#pop"),
        ],
        "single": [
            (r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[\\\"'ntr0abfv])", String.Escape),
            (r"[^'\\]+|\\", String.Single),
            (r"'", String.Single, "#pop"),
        ],
    }
