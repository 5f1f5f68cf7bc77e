#include "kernel/boot.h"
#ifndef BUILD_ID
#define BUILD_ID "unknown"
#endif
const char baremm_build_id[] = BUILD_ID;
/* The same id with a marker tools/symbolize finds in the ELF file, to refuse a log from
 * another build (its addresses would name the wrong functions). */
__attribute__((used)) const char baremm_build_id_tag[] = "baremm-build-id:" BUILD_ID;
