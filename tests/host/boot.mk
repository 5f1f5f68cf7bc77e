HOST_TESTS += options multiboot1 multiboot2 memblock
options_SRCS := tests/host/test_options.c kernel/options.c kernel/string.c
multiboot2_SRCS := tests/host/test_multiboot2.c kernel/multiboot2.c kernel/string.c
multiboot1_SRCS := tests/host/test_multiboot1.c kernel/multiboot1.c kernel/multiboot2.c kernel/string.c
memblock_SRCS := tests/host/test_memblock.c mm/memblock.c
HOST_TESTS += math
math_SRCS := tests/host/test_math.c
