" Vim syntax file
" Language: MIL, Core ML's Model Intermediate Language, as text: miltext's dialect
"           (main[CoreML7](%x: (2, fp32)) { ... }) and Apple's compiled model.mil
"           (program(1.0), func main<ios17>(tensor<fp32, [2]> x) { ... }).
" Like the VS Code grammar, it reads line by line: a function starts in column 0, a block
" label is indented.
"
" Where several items match at one place, the one defined last wins (keywords beat all), so
" general items come first and the more particular ones after them.

if exists("b:current_syntax")
  finish
endif

let s:cpo_save = &cpo
set cpo&vim
syn case match

" Bare names: model.mil's vars, symbolic dims (is0).
syn match milName "\<\h[[:alnum:]_.]*"
syn match milOp "\<\h[[:alnum:]_.]*\ze\s*("
syn match milKey "\<\h[[:alnum:]_.]*\ze\s*==\@!"
syn match milConstant "\v(\w|\.|\%)@1<!_(\w|\.)@!"
syn match milBuiltin "\v(\w|\.)@1<!np\.\h\w*"

" Numbers: ints, hex ints, decimal and hex floats, inf, nan and nan with its bits.
syn match milNumber "\v(\w|\.)@1<![-+]?\d+(\w|\.)@!"
syn match milNumber "\v(\w|\.)@1<![-+]?0[xX]\x+(\w|\.)@!"
syn match milFloat "\v(\w|\.)@1<![-+]?(\d+\.\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|\d+[eE][-+]?\d+)(\w|\.)@!"
syn match milFloat "\v(\w|\.)@1<![-+]?0[xX](\x+\.?\x*|\.\x+)[pP][-+]?\d+(\w|\.)@!"
syn match milFloat "\v(\w|\.)@1<![-+]?(inf|nan)(\w|\.|\()@!"
syn match milFloat "\v(\w|\.)@1<![-+]?nan\(0[xX]\x+\)"

" Types and dtypes. tensor, list, tuple, dict and state are types before `<` (model.mil) and
" storage words before `:` (miltext's data escapes).
syn keyword milType List Tuple Dict State unknown Tensor Scalar
syn match milType "\v(\w|\.)@1<!(tensor|list|tuple|dict|state)\ze\s*\<"
syn match milType "(\s*\zsdict\ze\s*)"
" Dtypes are matches, not keywords (which would beat the var items below): a var may be named
" like one (model.mil's `tensor<fp32, [2]> str`, `x = fp16`).
syn match milDtype "\v<(bool|string|fp16|fp32|fp64|bf16|fp8e4m3fn|fp8e5m2|unused|str|int)>"
syn match milDtype "\v<(int4|int8|int16|int32|int64|uint1|uint2|uint3|uint4|uint6|uint8|uint16|uint32|uint64)>"
syn match milDtype "\v(\w|\.|\%)@1<!dtype\d+(\w|\.)@!"
syn match milKeyword "\v(\w|\.)@1<!(floats|ints|bools|strings|longInts|doubles|bytes|tensor|tuple|list|dict|immediate)\ze\s*:"

syn keyword milBoolean True False true false
syn keyword milKeyword program func
syn match milKeyword "\v(\w|\.)@1<!model\ze\s*\("
syn match milKeyword "\v(\w|\.)@1<!(input|output|state|trainingInput)\ze\s+\%"
syn keyword milBlob blob BLOBFILE
syn match milKeyword "\v(\w|\.)@1<!(version|doc)\ze\s*\="
syn match milKeyword "\v(\w|\.)@1<!rank\ze\s*\=\s*[-+]?\d"
syn match milOperator "->"

" model.mil declarations: `tensor<fp32, [2]> x = ...`, `int32 x = ...` (program 1.3 scalars).
" After a keyword (int32, func) only a look-behind finds the name: Vim goes on past a keyword.
syn match milVar "\v\>\s*\zs\h\w*\ze\s*[=,)]"
syn match milVar "\v(<(bool|string|fp16|fp32|fp64|bf16|u?int\d+|fp8e4m3fn|fp8e5m2)\s+)@40<=\h\w*\ze\s*[=,)]"

" model.mil's uses: an input bound to a bare name (`x = str`), a block's outputs (`-> (a, int)`).
syn match milVar "\v\=\s*\zs(<(True|False|true|false|inf|nan)>)@!\h\w*\ze\s*[,)\]]"
syn region milOutputs matchgroup=milOperator start="->\s*(" end=")" oneline contains=milVar,milOutputName
syn match milOutputName contained "\h\w*"

" Strings, b64 data, %names and quoted names.
syn match milEscape contained +\\\(x\x\{2}\|u\x\{4}\|U\x\{8}\|[\\"'ntr0abfv]\)+
syn region milString start=+"+ skip=+\\\\\|\\"+ end=+"+ contains=milEscape
syn region milString start=+'+ skip=+\\\\\|\\'+ end=+'+ contains=milEscape
syn region milB64 start=+\<b64"+ end=+"+
syn match milOp +"\([^"\\]\|\\.\)*"\ze\s*(+
syn match milKey +"\([^"\\]\|\\.\)*"\ze\s*==\@!+
syn match milVar +%\("\([^"\\]\|\\.\)*"\|[[:alnum:]_.@/]\+\)+

" Function and block headers: NAME[OPSET]( then an input, the end of the line, or `) ... {`.
syn match milFunction +^\(\h[[:alnum:]_.]*\|"\([^"\\]\|\\.\)*"\)\ze\s*\(\[[^]]*\]\)\=\s*(\(\s*%\|\s*$\|\s*)\s*\(\[.*\]\)\=\s*{\)+
syn match milLabel +^\s\+\zs\(\h[[:alnum:]_.]*\|"\([^"\\]\|\\.\)*"\)\ze\s*\(\[[^]]*\]\)\=\s*(\(\s*%\|\s*)\s*\(\[.*\]\)\=\s*{\)+
syn match milOpset "\[\zs\h[[:alnum:]_.]*\ze\]\s*("
syn match milKeyword "^\s*\zsblock\ze\s*(.*{\s*$"
syn match milFunction "\v(<func\s+)@40<=\h\w*"
syn match milOpset "\v(<func\s+\h\w*\s*\<\s*)@120<=\h\w*\ze\s*\>"

syn match milError "<\h[[:alnum:]_.]* object at 0x\x\+>"
syn match milComment "#.*$" contains=@Spell

hi def link milName Identifier
" Default colour schemes link Function to Identifier: ops, vars and functions each get a colour
" of their own (Statement, Identifier, PreProc's Define).
hi def link milVar Identifier
hi def link milOutputName Identifier
hi def link milKey Special
hi def link milOp Statement
hi def link milFunction Define
hi def link milLabel Label
hi def link milOpset PreProc
hi def link milType Type
hi def link milDtype Type
hi def link milKeyword Keyword
hi def link milBlob Keyword
hi def link milBuiltin Special
hi def link milConstant Constant
hi def link milBoolean Boolean
hi def link milNumber Number
hi def link milFloat Float
hi def link milString String
hi def link milB64 String
hi def link milEscape SpecialChar
hi def link milOperator Operator
hi def link milComment Comment
hi def link milError Error

let b:current_syntax = "mil"
let &cpo = s:cpo_save
unlet s:cpo_save
