/*
 * Boot flow, one direction (docs/ARCHITECTURE.md):
 *   console -> multiboot2 info -> options -> CPU tables -> memory map -> direct map
 *   -> TSC -> ACPI MADT -> per-CPU stacks -> (own stack) APIC, watchdog -> page allocator
 *   -> APs -> tests or benchmarks -> exit status.
 */
#include "kernel/types.h"
#include "kernel/printk.h"
#include "kernel/console.h"
#include "kernel/fbcon.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "kernel/string.h"
#include "kernel/options.h"
#include "kernel/multiboot1.h"
#include "kernel/multiboot2.h"
#include "kernel/exit.h"
#include "kernel/ktest.h"
#include "kernel/smp.h"
#include "kernel/watchdog.h"
#include "kernel/boot.h"
#include "kernel/atomic.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/costmodel.h"
#include "arch/x86_64/serial.h"
#include "arch/x86_64/desc.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/acpi.h"
#include "arch/x86_64/tsc.h"
#include "arch/x86_64/fw_cfg.h"
#include "mm/memblock.h"
#include "mm/direct_map.h"
#include "mm/page_alloc.h"
#ifdef CONFIG_DEBUG_CONTRACTS
#include "mm/mm.h"
#include "mm/tlbflush.h"
#endif

DEFINE_OPTION_STRING(opt_tests, "tests", NULL,
		     "run the in-kernel tests matching this glob over suite.name ('list' lists them)");
#define SELFTEST_LIST(X)                                                                    \
	X(SELFTEST_NONE, "none", "boot normally")                                           \
	X(SELFTEST_HANG, "hang", "spin with interrupts on")                                 \
	X(SELFTEST_HANG_IRQOFF, "hang_irqoff", "spin with interrupts off")                  \
	X(SELFTEST_PANIC, "panic", "call panic()")                                          \
	X(SELFTEST_PAGEFAULT, "pagefault", "read an unmapped address")                      \
	X(SELFTEST_STACK_OVERFLOW, "stack_overflow", "recurse into the stack guard page")   \
	X(SELFTEST_STUCK_CPU, "stuck_cpu", "CPU 1 stops answering cross-CPU calls")         \
	SELFTEST_CONTRACTS(X)
/* Broken contracts (kernel/assert.h) end in a contract panic only where they are checked. */
#ifdef CONFIG_DEBUG_CONTRACTS
#define SELFTEST_CONTRACTS(X)                                                               \
	X(SELFTEST_CONTRACT_IRQS, "contract_irqs", "run a TLB flush step with interrupts on")  \
	X(SELFTEST_CONTRACT_MM_LOCK, "contract_mm_lock", "look up a region without the mm lock")
#else
#define SELFTEST_CONTRACTS(X)
#endif
enum { SELFTEST_LIST(OPTION_ENUM_CONST) };
DEFINE_OPTION_ENUM(opt_selftest, "selftest", SELFTEST_NONE,
		   "provoke a failure to check the failure paths (exit status and report)",
		   SELFTEST_LIST);

struct boot_info boot_info;
static u8 mbi_copy[64 * 1024] __aligned(8);
static char cmdline[MB2_CMDLINE_MAX];
static char cmdline_shown[MB2_CMDLINE_MAX];
static const char *boot_protocol = "none";	/* multiboot2 (GRUB) or multiboot (QEMU -kernel) */
static char loader_shown[sizeof(boot_info.loader)];
static bool want_help;
static struct madt_info madt;
u64 boot_mem_bytes;
const char *cmdline_source = "none";

/* Temporary IST stacks for exceptions taken before the per-CPU stacks exist. */
static u8 early_ist[3][PAGE_SIZE] __aligned(16);

extern char __kernel_phys_start[], __kernel_phys_end[];

/* Early physical access for the multiboot (v1) parser: boot/entry.asm identity-maps the
 * first 4 GiB, where the loader's info lives. */
