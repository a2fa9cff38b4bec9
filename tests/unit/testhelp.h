/* testhelp.h — minimal unit-test helpers: each check prints PASS:/FAIL: lines that tests/run.sh counts. */
#ifndef TESTHELP_H
#define TESTHELP_H
#include <stdio.h>

static int th_passed, th_failed;

/* Check one condition; name says what was expected. */
#define th_check(cond, ...) do { \
	if (cond) { th_passed++; printf("PASS: "); printf(__VA_ARGS__); printf("\n"); } \
	else { th_failed++; printf("FAIL: "); printf(__VA_ARGS__); printf("  (%s:%d: %s)\n", __FILE__, __LINE__, #cond); } \
} while (0)

/* Print the summary line and return the process exit status. */
static inline int th_report(void)
{
	printf("%d passed, %d failed\n", th_passed, th_failed);
	return th_failed ? 1 : 0;
}
#endif
