#include "kernel/string.h"

#ifndef BAREMM_HOST
/*
 * rep stos/movs: no SSE needed. Whole 8-byte words go through the q forms: hardware
 * does either form at full speed, but QEMU emulates (and -icount counts) every
 * iteration, so a 4 KiB page costs 512 iterations instead of 4096 and emulated
 * figures are not dominated by byte loops.
 */
void *memset(void *s, int c, size_t n)
{
	void *d = s;
	size_t words = n / 8, tail = n % 8;
	u64 pattern = 0x0101010101010101ULL * (u8)c;
	__asm__ __volatile__("rep stosq" : "+D"(d), "+c"(words) : "a"(pattern) : "memory");
	__asm__ __volatile__("rep stosb" : "+D"(d), "+c"(tail) : "a"(c) : "memory");
	return s;
}

void *memcpy(void *restrict d, const void *restrict s, size_t n)
{
	void *r = d;
	size_t words = n / 8, tail = n % 8;
	__asm__ __volatile__("rep movsq" : "+D"(d), "+S"(s), "+c"(words)::"memory");
	__asm__ __volatile__("rep movsb" : "+D"(d), "+S"(s), "+c"(tail)::"memory");
	return r;
}

void *memmove(void *d, const void *s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;
	if (dp <= sp || dp >= sp + n)
		return memcpy(d, s, n);
	while (n--)
		dp[n] = sp[n];
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}
#endif

bool glob_match(const char *pat, const char *str)
{
	const char *star = NULL, *resume = NULL;
	while (*str) {
		if (*pat == '*') {
			star = pat++;
			resume = str;
		} else if (*pat == '?' || *pat == *str) {
			pat++;
			str++;
		} else if (star) {
			pat = star + 1;
			str = ++resume;
		} else {
			return false;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == 0;
}
