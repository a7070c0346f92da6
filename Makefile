# tether: the front door.  `make demo` and `make check` are the two commands
# a newcomer needs; both install what is missing first (scripts/setup.sh:
# --demo only what the build and the quickstart need, --test everything the
# tests use, the long parts in the background).  `make dist`, `make deb` and
# `make wheel` make the release artifacts (scripts/dist.sh, docs/releasing.md).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
CMAKE_FLAGS ?=
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all setup setup-demo build build-cli asan demo check test unit e2e toml-test fuzz bench install dist deb wheel clean

all: build

setup:
	@scripts/setup.sh --test

setup-demo:
	@scripts/setup.sh --demo

build:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(BUILD) -j $(JOBS)

# the binary alone (what the demo runs), in the same tree
build-cli:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(BUILD) -j $(JOBS) tether_cli

asan:
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTETHER_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(ASAN_BUILD) -j $(JOBS)

demo: setup-demo build-cli
	@scripts/demo.sh $(BUILD)/tether

# Everything: unit, TOML conformance, end to end, compatibility, fuzz smoke,
# all of it again under ASan+UBSan; ends with "N passed, N failed".
check:
	@scripts/setup.sh --test
	@scripts/check.sh

test: check

install: build
	@cmake --install $(BUILD)

# Release artifacts into dist/, from a package build in build-dist/.
dist:
	@scripts/dist.sh tarball

deb:
	@scripts/dist.sh deb

wheel:
	@scripts/dist.sh wheel

bench: setup build
	@scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) build-dist dist
