"""An author's MIL text as a source file: the comments, blank lines and literal layout that the
object model has no place for, kept beside it (trivia) and written back by the formatter.
`loads` never comes here: only `fmt`, the language server's formatting and `infer` do."""
