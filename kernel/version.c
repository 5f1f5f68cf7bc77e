#include "kernel/boot.h"
#ifndef BUILD_ID
#define BUILD_ID "unknown"
#endif
const char baremm_build_id[] = BUILD_ID;
