/* gtt_zstd.c — the only place that touches libzstd: loaded at run time with dlopen, so that lib/
 * and gt-record build with gcc + libc alone (the GPU box has no zstd headers) and a trace is
 * still written, uncompressed, where the library is missing. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gtt_priv.h"

/* The few functions of zstd's stable API we use, declared here (zstd.h is not needed). */
typedef size_t (*fn_bound)(size_t);
typedef void *(*fn_create)(void);
typedef size_t (*fn_free)(void *);
typedef size_t (*fn_compress)(void *cctx, void *dst, size_t cap, const void *src, size_t n, int level);
typedef size_t (*fn_decompress)(void *dctx, void *dst, size_t cap, const void *src, size_t n);
typedef unsigned long long (*fn_content_size)(const void *src, size_t n);
typedef unsigned (*fn_is_error)(size_t);
typedef size_t (*fn_set_param)(void *cctx, int param, int value);
typedef size_t (*fn_compress2)(void *cctx, void *dst, size_t cap, const void *src, size_t n);

/* zstd.h's values (stable API since 1.4.0) */
#define ZSTD_C_COMPRESSION_LEVEL 100
#define ZSTD_C_CHECKSUM_FLAG 201

static struct {
	void *handle;
	fn_bound bound;
	fn_create create_cctx, create_dctx;
	fn_free free_cctx, free_dctx;
	fn_compress compress;
	fn_decompress decompress;
	fn_content_size content_size;
	fn_is_error is_error;
	fn_set_param set_param; /* optional (libzstd >= 1.4): frames then carry a checksum */
	fn_compress2 compress2;
} Z;
static pthread_once_t z_once = PTHREAD_ONCE_INIT;
static int z_forced_off; /* tests: behave as if the library were missing */

#define ZSTD_CONTENTSIZE_UNKNOWN (0ULL - 1)
#define ZSTD_CONTENTSIZE_ERROR (0ULL - 2)

static void z_load(void)
{
	/* GT_LIBZSTD names another library file; "none" (or empty) acts as if there were none */
	const char *name = getenv("GT_LIBZSTD");
	if (!name)
		name = "libzstd.so.1";
	if (!name[0] || strcmp(name, "none") == 0)
		return;
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	/* object pointers from dlsym become function pointers through memcpy (ISO C forbids a cast) */
#define SYM(field, sym) do { void *p_ = dlsym(h, sym); if (!p_) goto fail; memcpy(&Z.field, &p_, sizeof(p_)); } while (0)
	SYM(bound, "ZSTD_compressBound");
	SYM(create_cctx, "ZSTD_createCCtx");
	SYM(free_cctx, "ZSTD_freeCCtx");
	SYM(compress, "ZSTD_compressCCtx");
	SYM(create_dctx, "ZSTD_createDCtx");
	SYM(free_dctx, "ZSTD_freeDCtx");
	SYM(decompress, "ZSTD_decompressDCtx");
	SYM(content_size, "ZSTD_getFrameContentSize");
	SYM(is_error, "ZSTD_isError");
#undef SYM
	void *p = dlsym(h, "ZSTD_CCtx_setParameter"), *q = dlsym(h, "ZSTD_compress2");
	if (p && q) {
		memcpy(&Z.set_param, &p, sizeof(p));
		memcpy(&Z.compress2, &q, sizeof(q));
	}
	Z.handle = h;
	return;
fail:
	memset(&Z, 0, sizeof(Z));
	dlclose(h);
}

int gtt_zstd_available(void)
{
	pthread_once(&z_once, z_load);
	return Z.handle != NULL && !z_forced_off;
}

void gtt_zstd_force_missing(int on)
{
	z_forced_off = on;
}

size_t gtt_zstd_bound(size_t n)
{
	return gtt_zstd_available() ? Z.bound(n) : 0;
}

void *gtt_zstd_cctx_new(void)
{
	return gtt_zstd_available() ? Z.create_cctx() : NULL;
}

void gtt_zstd_cctx_free(void *cctx)
{
	if (cctx && Z.handle)
		Z.free_cctx(cctx);
}

void *gtt_zstd_dctx_new(void)
{
	return gtt_zstd_available() ? Z.create_dctx() : NULL;
}

void gtt_zstd_dctx_free(void *dctx)
{
	if (dctx && Z.handle)
		Z.free_dctx(dctx);
}

int gtt_zstd_compress(void *cctx, void *dst, size_t cap, const void *src, size_t n, int level, size_t *out)
{
	if (!cctx || !gtt_zstd_available())
		return GTT_ENOZSTD;
	size_t k;
	if (Z.compress2) {
		/* a checksum in every frame: damage that a chunk's CRC cannot see (a writer's bug, a
		 * crafted file) is still found when the block is expanded */
		if (Z.is_error(Z.set_param(cctx, ZSTD_C_COMPRESSION_LEVEL, level)) ||
		    Z.is_error(Z.set_param(cctx, ZSTD_C_CHECKSUM_FLAG, 1)))
			return GTT_ENOMEM;
		k = Z.compress2(cctx, dst, cap, src, n);
	} else {
		k = Z.compress(cctx, dst, cap, src, n, level);
	}
	if (Z.is_error(k))
		return GTT_ENOMEM; /* dst is sized by ZSTD_compressBound: only allocation can fail */
	*out = k;
	return 0;
}

int gtt_zstd_decompress(void *dctx, void *dst, size_t raw_len, const void *src, size_t n)
{
	if (!dctx || !gtt_zstd_available())
		return GTT_ENOZSTD;
	/* the frame must say it holds exactly raw_len bytes: a lie is corruption, found before
	 * any work */
	unsigned long long cs = Z.content_size(src, n);
	if (cs == ZSTD_CONTENTSIZE_ERROR || cs == ZSTD_CONTENTSIZE_UNKNOWN || cs != raw_len)
		return GTT_ECORRUPT;
	size_t k = Z.decompress(dctx, dst, raw_len, src, n);
	if (Z.is_error(k) || k != raw_len)
		return GTT_ECORRUPT;
	return 0;
}
