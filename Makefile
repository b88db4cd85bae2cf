# sparkops.inference -- the two commands of the README, and their parts.
#   make lab       set everything up, bring the lab up, deploy onto it
#   make test      set everything up, run every test (unit, lint, sanity, lab, molecule)
#   make lab-down  take the lab down

SHELL := /bin/bash
# The controller's Python: the distribution's (/usr/bin/python3, 3.11 or newer, able to make a
# virtualenv), else the first python3 on PATH. Distributions build theirs with PGO and LTO; pyenv's
# default build has neither: on it a cold deploy's controller took 1.15x the CPU-s and ansible-lint
# 1.2x (docs/performance.md) - and the suite is bound by the CPU.
PYTHON ?= $(shell /usr/bin/python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' \
	2>/dev/null && echo /usr/bin/python3 || echo python3)
VENV ?= .venv
BIN := $(VENV)/bin
HOSTS ?= 2
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.collections:$(HOME)/.ansible/collections
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup deps venv lab lab-up lab-down deploy status test unit engine-parsers lint sanity matrix molecule faults-doc testing-doc clean

setup: deps venv

deps:  ## Debian packages (docker.io, docker-registry, sshd, debootstrap, tini, ...), promtool and trixie's Docker unpacked
	$(PYTHON) lab/sparklab.py deps

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-test.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements-test.txt
	touch $@

lab: setup lab-up deploy  ## the main job: lab up (the old model running), then deploy onto it

lab-up: deps
	$(PYTHON) lab/sparklab.py up --hosts $(HOSTS)
	$(PYTHON) lab/sparklab.py old-model

lab-down:
	$(PYTHON) lab/sparklab.py down

deploy: venv
	$(BIN)/ansible-playbook deploy.yml -i inventories/lab

status: venv
	$(BIN)/ansible-playbook playbooks/status.yml -i inventories/lab

# Two lanes (pytest-xdist workers), each with a lab of its own: gw0 on this machine's network,
# gw1 through lab/isolated.sh (namespaces of its own); tests/integration/conftest.py says which
# test files run where. The lab images are built once, before the lanes start, for both.
LANE := b
LANES := --dist loadscope --tx popen --tx 'popen//python=$(CURDIR)/lab/isolated.sh $(LANE) $(CURDIR)/$(BIN)/python'

# The suite starts on fresh lab hosts, as on a new machine: a run killed before (a session's end,
# Ctrl-C) leaves its hosts' disks behind - a deploy's lock, its records of what it stopped, its
# containers - and tests that expect a lab with nothing of ours on it would inherit them.
test: setup  ## every test; ends with pytest's summary line
	$(PYTHON) lab/sparklab.py down --purge
	rm -rf /var/lib/sparkops-lab.$(LANE)
	$(PYTHON) lab/sparklab.py images
	$(PYTHON) tests/lab_core.py
	SPARKOPS_TIMINGS=$(CURDIR)/tests/output/timings.json PYTHONPATH=$(CURDIR)/tests \
	    $(BIN)/pytest -p no:cacheprovider -p suite_timing -ra $(LANES) tests/unit tests/integration

faults-doc:  ## docs/faults.md from the lab tests' fault markers
	$(PYTHON) tests/fault_catalogue.py

testing-doc:  ## docs/testing.md from the last `make test`'s tests/output/timings.json
	$(PYTHON) tests/timing_report.py tests/output/timings.json

unit: venv
	$(BIN)/pytest -q -p no:cacheprovider tests/unit

engine-parsers: venv  ## the engines' own parsers judge every plan's argv; writes tests/unit/fixtures/engine-parsers/ (venvs of GBs, cached)
	$(BIN)/python tests/parsers/build.py

lint: venv
	$(BIN)/ansible-lint

sanity: venv
	tests/ansible-test.sh sanity

matrix:  ## unit tests and sanity on the oldest and newest ansible-core (tests/controller-matrix.txt)
	tests/controller-matrix.sh

molecule: setup
	$(BIN)/molecule test

clean:
	rm -rf build tests/output
