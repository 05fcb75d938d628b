# Two entry points, kept true by CI: `make run` (install + explain the bundled seed log) and
# `make test` (install + test suite). torch==2.13.0 is installed first on purpose: it is the
# CPU build; letting sentence-transformers (the `st` extra: the encoder tests' reference) pull an
# unpinned torch downloads a CUDA build. The core install needs neither (README, "Install").
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= serve,chat,batch,st,faiss,mcp,test

.PHONY: install run test kb-check index clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[$(EXTRAS)]'
	@# an editable install leaves the project's modules uncompiled; with PYTHONDONTWRITEBYTECODE
	@# set (as on CI machines) every command would compile them again (~0.07 s per start)
	$(BIN)/python -m compileall -q indexer service > /dev/null

run: install
	$(BIN)/explainlog kb check
	$(BIN)/explainlog index build --if-needed
	$(BIN)/explainlog explain --lang both --file samples/seed_training.log

test: install
	$(BIN)/explainlog kb check
	$(BIN)/python -m pytest -q

kb-check:
	$(BIN)/explainlog kb check

index:
	$(BIN)/explainlog index build

clean:
	rm -rf build .pytest_cache
