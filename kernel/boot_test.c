/* Tests of what boot set up: memory map, direct map, stacks and guard pages, faults,
 * printk formats, option parsing, the clock. */
#include "kernel/ktest.h"
#include "kernel/boot.h"
#include "kernel/string.h"
#include "kernel/options.h"
#include "kernel/percpu.h"
#include "mm/memblock.h"
#include "mm/direct_map.h"
#include "mm/fault.h"
#include "mm/physmem.h"
#include "mm/page.h"
#include "mm/page_alloc.h"
#include "arch/x86_64/probe.h"
#include "arch/x86_64/tsc.h"
#include "arch/x86_64/cpu.h"

KTEST(boot, memory_map_sane)
{
	KT_ASSERT(boot_info.nr_ranges > 0);
	for (int i = 1; i < boot_info.nr_ranges; i++)
		KT_EXPECT(boot_info.ranges[i - 1].base + boot_info.ranges[i - 1].size <= boot_info.ranges[i].base);
	KT_EXPECT(memblock.memory.cnt > 0);
	KT_EXPECT(boot_mem_bytes >= (24ULL << 20));
	extern char __kernel_phys_start[];
	KT_EXPECT(memblock_is_reserved((u64)__kernel_phys_start));
	KT_EXPECT(memblock_is_reserved(0x8000));	/* trampoline page */
}

KTEST(boot, direct_map_reaches_all_ram)
{
	/* read the first and last word of every usable range through the direct map */
	for (int i = 0; i < memblock.memory.cnt; i++) {
		u64 b = memblock.memory.r[i].base, e = b + memblock.memory.r[i].size;
		volatile u64 *first = __va(b), *last = __va(e - 8);
		(void)*first;
		(void)*last;
	}
	KT_EXPECT(memblock_end_of_ram() > 0);
}

KTEST(traps, page_fault_is_caught_and_reported)
{
	struct fault_expect *fe = &fault_expect[smp_processor_id()];
	u64 guard = cpu_stack_guard(smp_processor_id());
	u64 v;
	KT_EXPECT(probe_read((void *)guard, &v));	/* the guard page under this CPU's stack */
	KT_EXPECT(fe->hit);
	KT_EXPECT_EQ(fe->vector, 14);
	KT_EXPECT_EQ(fe->addr, guard);
	KT_EXPECT_EQ(fe->error_code & 1, 0);	/* not present */
}

KTEST(traps, write_to_kernel_text_faults)
{
	struct fault_expect *fe = &fault_expect[smp_processor_id()];
	extern char __text_start[];
	u64 v;
	KT_ASSERT(!probe_read(__text_start + 64, &v));	/* readable ... */
	KT_EXPECT(probe_write(__text_start + 64, v));	/* ... but not writable */
	KT_EXPECT(fe->hit);
	KT_EXPECT_EQ(fe->vector, 14);
	KT_EXPECT_EQ(fe->error_code & 3, 3);	/* present + write: text is read-only */
}

/* The direct map's alias of kernel text (and rodata) is read-only too: a write
 * through __va() of the code's physical address must fault like one through the kernel
 * mapping. */
KTEST(traps, kernel_text_alias_in_direct_map_is_read_only)
{
	struct fault_expect *fe = &fault_expect[smp_processor_id()];
	extern char __text_start[], __text_end[], __rodata_start[];
	char *probes[] = { __text_start + 64, (char *)probe_ret, (char *)((u64)__text_end - 8),
			   __rodata_start };
	for (unsigned i = 0; i < ARRAY_SIZE(probes); i++) {
		volatile u64 *alias = __va((u64)probes[i] - KERNEL_VIRT_BASE);
		u64 v, w;
		KT_ASSERT(!probe_read(probes[i], &v));
		KT_ASSERT(!probe_read(alias, &w));	/* readable, the same bytes ... */
		KT_EXPECT_EQ(v, w);
		KT_EXPECT_MSG(probe_write(alias, w), "alias %p of %p is writable", alias, probes[i]);
		KT_EXPECT(fe->hit && fe->vector == 14 && fe->addr == (u64)alias);
		KT_EXPECT_EQ(fe->error_code & 3, 3);	/* present + write */
	}
	/* data next to it in the direct map stays writable */
	static u64 data_word = 5;
	volatile u64 *data_alias = __va((u64)&data_word - KERNEL_VIRT_BASE);
	KT_EXPECT(!probe_write(data_alias, 6));
	KT_EXPECT_EQ(data_word, 6);
}

