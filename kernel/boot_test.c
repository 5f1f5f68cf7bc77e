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
