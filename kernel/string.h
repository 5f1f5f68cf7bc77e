/* The few libc string functions the kernel uses; host builds take libc's. */
#ifndef BAREMM_STRING_H
#define BAREMM_STRING_H

#include "kernel/types.h"

#ifdef BAREMM_HOST
#include <string.h>
#else
void *memset(void *s, int c, size_t n);
void *memcpy(void *restrict d, const void *restrict s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
#endif

/* Glob match with '*' and '?' (used by tests= and bench= selections). */
bool glob_match(const char *pat, const char *str);

#endif
