#include "kernel/boot.h"
#include "kernel/ktest.h"

enum exit_status boot_default_run(void)
{
	return ktest_run("*") ? EXIT_TEST_FAILED : EXIT_PASS;
}
