# One command runs everything CI runs: `make check`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup check lint format typecheck test bench demo

setup:
	$(PY) -m venv $(VENV) && $(BIN)/pip install -q torch==2.13.0 && $(BIN)/pip install -q -e '.[dev,hf,api]'

format:
	$(BIN)/ruff format .

lint:
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck:
	$(BIN)/pyright

test:
	$(BIN)/pytest -q

check: lint typecheck test

demo:
	$(BIN)/lmms-eval --model huggingface --model_args pretrained=demo --tasks demo_shapes --output_path outputs --log_samples

bench:
	$(BIN)/python bench/bench_task_index.py
	$(BIN)/python bench/bench_eval_dummy.py
