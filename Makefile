# miltext — every target sets itself up from nothing: a virtual environment in .venv with
# miltext installed (editable); `demo` installs only miltext and its three dependencies, the
# other targets also what the tests need.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
OUT    := build/demo
NODE_TEST  := editors/vscode/test
NODE_STAMP := $(NODE_TEST)/node_modules/.installed
VSCODE     := editors/vscode
VSCODE_STAMP := $(VSCODE)/node_modules/.installed

.PHONY: demo test lint test-slow bench conformance clean have-vim have-nvim have-dot fuzz sanitize vsix

$(STAMP): pyproject.toml miltext/text/mil/_fastprint.c miltext/proto/_fastencode.c miltext/interpreter/_fastkernels.c
	@echo "== installing miltext and the test tools into $(VENV) (pip; a few minutes the first time)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,coremltools,lsp,pygments,weights,coreai]'
	touch $(STAMP) $(DEMO_STAMP)

# The demo needs miltext alone (numpy, lark, protobuf): no test tools, no coremltools.
$(DEMO_STAMP): pyproject.toml miltext/text/mil/_fastprint.c miltext/proto/_fastencode.c miltext/interpreter/_fastkernels.c
	@echo "== installing miltext into $(VENV) (pip: numpy, lark, protobuf)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e .
	touch $(DEMO_STAMP)

# Print an example model as canonical text, build it into an .mlpackage (binary protobuf and
# weight file) and print that back: the round trip gives the same text.
demo: $(DEMO_STAMP)
	@rm -rf $(OUT) && mkdir -p $(OUT)
	@echo "== miltext print examples/mlp/model.mil"
	@$(BIN)/miltext print examples/mlp/model.mil
	@$(BIN)/miltext build examples/mlp/model.mil -o $(OUT)/mlp.mlpackage
	@echo "== built $(OUT)/mlp.mlpackage; printing it back:"
	@$(BIN)/miltext print $(OUT)/mlp.mlpackage | diff -u examples/mlp/model.mil - \
		&& echo "== round trip text -> .mlpackage -> text: identical" \
		&& echo "== miltext is $(BIN)/miltext; \`. $(BIN)/activate\` puts it on your PATH"

# The editor tests run the VS Code grammar with vscode-textmate and vscode-oniguruma from npm,
# and the Vim syntax in Debian's vim (installed here when missing and we are root).
$(NODE_STAMP): $(NODE_TEST)/package-lock.json
	@command -v npm >/dev/null || { echo "node/npm is missing: install Node.js 18+ (sudo apt-get install nodejs npm; macOS: brew install node) and run make again" >&2; exit 1; }
	@echo "== npm ci in $(NODE_TEST) (vscode-textmate, vscode-oniguruma)"
	npm ci --prefix $(NODE_TEST) --no-audit --no-fund --loglevel=error
	touch $@

# $(call have,COMMAND,PACKAGE): Debian's PACKAGE installed when COMMAND is missing and we are root.
have = @command -v $(1) >/dev/null || if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "== $(1) is missing: installing Debian's $(2) (apt-get install $(2))"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; \
	else \
		echo "$(2) is missing: install it (sudo apt-get install $(2); macOS: brew install $(2)) and run make test again" >&2; exit 1; \
	fi

have-vim:
	$(call have,vim,vim)

# Neovim's built-in LSP client is driven against `miltext lsp` (tests/test_lsp_neovim.py).
have-nvim:
	$(call have,nvim,neovim)

# Graphviz's dot draws `miltext graph` and `diff --graph` as SVG (tests/test_review.py).
have-dot:
	$(call have,dot,graphviz)

# The VS Code extension's own tools (vsce, esbuild) and client library.
$(VSCODE_STAMP): $(VSCODE)/package-lock.json
	@command -v npm >/dev/null || { echo "node/npm is missing: install Node.js 18+ (sudo apt-get install nodejs npm; macOS: brew install node) and run make again" >&2; exit 1; }
	@echo "== npm ci in $(VSCODE) (vsce, esbuild, vscode-languageclient)"
	npm ci --prefix $(VSCODE) --no-audit --no-fund --loglevel=error
	touch $@