static const void *boot_phys(u64 pa, u64 len, void *ctx)
{
	(void)ctx;
	if (pa >= (4ULL << 30) || len > (4ULL << 30) - pa)
		return NULL;
	return (const void *)pa;
}
void switch_stack_and_call(u64 stack_top, void (*fn)(void));

/* @src as the MACHINE line quotes it: '"' becomes '\'', cut to fit @cap with its NUL. */
static void copy_shown(char *dst, size_t cap, const char *src)
{
	size_t i = 0;
	for (; i < cap - 1 && src[i]; i++)
		dst[i] = src[i] == '"' ? '\'' : src[i];
	dst[i] = 0;
}

static __noreturn void early_fail(enum exit_status st, const char *what)
{
	printk("BAREMM-ERROR %s\n", what);
	kernel_exit(st);
}

static void setup_memblock(void)
{
	memblock_reset();
	for (int i = 0; i < boot_info.nr_ranges; i++) {
		struct mem_range *r = &boot_info.ranges[i];
		if (r->type != MEM_USABLE)
			continue;
		u64 b = ALIGN_UP(r->base, PAGE_SIZE), e = ALIGN_DOWN(r->base + r->size, PAGE_SIZE);
		if (e > b && memblock_add(b, e - b))
			printk("memblock: too many memory ranges; %#lx-%#lx ignored\n", b, e);
	}
	/* RAM the direct map cannot hold (it ends below the stack area) is not used. */
	if (memblock_end_of_ram() > DIRECT_MAP_MAX_PHYS) {
		printk("boot: firmware data: usable RAM above %llu TiB ignored (beyond the direct map)\n",
		       (unsigned long long)(DIRECT_MAP_MAX_PHYS >> 40));
		memblock_remove(DIRECT_MAP_MAX_PHYS, ~0ULL - DIRECT_MAP_MAX_PHYS);
	}
	/* low 1 MiB: BIOS data, EBDA, the AP trampoline page */
	memblock_reserve(0, 1ULL << 20);
	memblock_reserve((u64)__kernel_phys_start, (u64)(__kernel_phys_end - __kernel_phys_start));
	boot_mem_bytes = memblock_total(&memblock.memory);
}

static void print_machine_header(void)
{
	char model[49];
	/* trim the brand string's leading blanks and quote-proof it */
	const char *m = boot_cpu.model;
	while (*m == ' ')
		m++;
	size_t n = 0;
	for (; m[n] && n < sizeof(model) - 1; n++)
		model[n] = m[n] == '"' ? '\'' : m[n];
	while (n && model[n - 1] == ' ')
		n--;
	model[n] = 0;
	const char *accel = !boot_cpu.hypervisor ? "metal"
			    : !strcmp(boot_cpu.hv_vendor, "TCGTCGTCGTCG") ? "tcg"
			    : !strcmp(boot_cpu.hv_vendor, "KVMKVMKVM") ? "kvm" : "hypervisor";
	char pmu[32];
	if (boot_cpu.pmu_version && boot_cpu.pmu_counters)
		snprintf(pmu, sizeof(pmu), "v%u/%u", boot_cpu.pmu_version, boot_cpu.pmu_counters);
	else
		snprintf(pmu, sizeof(pmu), "none");
	printk("BAREMM-MACHINE cpu_model=\"%s\" vendor=%s tsc_khz=%lu tsc_source=%s apic=%s accel=%s "
	       "mem_mib=%lu cpus=%u firmware=%s boot=%s loader=\"%s\" pcid=%s invpcid=%s pmu=%s "
	       "call_wait=%s call_wait_reason=%s build=%s cmdline_source=%s cmdline=\"%s\"\n",
	       model, boot_cpu.vendor, (unsigned long)tsc_khz, tsc_source, apic_mode_name(), accel,
	       (unsigned long)(boot_mem_bytes >> 20), nr_cpu_ids, boot_info.efi ? "uefi" : "bios",
	       boot_protocol, loader_shown,
	       boot_cpu.pcid ? "yes" : "no", boot_cpu.invpcid ? "yes" : "no", pmu, smp_call_wait_name(),
	       smp_call_wait_reason(), baremm_build_id,
	       cmdline_source, cmdline_shown);
	model_hello();	/* under the cost model: the plugin states its profile next */
}

