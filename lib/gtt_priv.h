/* gtt_priv.h — internals shared by the trace framing (gtt.c) and the record codec (gtt_codec.c). */
#ifndef GTT_PRIV_H
#define GTT_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gtt.h"

/* Little-endian fields, written and read byte for byte. */
static inline void le32(uint8_t *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, 4); /* the same bytes as below, in one store */
#else
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
#endif
}
static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Encoder: appends to a growable buffer; err latches the first failure. */
typedef struct enc {
	uint8_t *p;
	size_t n, cap;
	int err;
} enc;

/* Slow path of enc_reserve: grow the buffer; -1 (and e->err) when out of memory. */
int gtt_enc_grow(enc *e, size_t more);

/* Make room for more bytes at e->p + e->n: 0, or -1 with e->err set. */
static inline int enc_reserve(enc *e, size_t more)
{
	if (__builtin_expect(e->n + more <= e->cap && !e->err, 1))
		return 0;
	return gtt_enc_grow(e, more);
}

/* Append rec's payload (chosen by rec->tag) to e. 0, GTT_EINVAL for an unknown tag, or
 * GTT_ENOMEM. */
int gtt_encode(enc *e, const gtt_record *rec);

#endif
