# A thin wrapper: the work is in scripts/ and CMake.
.PHONY: all deps build test demo bench e2e cluster-up cluster-down check release clean

all: build

deps:
	scripts/deps

build: deps
	scripts/test build

# Installs what is missing, builds, and runs every suite (see docs/testing.md).
test:
	scripts/test all

# Formatting and forbidden-function checks only.
check:
	scripts/test check

demo:
	scripts/demo

bench: deps
	scripts/bench

e2e:
	scripts/test e2e

cluster-up:
	e2e/cluster up

cluster-down:
	e2e/cluster down

# clusterctl's release assets (metadata.yaml, ipam-components.yaml) in build/release/.
release:
	scripts/release

clean:
	rm -rf build build-asan build-fuzz build-bench
