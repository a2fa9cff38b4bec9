/* heap.h — the one binary min-heap of the analyzer's reorder queues (the switches' in oncpu.c, the
 * GPU sweep's stragglers in gpu_queue.c, the streamed pass 3's in load_stream.c): typed by a
 * macro so each queue keeps its own element and order without a call per comparison. */
#ifndef GT_ANA_HEAP_H
#define GT_ANA_HEAP_H

#include <stddef.h>

#include "model.h"

/* ANA_HEAP_DEFINE(name, T, less) defines, for elements of type T ordered by
 * int less(const T *, const T *):
 *   name_sift_up(h, i)  h[i] moves up to its place among h[0..i]
 *   name_pop(h, n)      returns h[0]; h[0..n] was the heap, h[0..n) is it after
 * and the queues use them through ana_heap_push and ana_heap_pop on an ANA_VEC(T). */
#define ANA_HEAP_DEFINE(name, T, less)                                                            \
	static inline void name##_sift_up(T *h, size_t i)                                             \
	{                                                                                             \
		T x = h[i];                                                                               \
		while (i > 0 && less(&x, &h[(i - 1) / 2])) {                                              \
			h[i] = h[(i - 1) / 2];                                                                \
			i = (i - 1) / 2;                                                                      \
		}                                                                                         \
		h[i] = x;                                                                                 \
	}                                                                                             \
	static inline T name##_pop(T *h, size_t n)                                                    \
	{                                                                                             \
		T top = h[0];                                                                             \
		if (n) {                                                                                  \
			T last = h[n];                                                                        \
			size_t i = 0;                                                                         \
			for (;;) {                                                                            \
				size_t c = 2 * i + 1;                                                             \
				if (c >= n)                                                                       \
					break;                                                                        \
				if (c + 1 < n && less(&h[c + 1], &h[c]))                                          \
					c++;                                                                          \
				if (!less(&h[c], &last))                                                          \
					break;                                                                        \
				h[i] = h[c];                                                                      \
				i = c;                                                                            \
			}                                                                                     \
			h[i] = last;                                                                          \
		}                                                                                         \
		return top;                                                                               \
	}

/* Push *x (a T *) onto the heap vec: 0, or GTT_ENOMEM with the heap unchanged. */
#define ana_heap_push(name, vec, x)                                                               \
	(ana_vec_push(vec) ? ((vec).v[(vec).n - 1] = *(x), name##_sift_up((vec).v, (vec).n - 1), 0)   \
	                   : GTT_ENOMEM)
/* Take the least element off a non-empty heap vec. */
#define ana_heap_pop(name, vec) name##_pop((vec).v, --(vec).n)

#endif