# pyflakes, import order and bugbear (the rules are in pyproject.toml), before the tests.
lint: $(STAMP)
	$(BIN)/ruff check miltext tests bench scripts fuzz

test: $(STAMP) $(NODE_STAMP) $(VSCODE_STAMP) have-vim have-nvim have-dot lint
	$(BIN)/python -m pytest -q -m "not slow"

# The VS Code extension packaged as editors/vscode/dist/miltext-mil-VERSION.vsix (client bundled
# by esbuild), then its content checked.
vsix: $(STAMP) $(NODE_STAMP) $(VSCODE_STAMP)
	cd $(VSCODE) && node node_modules/@vscode/vsce/vsce package --allow-missing-repository --out dist/
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_vscode_extension.py

# The long suites (marked slow): fuzzing runs, big inputs, real conversions. CI runs them as a
# step of their own.
test-slow: $(STAMP) $(NODE_STAMP) $(VSCODE_STAMP) have-vim have-nvim have-dot
	$(BIN)/python -m pytest -q -m slow; rc=$$?; [ $$rc -eq 5 ] && echo "no slow suite selected" || exit $$rc

bench: $(STAMP)
	$(BIN)/python bench/run.py
	$(BIN)/python bench/model_files.py
	$(BIN)/python bench/memory.py
	$(BIN)/python bench/review_diff.py
	$(BIN)/python bench/textconv_startup.py
	$(BIN)/python bench/verify.py
	$(BIN)/python bench/weights_ref.py

conformance: $(STAMP)
	$(BIN)/python ../shared/conformance/check.py

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis $(NODE_TEST)/node_modules $(VSCODE)/node_modules $(VSCODE)/dist

# A bounded run of the mutation fuzzer over every input door (fuzz/run.py); FUZZ_SECONDS each.
FUZZ_SECONDS ?= 30
fuzz: $(STAMP)
	$(BIN)/python fuzz/run.py --seconds $(FUZZ_SECONDS)

# The C extensions built with AddressSanitizer and UBSan (a copy of the package in build/asan),
# then their tests and a short fuzz run against that build (not the test of glibc malloc's page
# faults: ASan brings its own allocator).
ASAN_DIR := build/asan
SANITIZE := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
sanitize: $(STAMP)
	rm -rf $(ASAN_DIR) && mkdir -p $(ASAN_DIR)
	cp -r miltext grammar $(ASAN_DIR)/
	find $(ASAN_DIR) -name '*.so' -delete
	suffix=$$($(BIN)/python -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"); \
	include=$$($(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['include'])"); \
	for ext in text/mil/_fastprint proto/_fastencode interpreter/_fastkernels; do \
		$${CC:-gcc} -shared -fPIC $(SANITIZE) -I$$include miltext/$$ext.c -o $(ASAN_DIR)/miltext/$$ext$$suffix || exit 1; \
	done
	export LD_PRELOAD=$$($${CC:-gcc} -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 PYTHONPATH=$(CURDIR)/$(ASAN_DIR); \
	$(BIN)/python -P -c "import miltext.text.mil._fastprint as p, miltext.proto._fastencode as e, \
		miltext.interpreter._fastkernels as k; \
		assert all('$(ASAN_DIR)' in m.__file__ for m in (p, e, k)), 'not the sanitized build'" && \
	$(BIN)/pytest -q -p no:cacheprovider tests/test_fastprint.py tests/test_fastencode.py tests/test_fast_kernels.py \
		tests/test_winograd.py tests/test_conv_bands.py tests/test_fusion.py tests/test_max_pool_kernel.py \
		tests/test_parallel_kernels.py tests/test_joins.py --deselect tests/test_parallel_kernels.py::test_runs_keep_their_memory_for_the_next && \
	$(BIN)/python fuzz/run.py --seconds 10 proto_to_text from_proto
