/* The test-only reference classifier (decode_ref.c). */
#ifndef BAREMM_DECODE_REF_H
#define BAREMM_DECODE_REF_H

#include "model/model.h"

/* The old contract: fills kind, len (the bytes it looked at), marker_cmd, cr, gpr, has_mem
 * and mem, and zeroes the rest of *out. */
void decode_insn_ref(const u8 *b, size_t n, struct insn_info *out);

#endif
