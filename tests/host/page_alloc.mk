# Host unit tests of the page allocator (mm/page_alloc.c, mm/pcp.c, mm/page_debug.c).
PAGE_ALLOC_HOST_SRCS := mm/page_alloc.c mm/pcp.c mm/page_debug.c mm/memblock.c tests/host/host_call.c

HOST_TESTS += page_alloc pcp page_random
page_alloc_SRCS := tests/host/test_page_alloc.c $(PAGE_ALLOC_HOST_SRCS)
pcp_SRCS := tests/host/test_pcp.c $(PAGE_ALLOC_HOST_SRCS)
page_random_SRCS := tests/host/test_page_random.c $(PAGE_ALLOC_HOST_SRCS)
