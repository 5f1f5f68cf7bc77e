# The cost model (docs/COSTMODEL.md): a QEMU TCG plugin built as build/model/costmodel.so,
# and its host unit test (registered in HOST_TESTS, run by make host-test).
MODEL_SO := $(BUILD)/model/costmodel.so
MODEL_CORE := model/profile.c model/cache.c model/tlb.c model/decode.c model/ident.c model/core.c
MODEL_CORE += model/clock.c model/coherence.c model/prefetch.c model/protocol.c
MODEL_SRCS := model/costmodel.c $(MODEL_CORE)
MODEL_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -fvisibility=hidden -I.
# decode.c decodes with Zydis (Debian libzydis-dev; only a shared library ships, so the
# plugin and the host test link it dynamically)
MODEL_LDLIBS := -lZydis

$(MODEL_SO): $(MODEL_SRCS) $(wildcard model/*.h) arch/x86_64/costmodel.h kernel/math.h model/model.mk
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(HOSTCC) $(MODEL_CFLAGS) -shared -o $@ $(MODEL_SRCS) $(MODEL_LDLIBS)

all: $(MODEL_SO)
model: $(MODEL_SO)
.PHONY: model

HOST_TESTS += costmodel
# decode_ref.c: the reference classifier the decoder test compares against (test only)
costmodel_SRCS := model/test_model.c model/decode_ref.c $(MODEL_CORE)
costmodel_LDLIBS := $(MODEL_LDLIBS)

HOST_TESTS += coherence
coherence_SRCS := model/test_coherence.c model/coherence.c model/prefetch.c model/clock.c model/core.c model/profile.c model/cache.c model/ident.c

HOST_TESTS += prefetch
prefetch_SRCS := model/test_prefetch.c model/prefetch.c model/coherence.c model/clock.c model/core.c model/profile.c model/cache.c model/ident.c

HOST_TESTS += core
core_SRCS := model/test_core.c model/core.c model/profile.c

# The core's speed: 100M synthetic instructions through core_insn, optimised like the
# plugin (not the sanitised host-test build). make core-bench prints ns per instruction.
CORE_BENCH := $(BUILD)/model/bench_core
$(CORE_BENCH): model/bench_core.c model/core.c model/core.h model/model.h model/model.mk
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(HOSTCC) -std=gnu11 -O2 -Wall -Wextra -Werror -I. -o $@ model/bench_core.c model/core.c

core-bench: $(CORE_BENCH)
	@$(CORE_BENCH)
	@$(CORE_BENCH) 100000000 64
.PHONY: core-bench
