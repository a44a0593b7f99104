# The two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed
# impl/ compiled with mypyc into build/impl-compiled/ (impl/__init__.py uses it only while
# it matches these sources); a failed compilation only warns: impl then runs as Python.
COMPILED := build/.impl-compiled
COMPILE_IMPL := $(VENV)/bin/python -m tools.build_compiled || true

.PHONY: run test lint bench clean mutation fuzz

$(STAMP): pyproject.toml constraints.txt
	@echo "setting up $(VENV) (first use; the details go to $(VENV)/setup.log) ..."
	$(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/pip install --upgrade pip > $(VENV)/setup.log 2>&1 \
	  && $(VENV)/bin/pip install -c constraints.txt -e '.[dev]' >> $(VENV)/setup.log 2>&1 \
	  || { tail -n 30 $(VENV)/setup.log; echo "setup failed: see $(VENV)/setup.log"; exit 1; }
	$(COMPILE_IMPL)
	touch $(STAMP)

$(COMPILED): $(STAMP) $(wildcard impl/*.py) traces/config.py traces/observations.py traces/ops.py
	$(COMPILE_IMPL)
	@mkdir -p build && touch $@

# A small campaign on local Spark (about 25 s on 2 cores once set up): out/campaign/ holds the
# trace set, results/results.parquet, summary.txt, policies.json (the failure policies
# compared) and report.html (its path is the last line); --force: a new run replaces it.
# SITES="1=ln-cache.xml 2=ny-cache.xml" runs it on your own Geode files instead (each site's
# cache.xml, gfsh script or gemfire.properties, as `wanconform import --site` reads them).
CAMPAIGN := --traces 200 --ops 1000 --profile steady,faults,multisite,dlq,chaos,parallel,lifecycle --seed 1 --compare-policies
SITES ?=

# The campaign exits 1 when it finds a failure: that is its result, not make's error (2 is).
run: $(COMPILED)
	@status=0; $(VENV)/bin/wanconform campaign $(CAMPAIGN) $(foreach site,$(SITES),--site '$(subst ','\'',$(site))') --out out/campaign --force || status=$$?; \
	if [ $$status -eq 1 ]; then echo "make run: the campaign ran and found failures: see its summary above and its report"; \
	elif [ $$status -ne 0 ]; then exit $$status; fi

test: $(COMPILED)
	$(VENV)/bin/pytest -n auto

lint: $(STAMP)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --explicit-package-bases tests
	$(VENV)/bin/mypy conftest.py

bench: $(COMPILED)
	$(VENV)/bin/wanconform bench --ops 100000

# Mutation testing of impl/ (README "Harness strength"): first the tests the mutants face
# pass on the compiled impl; then mutmut runs each mutant on the interpreted impl (a
# mutated source never matches the compiled build) and tools.mutation_report writes
# the score and the survivors to out/mutation/report.txt. MUTANTS selects mutmut's
# mutant names: all of impl/ by default (hours: README "Harness strength"), e.g.
# MUTANTS='impl.applied*' for one module.
MUTANTS ?= impl.*
MUTATION_TESTS := tests/test_conformance.py tests/test_impl.py tests/test_impl_branches.py \
	tests/test_framing.py tests/test_dlq_store.py tests/test_queue_store.py tests/test_checkpoint.py

mutation: $(COMPILED)
	$(VENV)/bin/pytest -n auto -q -p no:cacheprovider $(MUTATION_TESTS)
	rm -rf mutants
	WANCONFORM_PURE_IMPL=1 WANCONFORM_PROFILE=mutation $(VENV)/bin/mutmut run --max-children 2 $(foreach m,$(MUTANTS),"$(m)") > /dev/null
	$(VENV)/bin/python -m tools.mutation_report

# A million generated bad inputs through the command line's own entry point, 2 worker
# processes, 10 s cap per input (tools/fuzz.py; README "Fuzzing"): prints inputs/s and the
# totals by outcome and input kind; each failing input is kept in out/fuzz/. Exit 1 if any
# input failed. FUZZ_INPUTS=20000 for a short run.
FUZZ_INPUTS ?= 1000000

fuzz: $(COMPILED)
	rm -rf out/fuzz
	$(VENV)/bin/python -m tools.fuzz --inputs $(FUZZ_INPUTS) --seed 1 --workers 2 --out out/fuzz

clean:
	rm -rf $(VENV) build out mutants .pytest_cache .mypy_cache .ruff_cache .hypothesis
