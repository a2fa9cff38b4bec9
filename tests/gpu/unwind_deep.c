/* unwind_deep.c — frames of every shape for tests/gpu/unwind_check.c, built -O2
 * -fomit-frame-pointer into a shared library: CFA from rsp with pushes and a large frame, CFA
 * from rbp (alloca), a walk through libc (qsort's comparison callback), and recursion. Each path
 * ends by calling leaf(arg). */
#include <alloca.h>
#include <stdlib.h>
#include <string.h>

typedef void (*leaf_fn)(void *arg);

static __thread leaf_fn g_leaf;    /* per thread: qsort gives cmp no argument */
static __thread void *g_arg;
static volatile int sink;

__attribute__((noinline)) int deep_big(int n, leaf_fn leaf, void *arg);

/* a 16 KiB frame: CFA = rsp + a large offset */
__attribute__((noinline)) int deep_big(int n, leaf_fn leaf, void *arg)
{
	volatile char buf[16384];
	buf[n & 1023] = (char)n;
	if (n <= 0)
		leaf(arg);
	else
		sink += deep_big(n - 1, leaf, arg);
	return buf[n & 1023] + 1;
}

/* alloca: the compiler keeps rbp as the frame base */
__attribute__((noinline)) int deep_alloca(int n, leaf_fn leaf, void *arg)
{
	char *p = alloca(64 + (size_t)(n & 7) * 16);
	memset(p, n, 16);
	if (n <= 0)
		leaf(arg);
	else
		sink += deep_alloca(n - 1, leaf, arg);
	return p[3] + 1;
}

static int cmp(const void *a, const void *b)
{
	static __thread int done;
	if (!done) {
		done = 1;
		g_leaf(g_arg);
		done = 0;
	}
	return *(const int *)a - *(const int *)b;
}

/* through libc: qsort calls back into us */
__attribute__((noinline)) int deep_qsort(leaf_fn leaf, void *arg)
{
	int v[8] = { 5, 3, 7, 1, 8, 2, 6, 4 };
	g_leaf = leaf;
	g_arg = arg;
	qsort(v, 8, sizeof(v[0]), cmp);
	return v[0];
}

/* mixed: rsp frames and alloca frames in turn, then libc */
__attribute__((noinline)) int deep_mixed(int n, leaf_fn leaf, void *arg);

__attribute__((noinline)) static int mixed_alloca(int n, leaf_fn leaf, void *arg)
{
	char *p = alloca(32 + (size_t)(n & 3) * 16);
	memset(p, n, 8);
	return deep_mixed(n - 1, leaf, arg) + p[1];
}

__attribute__((noinline)) static int mixed_big(int n, leaf_fn leaf, void *arg)
{
	volatile char buf[4096];
	buf[n & 511] = (char)n;
	return deep_mixed(n - 1, leaf, arg) + buf[n & 511];
}

__attribute__((noinline)) int deep_mixed(int n, leaf_fn leaf, void *arg)
{
	if (n <= 0)
		return deep_qsort(leaf, arg) + 1;
	return (n % 3 == 0 ? mixed_alloca(n, leaf, arg) : mixed_big(n, leaf, arg)) + 1;
}
