# baremm build. `make` builds build/baremm.elf and iso/baremm.iso; `make run` boots the
# default benchmark suite; `make test` runs every test (host unit tests + QEMU matrix).
# tools/install-deps.sh checks for the tools (any distribution) and installs missing ones
# where apt-get exists. BAREMM_QEMU, BAREMM_OVMF_CODE, BAREMM_OVMF_VARS choose QEMU and
# the UEFI firmware (README.md, "Hosts and QEMU").

CC ?= gcc
ifeq ($(origin CC),default)
CC := gcc
endif
LD := ld
NASM := nasm
HOSTCC ?= gcc
PYTHON := python3
# DEBUG_CONTRACTS=1: a second kernel whose stated contracts (interrupts off, mm lock held:
# kernel/assert.h) are checked and panic when broken. It builds into its own directory,
# so it never replaces the kernel that benchmarks and perf-check boot; `make test` boots
# it in the matrix entries with kernel=contracts (tests/qemu/matrix.cfg).
ifeq ($(DEBUG_CONTRACTS),1)
BUILD := build/contracts
ISO := $(BUILD)/baremm.iso
else
BUILD := build
ISO := iso/baremm.iso
endif
# The same kernel in an ISO whose GRUB menu does not wait: the host tools boot this one.
# Under -icount the menu's 1 s wait is 10^9 guest instructions (about a minute of host
# time); the USB-stick ISO keeps the menu so a person can edit the command line.
QEMU_ISO := $(BUILD)/baremm-qemu.iso
ELF := $(BUILD)/baremm.elf
# The same kernel as a flat image at its physical load addresses, for QEMU's own multiboot
# (v1) loader (`-kernel`): the deterministic modes boot it without firmware disk I/O or
# GRUB (boot/multiboot1.asm).
BIN := $(BUILD)/baremm.bin
IMAGES := $(ISO) $(QEMU_ISO) $(BIN)

CLANG := $(findstring clang,$(CC))
KCFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -ffreestanding -fno-stack-protector \
	-fno-pic -fno-pie -mno-red-zone -mcmodel=kernel -mno-sse -mno-sse2 -mno-mmx -mno-avx \
	-fno-omit-frame-pointer -fno-strict-aliasing -fno-common -Wmissing-prototypes \
	-ffile-prefix-map=$(CURDIR)=. -I. -MMD -MP
ifeq ($(CLANG),)
KCFLAGS += -mno-3dnow -fno-asynchronous-unwind-tables
else
KCFLAGS += -fno-asynchronous-unwind-tables -Wno-gnu-variable-sized-type-not-at-end
endif
ifeq ($(DEBUG_CONTRACTS),1)
KCFLAGS += -DCONFIG_DEBUG_CONTRACTS
endif
NASMFLAGS := -f elf64 -Iboot/
KLDFLAGS := -n -T linker.ld -nostdlib -z max-page-size=0x1000 -z noexecstack --no-warn-rwx-segments

