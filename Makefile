# One command runs everything CI runs: `make check`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup check lint format typecheck test bench demo

setup:
	$(PY) -m venv $(VENV) && $(BIN)/pip install -q -e '.[dev,hf,api]'

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
	$(BIN)/lmms-eval --model dummy --model_args answer_field=answer,accuracy=0.8 --tasks demo_qa --output_path outputs --log_samples

bench:
	$(BIN)/python bench/bench_task_index.py
	$(BIN)/python bench/bench_eval_dummy.py