#define PF_PRESENT 1
#define PF_FETCH 0x10	/* error code: the fault was an instruction fetch */

static bool fetch_faulted(void *target, bool present)
{
	struct fault_expect *fe = &fault_expect[smp_processor_id()];
	return probe_exec(target) && fe->vector == 14 && fe->addr == (u64)target &&
	       (fe->error_code & (PF_FETCH | PF_PRESENT)) == (PF_FETCH | (present ? PF_PRESENT : 0));
}

static volatile u8 nx_data_ret[16] __aligned(16) = { 0xc3 };

KTEST(traps, no_execute_on_data_stack_and_direct_map)
{
	if (!boot_cpu.nx)
		kt_skip("the CPU has no NX bit");
	KT_EXPECT_MSG(!probe_exec((void *)probe_ret), "the exec probe itself faults on text");
	KT_EXPECT_MSG(fetch_faulted((void *)nx_data_ret, true), "kernel data is executable");
	volatile u8 on_stack[16] = { 0xc3 };
	KT_EXPECT_MSG(fetch_faulted((void *)on_stack, true), "the kernel stack is executable");
	/* the direct-map alias of the 'ret' in kernel text: readable, never executable */
	void *alias = __va((u64)probe_ret - KERNEL_VIRT_BASE);
	KT_EXPECT_MSG(fetch_faulted(alias, true), "the direct-map alias of text is executable");
	struct page *pg = alloc_page(GFP_KERNEL);
	KT_ASSERT(pg != NULL);
	volatile u8 *ram = page_address(pg);	/* ordinary RAM through the direct map */
	ram[0] = 0xc3;
	KT_EXPECT_MSG(fetch_faulted((void *)ram, true), "direct-map RAM is executable");
	free_page(pg);
}

KTEST(traps, null_page_is_unmapped)
{
	struct fault_expect *fe = &fault_expect[smp_processor_id()];
	u64 v;
	for (u64 a = 0; a < 0x1000; a += 0x800) {
		KT_EXPECT(probe_read((void *)a, &v));
		KT_EXPECT(fe->hit && fe->addr == a && !(fe->error_code & PF_PRESENT));
		KT_EXPECT(probe_write((void *)a, 0));
		KT_EXPECT(fe->hit && fe->addr == a && (fe->error_code & 3) == 2);	/* write, not present */
		KT_EXPECT_MSG(fetch_faulted((void *)a, false), "executing at %#lx did not fault as "
			      "not-present (error %#lx)", a, fe->error_code);
	}
}

KTEST(printk, formats)
{
	char b[128];
	snprintf(b, sizeof(b), "%d|%5d|%-5d|%05d|%u|%x|%#x|%lx|%s|%.2s|%c|%%", -42, 7, 7, 7, 3000000000u,
		 255, 255, 0xdeadbeefcafeUL, "str", "abc", 'z');
	KT_EXPECT_MSG(!strcmp(b, "-42|    7|7    |00007|3000000000|ff|0xff|deadbeefcafe|str|ab|z|%"), "got '%s'", b);
	snprintf(b, sizeof(b), "%llu %lld %*d %zu", 18446744073709551615ULL, -9223372036854775807LL - 1, 4, 1, (size_t)12);
	KT_EXPECT_MSG(!strcmp(b, "18446744073709551615 -9223372036854775808    1 12"), "got '%s'", b);
	KT_EXPECT_EQ(snprintf(b, 4, "abcdef"), 6);
	KT_EXPECT(!strcmp(b, "abc"));
}

KTEST(time, tsc_calibrated_and_monotonic)
{
	KT_EXPECT(tsc_khz > 100000);	/* at least 100 MHz */
	u64 a = rdtsc_ordered(), b = rdtsc_ordered();
	KT_EXPECT(b >= a);
	KT_EXPECT_EQ(cycles_to_ns(tsc_khz * 1000), 1000000000ULL);
}

KTEST(options, parsed_values_visible)
{
	struct option_desc *o = option_find("tests", 5);
	KT_ASSERT(o != NULL);
	KT_EXPECT(o->set);	/* we are running because tests= was given */
	KT_EXPECT(option_find("no_such_option", 14) == NULL);
}