/* Recurses until the guard page below the stack stops it (selftest=stack_overflow). */
static volatile u64 overflow_sink;
static u64 __attribute__((noinline)) overflow_stack(u64 depth)
{
	volatile char pad[512];
	pad[0] = (char)depth;
	if (overflow_sink == ~0ULL)	/* never true: keeps the recursion unbounded */
		return 0;
	return overflow_stack(depth + 1) + pad[0];
}

static void spin_irqs_off(void *arg)
{
	(void)arg;
	set_doing("selftest=stuck_cpu: spinning with interrupts off");
	for (;;)
		cpu_relax();
}

static void empty_call(void *arg)
{
	(void)arg;
}

static void run_selftest(void)
{
	switch (opt_selftest) {
	case SELFTEST_NONE:
		break;
	case SELFTEST_HANG:
		printk("selftest: hanging with interrupts on; the watchdog must end the run\n");
		set_doing("selftest=hang");
		for (;;)
			hlt();
	case SELFTEST_HANG_IRQOFF:
		printk("selftest: hanging with interrupts off\n");
		set_doing("selftest=hang_irqoff");
		__asm__ __volatile__("cli");
		for (;;)
			watchdog_check();	/* the boot CPU still polls the deadline */
	case SELFTEST_PANIC:
		panic("selftest=panic requested");
	case SELFTEST_PAGEFAULT:
		printk("selftest: reading an unmapped address\n");
		(void)*(volatile u64 *)0x0000000000001000ULL;
		break;
	case SELFTEST_STACK_OVERFLOW:
		printk("selftest: overflowing the kernel stack into its guard page\n");
		overflow_sink = overflow_stack(0);
		break;
	case SELFTEST_STUCK_CPU:
		if (nr_cpu_ids < 2) {
			printk("BAREMM-ERROR selftest=stuck_cpu needs 2 CPUs\n");
			kernel_exit(EXIT_BENCH_ERROR);
		}
		printk("selftest: CPU 1 stops answering; CPU 0 calls it\n");
		smp_call_function_single(1, spin_irqs_off, NULL, false);
		smp_call_function_single(1, empty_call, NULL, true);
		break;
#ifdef CONFIG_DEBUG_CONTRACTS
	case SELFTEST_CONTRACT_IRQS:
		printk("selftest: a TLB flush step with interrupts on\n");
		tlb_selftest_break_irq_contract();
		printk("BAREMM-ERROR selftest=contract_irqs: the broken contract was not reported\n");
		kernel_exit(EXIT_TEST_FAILED);
	case SELFTEST_CONTRACT_MM_LOCK: {
		printk("selftest: a region lookup without the mm lock\n");
		struct mm_struct *mm = mm_alloc();
		if (!mm)
			panic("selftest=contract_mm_lock: no memory for an mm");
		(void)mm_find_region(mm, MM_MMAP_BASE);
		printk("BAREMM-ERROR selftest=contract_mm_lock: the broken contract was not "
		       "reported\n");
		kernel_exit(EXIT_TEST_FAILED);
	}
#endif
	}
}

static void kernel_main_on_stack(void);

static bool option_given(const char *name)
{
	struct option_desc *o = option_find(name, strlen(name));
	return o && o->set;
}

