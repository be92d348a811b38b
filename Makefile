# Each target sets up what it needs (scripts/bootstrap.sh: checks Python 3.11+ and Java 17+, creates .venv).
.PHONY: setup demo examples test test-quick bench clean

setup:
	@scripts/bootstrap.sh

demo: setup
	.venv/bin/kcontroller demo --overwrite

examples: setup
	@for f in examples/*.yaml; do n=$$(basename $$f .yaml); echo "== $$n"; \
	  .venv/bin/kcontroller simulate $$f --log-dir out/examples/$$n --overwrite || exit 1; done

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
	.venv/bin/python bench/bench_simulation.py

clean:
	rm -rf .venv out .pytest_cache .hypothesis *.egg-info
