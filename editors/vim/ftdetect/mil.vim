" MIL text (Core ML's Model Intermediate Language), both miltext's and Apple's model.mil.
autocmd BufNewFile,BufRead *.mil setfiletype mil