/* Words that would be silently dropped are errors: one boot runs tests or benchmarks. */
static void check_option_conflicts(void)
{
	static const char *const bench_only[] = { "bench", "ab", "runs", "warmup", "iters",
						  "bench_cpus", "cases" };
	if (option_given("tests"))
		for (size_t i = 0; i < ARRAY_SIZE(bench_only); i++)
			if (option_given(bench_only[i])) {
				printk("BAREMM-ERROR option: %s: cannot be combined with tests= (%s= "
				       "applies to benchmarks, tests= runs none; boot once for each)\n",
				       bench_only[i], bench_only[i]);
				kernel_exit(EXIT_BAD_OPTION);
			}
	if (bench_check_options())
		kernel_exit(EXIT_BAD_OPTION);
}

__noreturn void kernel_main(u32 magic, u64 mbi_pa)
{
	percpu_areas[0].self = &percpu_areas[0];
	wrmsr(MSR_GS_BASE, (u64)&percpu_areas[0]);
	serial_init();
	console_set_ready();
	printk("baremm %s booting\n", baremm_build_id);

	/* The legacy 8259 PICs would deliver the PIT on vector 8 (#DF's): mask them all,
	 * and stop the PIT's periodic channel 0 (deterministic SMP under -icount: tsc.c). */
	outb(0x21, 0xff);
	outb(0xa1, 0xff);
	pit_stop();
	cpu_probe();
	idt_init();
	u64 ist[3] = { (u64)early_ist[0] + PAGE_SIZE, (u64)early_ist[1] + PAGE_SIZE,
		       (u64)early_ist[2] + PAGE_SIZE };
	cpu_load_descriptors(0, ist);

	const char *err = NULL;
	if (magic == MB2_BOOTLOADER_MAGIC) {
		u32 total = *(volatile u32 *)mbi_pa;	/* identity-mapped by boot/entry.asm */
		if (total > sizeof(mbi_copy))
			early_fail(EXIT_PANIC, "boot: multiboot2 info larger than 64 KiB");
		memcpy(mbi_copy, (const void *)mbi_pa, total);
		if (mb2_parse(mbi_copy, sizeof(mbi_copy), &boot_info, &err))
			early_fail(EXIT_PANIC, err);
		boot_protocol = "multiboot2";
	} else if (magic == MB1_BOOTLOADER_MAGIC) {
		/* QEMU's -kernel loader (the deterministic modes); it leaves the info above
		 * the image, read before anything is allocated there */
		if (mb1_parse(mbi_pa, boot_phys, NULL, &boot_info, &err))
			early_fail(EXIT_PANIC, err);
		boot_protocol = "multiboot";
	} else {
		early_fail(EXIT_PANIC, "boot: not started by a multiboot loader (bad magic)");
	}
	for (int i = 0; i < boot_info.nr_warnings; i++)
		printk("boot: firmware data: %s\n", boot_info.warnings[i]);
	/* command line: QEMU fw_cfg (the runner) wins over the boot loader's */
	int fw_len = fw_cfg_read_file("opt/baremm/cmdline", cmdline, sizeof(cmdline));
	/* the screen mirrors the console whenever there is one, except for the host tools */
	if (boot_info.fb.present && boot_info.fb.type == 2 && fw_len < 0)
		vga_text_init(boot_info.fb.addr, boot_info.fb.width, boot_info.fb.height);
	if (boot_info.fb.present)	/* pixel framebuffer: drawn when fbcon= wants it */
		fbcon_init(boot_info.fb.addr, boot_info.fb.pitch, boot_info.fb.width,
			   boot_info.fb.height, boot_info.fb.bpp, boot_info.fb.type, fw_len >= 0);
	if (fw_len >= 0) {
		cmdline_source = "fw_cfg";
		if ((size_t)fw_len > sizeof(cmdline) - 1) {
			printk("BAREMM-ERROR option: command line: %d bytes in fw_cfg opt/baremm/cmdline, "
			       "at most %u fit; nothing of it is used\n", fw_len,
			       (unsigned)sizeof(cmdline) - 1);
			kernel_exit(EXIT_BAD_OPTION);
		}
		/* a NUL would end the line early and drop what follows it; trailing NULs are padding */
		size_t len = strlen(cmdline);
		for (size_t i = len; i < (size_t)fw_len; i++)
			if (cmdline[i]) {
				printk("BAREMM-ERROR option: command line: NUL byte at offset %u of %d; the "
				       "words after it would be dropped\n", (unsigned)len, fw_len);
				kernel_exit(EXIT_BAD_OPTION);
			}
	} else {
		memcpy(cmdline, boot_info.cmdline, sizeof(cmdline));
		cmdline_source = boot_info.have_cmdline ? "multiboot" : "none";
		if (boot_info.cmdline_cut) {
			printk("BAREMM-ERROR option: command line: the boot loader's line is longer than "
			       "%u bytes; nothing of it is used\n", (unsigned)sizeof(cmdline) - 1);
			kernel_exit(EXIT_BAD_OPTION);
		}
	}
	for (size_t i = 0; cmdline[i]; i++)
		if (cmdline[i] == '\n' || cmdline[i] == '\r' || cmdline[i] == '\t' ||
		    cmdline[i] == '\v' || cmdline[i] == '\f')
			cmdline[i] = ' ';
	copy_shown(cmdline_shown, sizeof(cmdline_shown), cmdline);
	copy_shown(loader_shown, sizeof(loader_shown), boot_info.loader);
	char oerr[OPT_ERRLEN];
	if (options_parse(cmdline, &want_help, oerr, sizeof(oerr))) {
		printk("BAREMM-ERROR option: %s\n", oerr);
		kernel_exit(EXIT_BAD_OPTION);
	}
	options_fit_machine();
	check_option_conflicts();

	setup_memblock();
	if (boot_mem_bytes < (24ULL << 20)) {
		printk("BAREMM-ERROR memory: %lu MiB of usable RAM; baremm needs at least 24 MiB\n",
		       (unsigned long)(boot_mem_bytes >> 20));
		kernel_exit(EXIT_BENCH_ERROR);
	}
	direct_map_init();
	tsc_init();

	if (acpi_init(boot_info.rsdp_len ? boot_info.rsdp : NULL, boot_info.rsdp_len, &err) ||
	    acpi_parse_madt(&madt, &err))
		early_fail(EXIT_PANIC, err);
	apic_init_cpu();
	smp_prepare_cpus(&madt, apic_read_id());
	switch_stack_and_call(percpu_areas[0].stack_top, kernel_main_on_stack);
	BUG();
}