KSRCS := $(wildcard arch/x86_64/*.c kernel/*.c mm/*.c bench/*.c)
ASRCS := $(wildcard boot/*.asm)
KOBJS := $(patsubst %.c,$(BUILD)/%.o,$(KSRCS)) $(patsubst %.asm,$(BUILD)/%.o,$(ASRCS))
GRUB_MKRESCUE ?= $(shell command -v grub-mkrescue || command -v grub2-mkrescue || echo grub-mkrescue)
BUILD_ID := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)$(if $(filter 1,$(DEBUG_CONTRACTS)),+contracts)

# Objects record nothing of the compiler and flags that built them, so make alone would
# keep gcc objects after `make CC=clang` (and link them). Every kernel object depends on
# this stamp of the tools, their versions and flags, rewritten only when one of them
# changes: then everything is rebuilt. One build directory per configuration would keep
# both sets of objects, but the tools boot build/ and the ELF symbolizes against
# build/baremm.elf; a stamp keeps those paths and still cannot link a stale object.
# Expanded once here, so target-specific flags (version.o's BUILD_ID) stay out of it.
KBUILD_SIG := $(CC) [$(shell $(CC) --version 2>/dev/null | head -n 1)] $(KCFLAGS) | \
	$(NASM) [$(shell $(NASM) -v 2>/dev/null)] $(NASMFLAGS) | \
	$(LD) [$(shell $(LD) --version 2>/dev/null | head -n 1)] $(KLDFLAGS)
KSTAMP := $(BUILD)/.kbuild-flags

# The ISO's dates (volume dates, every file's, the EFI image's FAT entries) are the last
# commit's time rather than the clock, so two builds of one commit are byte-identical.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
ISO_DATE := $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y%m%d%H%M%S00)

all: $(IMAGES)

# The oldest QEMU accepted: 8 (x2APIC under TCG) to boot, 10 where -icount runs with SMP.
QEMU_NEED := 8
test perf-check perf-baseline seeds seed-%: QEMU_NEED := 10

deps:
	@QEMU_NEED=$(QEMU_NEED) tools/install-deps.sh

$(BUILD)/%.o: %.c $(KSTAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(KCFLAGS) -c $< -o $@

$(KSTAMP): FORCE
	@mkdir -p $(BUILD)
	@printf '%s\n' '$(KBUILD_SIG)' | cmp -s - $@ || printf '%s\n' '$(KBUILD_SIG)' > $@

$(BUILD)/kernel/version.o: KCFLAGS += -DBUILD_ID='"$(BUILD_ID)"'
$(BUILD)/kernel/version.o: $(BUILD)/.build_id

$(BUILD)/.build_id: FORCE
	@mkdir -p $(BUILD)
	@echo '$(BUILD_ID)' | cmp -s - $@ || echo '$(BUILD_ID)' > $@

# No -g for NASM: its DWARF records the absolute source directory (it has no prefix map),
# which would make the ELF depend on the checkout path. Assembly frames still symbolize to
# their function names through the symbol table.
$(BUILD)/%.o: %.asm $(KSTAMP)
	@mkdir -p $(dir $@)
	@echo "  NASM    $<"
	@$(NASM) $(NASMFLAGS) $< -o $@

$(ELF): $(KOBJS) linker.ld $(KSTAMP)
	@echo "  LD      $@"
	@$(LD) $(KLDFLAGS) -o $@ $(KOBJS)

$(BIN): $(ELF)
	@echo "  OBJCOPY $@"
	@objcopy -O binary $< $@

# One recipe for both ISOs: $(ISO) keeps iso/grub.cfg as it is, $(QEMU_ISO) gets
# `set timeout=0`. The staging directory is named after the ISO, so the two never share one.
# Reproducible: grub-mkrescue stamps the volume with the clock (--modification-date), and
# the files it generates carry their creation time; the xorriso commands after `--`
# replace both with ISO_DATE (the volume UUID is only the date: GRUB's embedded configs
# do not search for it). mtools dates the EFI image's FAT entries with SOURCE_DATE_EPOCH,
# and iso/xorriso-reproducible gives the image a serial number derived from it instead of
# mformat's random one.
$(ISO): GRUB_SED :=
$(QEMU_ISO): GRUB_SED := s/^set timeout=.*/set timeout=0/
$(ISO) $(QEMU_ISO): $(ELF) iso/grub.cfg iso/xorriso-reproducible
	@rm -rf $(BUILD)/isodir-$(@F) && mkdir -p $(BUILD)/isodir-$(@F)/boot/grub
	@cp $(ELF) $(BUILD)/isodir-$(@F)/boot/baremm.elf
	@sed '$(GRUB_SED)' iso/grub.cfg > $(BUILD)/isodir-$(@F)/boot/grub/grub.cfg
	@echo "  ISO     $@"
	@SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GRUB_MKRESCUE) --xorriso=iso/xorriso-reproducible \
		-o $@ $(BUILD)/isodir-$(@F) -- -volume_date uuid $(ISO_DATE) \
		-volume_date all_file_dates $(ISO_DATE) >$(BUILD)/grub-mkrescue-$(@F).log 2>&1 \
		|| { cat $(BUILD)/grub-mkrescue-$(@F).log; exit 1; }

