"""The language server behind `miltext lsp`. `analysis` and the modules it uses answer from
the text and the object model alone; `server` speaks LSP through pygls (the `lsp` extra), and
only it imports pygls."""