static void kernel_main_on_stack(void)
{
	cpu_init_common(0);
	cpumask_set_cpu_atomic(0, &cpu_online_mask);
	watchdog_init();
	watchdog_cpu_init();
	smp_init_calls();
	page_alloc_init();
	__asm__ __volatile__("sti");
	smp_boot_aps(&madt);
	smp_choose_call_wait();
	page_alloc_init_pcp();

	print_machine_header();
	page_alloc_boot_report();	/* meminfo=on */
	if (madt.nr_cpus > NR_CPUS)
		printk("BAREMM-INFO cpus_listed=%u cpus_max=%u\n", madt.nr_cpus, NR_CPUS);
	set_doing("main");

	if (want_help) {
		options_print_help();
		kernel_exit(EXIT_PASS);
	}
	run_selftest();
	if (opt_tests) {
		if (!strcmp(opt_tests, "list")) {
			ktest_list();
			kernel_exit(EXIT_PASS);
		}
		if (!ktest_count(opt_tests)) {
			printk("BAREMM-ERROR option: tests: no test matches '%s' (tests=list lists them)\n",
			       opt_tests);
			kernel_exit(EXIT_BAD_OPTION);
		}
		int failed = ktest_run(opt_tests);
		kernel_exit(failed ? EXIT_TEST_FAILED : EXIT_PASS);
	}
	/* bench= or neither: the harness (the default suite when nothing is selected) */
	kernel_exit(boot_default_run());
}
