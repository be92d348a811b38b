# Each target sets up what it needs (scripts/bootstrap.sh: checks Python 3.11+ and Java 17+, creates .venv).
.PHONY: setup demo test test-quick bench clean

setup:
	@scripts/bootstrap.sh

demo: setup
	.venv/bin/kcontroller demo --overwrite

test: setup
	.venv/bin/python -m pytest

test-quick: setup
	.venv/bin/python -m pytest -m "not slow and not spark"

bench: setup
	.venv/bin/python bench/bench_log.py
	.venv/bin/python bench/bench_state_machines.py
	.venv/bin/python bench/bench_event_manager.py
	.venv/bin/python bench/bench_zookeeper.py --runs 1
	.venv/bin/python bench/bench_controller.py

clean:
	rm -rf .venv out .pytest_cache .hypothesis *.egg-info