# ---- host unit tests (mm/ and kernel/ logic compiled for the host, ASan + UBSan) ----
HOSTCFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wmissing-prototypes -DBAREMM_HOST -I. -Itests/host \
	-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
HOST_TESTS :=
include $(wildcard tests/host/*.mk)
include model/model.mk
HOST_BINS := $(patsubst %,$(BUILD)/host/%,$(HOST_TESTS))
HOST_COMMON := tests/host/htest.c tests/host/host_shim.c kernel/events.c

HOST_OBJDIR := $(BUILD)/host/obj
host_objs = $(patsubst %.c,$(HOST_OBJDIR)/%.o,$(1))
HOST_OBJS := $(sort $(call host_objs,$(HOST_COMMON) $(foreach t,$(HOST_TESTS),$($(t)_SRCS))))

# Every source is compiled once (all host tests share HOSTCFLAGS); -MMD -MP dependency
# files make an edited header rebuild exactly the objects that include it.
$(HOST_OBJDIR)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(HOSTCC) $(HOSTCFLAGS) -MMD -MP -c $< -o $@

# A test's libraries: <name>_LDLIBS.
.SECONDEXPANSION:
$(HOST_BINS): $(BUILD)/host/%: $$(call host_objs,$$(%_SRCS) $(HOST_COMMON))
	@mkdir -p $(dir $@)
	@$(HOSTCC) $(HOSTCFLAGS) -o $@ $^ $($*_LDLIBS) -lpthread

host-build: $(HOST_BINS)

# Runs every host test binary; prints one KTAP document (a suite per binary, one totals
# line; tests/host/ktap_all.py). Exit status 1 if any failed.
host-test: $(HOST_BINS)
	@$(PYTHON) tests/host/ktap_all.py $(HOST_BINS)

# ---- QEMU ----
run: deps $(IMAGES)
	$(PYTHON) tools/baremm suite default

bench: deps $(IMAGES)
	$(PYTHON) tools/baremm suite full

test: deps
	@$(MAKE) -s $(IMAGES)
	$(PYTHON) tools/baremm test

# The seed experiments (docs/EXPERIMENTS.md): make seed-000 ... seed-004, or all of them.
# MODEL=PROFILE runs them under the cycle-cost model (docs/COSTMODEL.md).
EXPERIMENT_ARGS := $(if $(MODEL),--model $(MODEL))
seed-%: deps $(IMAGES)
	$(PYTHON) tools/baremm experiment $* $(EXPERIMENT_ARGS)

# `make seeds` runs all five in TCG and in deterministic mode, saves them to docs/data/
# and regenerates docs/EXPERIMENTS.md from them: run it on a committed (clean) tree.
seeds: deps $(IMAGES)
	$(PYTHON) tools/baremm experiment all --no-build --save docs/data
	$(PYTHON) tools/baremm experiment all --no-build --icount --save docs/data
	$(if $(MODEL),$(PYTHON) tools/baremm experiment all --no-build --save docs/data $(EXPERIMENT_ARGS))
	$(PYTHON) tools/baremm docs

# The figure tables of docs/RESULTS.md and docs/EXPERIMENTS.md, from
# tests/perf/baseline.json and docs/data/ (`make test` fails when they drift).
docs:
	$(PYTHON) tools/baremm docs

# Deterministic-mode regression check against tests/perf/baseline.json.
# MODEL=PROFILE: the same entries in model cycles, against tests/perf/baseline-model-PROFILE.json
perf-check: deps $(IMAGES)
	$(PYTHON) tools/baremm perf-check $(EXPERIMENT_ARGS)

perf-baseline: deps $(IMAGES)
	$(PYTHON) tools/baremm perf-check --update $(EXPERIMENT_ARGS)

debug: deps $(ISO)
	tools/debug.sh

clean:
	rm -rf $(BUILD) $(ISO)

FORCE:
.PHONY: all deps run bench test debug clean host-test host-build seeds docs perf-check perf-baseline FORCE

-include $(KOBJS:.o=.d) $(HOST_OBJS:.o=.d)
