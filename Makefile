# tether: the front door.  `make demo` and `make check` are the two commands
# a newcomer needs; both install what is missing first (scripts/setup.sh).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
CMAKE_FLAGS ?=
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all setup build asan demo check test unit e2e toml-test fuzz bench install clean

all: build

setup:
	@scripts/setup.sh

build:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(BUILD) -j $(JOBS)

asan:
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTETHER_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(ASAN_BUILD) -j $(JOBS)

demo: setup build
	@scripts/demo.sh $(BUILD)/tether

# Everything: unit, TOML conformance, end to end, compatibility, fuzz smoke,
# all of it again under ASan+UBSan; ends with "N passed, N failed".
check:
	@TT_JJ_BACKGROUND=1 scripts/setup.sh
	@scripts/check.sh

test: check

install: build
	@cmake --install $(BUILD)

bench: setup build
	@scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
