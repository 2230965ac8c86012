# miltext — every target sets itself up from nothing: a virtual environment in .venv with
# miltext installed (editable) and what the tests need.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    := build/demo

.PHONY: demo test bench conformance clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,coremltools]'
	touch $(STAMP)

# Print an example model as canonical text, build it into a MIL proto and print that back:
# the round trip gives the same text.
demo: $(STAMP)
	@mkdir -p $(OUT)
	@echo "== miltext print examples/control_flow.mil"
	@$(BIN)/miltext print examples/control_flow.mil
	@$(BIN)/miltext build examples/control_flow.mil -o $(OUT)/control_flow.pb
	@echo "== built $(OUT)/control_flow.pb ($$(wc -c < $(OUT)/control_flow.pb) bytes); printing it back:"
	@$(BIN)/miltext print $(OUT)/control_flow.pb | diff -u examples/control_flow.mil - \
		&& echo "== round trip text -> proto -> text: identical"

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/run.py

conformance: $(STAMP)
	$(BIN)/python ../shared/conformance/check.py

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis
