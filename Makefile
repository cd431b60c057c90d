# Lectern. `make test` is what CI runs (.ci/run).
SWIFT ?= swift
ARGS ?=
PREFIX ?= $(HOME)/.local

.PHONY: all build release run test bench reliability deps clean install uninstall

all: build

deps:
	scripts/install-deps.sh

build:
	scripts/install-deps.sh --build
	$(SWIFT) build

release:
	scripts/install-deps.sh --build
	$(SWIFT) build -c release

# make run ARGS='--audio-sink "fakesink sync=true"'
run:
	scripts/run.sh $(ARGS)

# make test ARGS='--filter TestSupportTests'
test:
	scripts/test.sh $(ARGS)

# Benchmarks against mpv + mpv-mpris and VLC in the same run; figures go to docs/benchmarks.md by hand.
bench:
	scripts/bench.sh $(ARGS)

# The reliability suite with a table of criteria: make reliability (short) or make reliability ARGS=full.
reliability:
	scripts/reliability.sh $(ARGS)

# A release build for this user (PREFIX=/usr/local for everyone); uninstall removes exactly what it wrote.
install:
	scripts/install.sh --prefix "$(PREFIX)"

uninstall:
	scripts/install.sh --prefix "$(PREFIX)" --uninstall

clean:
	rm -rf .build
