/* pythreads.c — Python thread names from outside the process: sys.modules["threading"]._active
 * (ident -> Thread) and each Thread's _name, read through CPython's dict layouts (3.10 keys with
 * a dk_size, 3.11+ log2 sizes and unicode entries, split tables) and instance attributes
 * (a dict at tp_dictoffset, managed dicts, 3.12 tagged values, 3.13 inline values). */
#include "pythreads.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"

#define MAX_ITEMS 16384       /* entries read of one dict; larger ones are not what we look for */
#define KEY_HEAD 128          /* bytes of a str key read to compare it (header + short ASCII text) */
#define RENAME_PERIOD_NS (10 * GT_NS_PER_SEC) /* read whole at least this often (a Thread's dict resized) */
#define SEARCH_PERIOD_NS GT_NS_PER_SEC        /* threading not imported yet: look again after */
#define MAX_TYPES 16
#define TPFLAGS_INLINE_VALUES (1ul << 2)     /* 3.13 */
#define TPFLAGS_MANAGED_DICT (1ul << 4)      /* 3.11+ */
#define DICT_KEYS_GENERAL 0

typedef struct item {
	uint64_t hash, key, value;
	uint64_t slot;          /* where the value pointer is */
} item;

/* What the registry needs of a Thread class, read once per type. */
typedef struct type_info {
	uint64_t addr;
	uint64_t flags;
	int64_t dictoffset, basicsize;
	uint64_t cached_keys;
	int32_t name_ix;        /* index of "_name" in cached_keys, -1 unknown, -2 absent */
} type_info;

struct rec_pynames {
	const rec_pyoff *o;
	uint64_t dict_type;
	uint64_t active;        /* threading._active, once found */
	uint64_t seen_used, seen_version, seen_keys;
	uint64_t last_full_ns, next_search_ns;
	int read_once;
	type_info types[MAX_TYPES];
	size_t n_types;
	rec_pyname *v;
	size_t n, cap;
	uint64_t *slots, *ptrs;  /* per name: where its str pointer is, and the pointer then */
	size_t cap_slots, cap_ptrs;
	item *items, *items2;   /* MAX_ITEMS each */
	uint8_t *heads;         /* MAX_ITEMS x KEY_HEAD */
	uint64_t *vals;         /* MAX_ITEMS */
	rec_procmem_req *req;   /* MAX_ITEMS */
};

rec_pynames *rec_pynames_create(const rec_pyoff *o, uint64_t dict_type)
{
	rec_pynames *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->o = o;
	n->dict_type = dict_type;
	return n;
}

void rec_pynames_destroy(rec_pynames *n)
{
	if (!n)
		return;
	free(n->v);
	free(n->slots);
	free(n->ptrs);
	free(n->items);
	free(n->items2);
	free(n->heads);
	free(n->vals);
	free(n->req);
	free(n);
}

static uint64_t rd64(const uint8_t *b, int32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

/* The dict object at d: its keys and values pointers, used count and version. 0, or -errno
 * (-EINVAL: not a dict). */
static int dict_head(rec_pynames *n, rec_procmem *m, uint64_t d, uint64_t *keys, uint64_t *values,
                     uint64_t *used, uint64_t *version)
{
	const rec_pyoff *o = n->o;
	uint8_t b[64];
	int32_t hi = o->dict_keys > o->dict_values ? o->dict_keys : o->dict_values;
	int rc;

	if (hi < 0 || hi + 8 > (int32_t)sizeof(b) || o->dict_version + 8 > (int32_t)sizeof(b))
		return -ENOTSUP;
	if (!d || (rc = rec_procmem_read(m, d, b, (size_t)hi + 8)) < 0)
		return d ? rc : -EINVAL;
	if (rd64(b, o->ob_type) != n->dict_type)
		return -EINVAL;
	*keys = rd64(b, o->dict_keys);
	*values = rd64(b, o->dict_values);
	*used = rd64(b, 16);
	*version = o->dict_version >= 0 ? rd64(b, o->dict_version) : 0;
	return 0;
}

/* The entries of the keys object at keys into out[0..MAX_ITEMS): hash (general entries only),
 * key and value pointers; with values (a split table's PyDictValues, 0 if none) the values
 * come from there. Returns the number of entries (deleted ones included, key or value 0), or
 * -errno. */
static int keys_items(rec_pynames *n, rec_procmem *m, uint64_t keys, uint64_t values, item *out)
{
	const rec_pyoff *o = n->o;
	uint8_t h[64];
	uint64_t nentries, index_bytes, start;
	size_t esize, i;
	int general, rc;

	if (!keys || (rc = rec_procmem_read(m, keys, h, (size_t)o->dk_indices)) < 0)
		return keys ? rc : -EINVAL;
	nentries = rd64(h, o->dk_nentries);
	if (o->dk_size >= 0) {
		/* 3.10: dk_size slots, indices of 1/2/4/8 bytes by size; general entries only */
		uint64_t size = rd64(h, o->dk_size);
		if (size > (1u << 24))
			return -EINVAL;
		index_bytes = size * (size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffu ? 4 : 8);
		general = 1;
		if (nentries > size)
			return -EINVAL;
	} else {
		uint8_t log2_size = h[o->dk_log2_size], log2_ix = h[o->dk_log2_index_bytes];
		if (log2_size > 30 || log2_ix > 34 || nentries > (1ull << log2_size))
			return -EINVAL;
		index_bytes = 1ull << log2_ix;
		general = h[o->dk_kind] == DICT_KEYS_GENERAL;
	}
	if (nentries > MAX_ITEMS)
		return -EINVAL;
	esize = general ? 24 : 16;
	start = keys + (uint64_t)o->dk_indices + index_bytes;
	if (nentries == 0)
		return 0;
	{
		uint8_t *raw = (uint8_t *)n->heads; /* scratch: MAX_ITEMS x KEY_HEAD >= MAX_ITEMS x 24 */
		if ((rc = rec_procmem_read(m, start, raw, nentries * esize)) < 0)
			return rc;
		for (i = 0; i < nentries; i++) {
			const uint8_t *e = raw + i * esize;
			out[i].hash = general ? rd64(e, 0) : 0;
			out[i].key = rd64(e, general ? 8 : 0);
			out[i].value = rd64(e, general ? 16 : 8);
			out[i].slot = start + i * esize + (general ? 16 : 8);
		}
	}
	if (values) {
		if ((rc = rec_procmem_read(m, values + (uint64_t)o->dv_values, n->vals, nentries * 8)) < 0)
			return rc;
		for (i = 0; i < nentries; i++) {
			out[i].value = n->vals[i];
			out[i].slot = values + (uint64_t)o->dv_values + 8 * i;
		}
	}
	return (int)nentries;
}

/* The index among items[0..k) whose key is the ASCII str want, -1 when none: the keys' headers
 * are read in batches, and compared as compact ASCII strs. */
static int find_key(rec_pynames *n, rec_procmem *m, const item *items, int k, const char *want)
{
	const rec_pyoff *o = n->o;
	size_t wl = strlen(want), head = (size_t)o->str_ascii_size + wl, i, j;

	if (head > KEY_HEAD || o->str_length + 8 > o->str_ascii_size || o->str_state + 4 > o->str_ascii_size)
		return -1;
	for (i = 0; i < (size_t)k; i++)
		n->req[i] = (rec_procmem_req){ items[i].key, n->heads + i * KEY_HEAD, items[i].key ? head : 0, 0 };
	if (k > 0 && rec_procmem_readv(m, n->req, (size_t)k) < 0)
		return -1;
	for (j = 0; j < (size_t)k; j++) {
		const uint8_t *h = n->heads + j * KEY_HEAD;
		uint64_t len;
		uint32_t state;
		if (!items[j].key || !n->req[j].ok)
			continue; /* deleted (or unreadable); a split table's keys have no values */
		memcpy(&len, h + o->str_length, 8);
		memcpy(&state, h + o->str_state, 4);
		/* compact (bit 5) and ASCII (bit 6): the text follows the PyASCIIObject header */
		if (len == wl && (state & (3u << 5)) == (3u << 5) && memcmp(h + o->str_ascii_size, want, wl) == 0)
			return (int)j;
	}
	return -1;
}

/* The value stored under the ASCII key want in the dict at d; 0 when absent or unreadable. */
static uint64_t dict_get(rec_pynames *n, rec_procmem *m, uint64_t d, const char *want)
{
	uint64_t keys, values, used, version;
	int k, i;

	if (dict_head(n, m, d, &keys, &values, &used, &version) < 0)
		return 0;
	if ((k = keys_items(n, m, keys, values, n->items)) <= 0)
		return 0;
	i = find_key(n, m, n->items, k, want);
	return i < 0 ? 0 : n->items[i].value; /* 0 for a deleted entry */
}

/* threading._active, through sys.modules of the interpreter at interp; 0 when not there. */
static uint64_t find_active(rec_pynames *n, rec_procmem *m, uint64_t interp)
{
	uint64_t modules = 0, threading, md;

	if (rec_procmem_read(m, interp + (uint64_t)n->o->is_modules, &modules, 8) < 0 || !modules)
		return 0;
	if (!(threading = dict_get(n, m, modules, "threading")))
		return 0;
	if (rec_procmem_read(m, threading + (uint64_t)n->o->md_dict, &md, 8) < 0)
		return 0;
	return dict_get(n, m, md, "_active");
}

static type_info *type_of(rec_pynames *n, rec_procmem *m, uint64_t tp)
{
	const rec_pyoff *o = n->o;
	uint8_t b[1024];
	type_info *t;
	size_t i, len = (size_t)o->ht_cached_keys + 8;

	for (i = 0; i < n->n_types; i++)
		if (n->types[i].addr == tp)
			return &n->types[i];
	if (len > sizeof(b) || o->tp_flags < 0 || o->tp_dictoffset < 0 || rec_procmem_read(m, tp, b, len) < 0)
		return NULL;
	t = &n->types[n->n_types < MAX_TYPES ? n->n_types++ : MAX_TYPES - 1];
	t->addr = tp;
	t->flags = rd64(b, o->tp_flags);
	t->dictoffset = (int64_t)rd64(b, o->tp_dictoffset);
	t->basicsize = (int64_t)rd64(b, o->tp_basicsize);
	t->cached_keys = rd64(b, o->ht_cached_keys);
	t->name_ix = -1;
	return t;
}

/* The _name of the Thread object at obj; 0 with it in buf and the address of the word that
 * points to it in *slot (a rename stores another str there), or -errno. */
static int thread_name(rec_pynames *n, rec_procmem *m, uint64_t obj, char *buf, size_t cap, uint64_t *slot)
{
	const rec_pyoff *o = n->o;
	uint64_t tp = 0, dict = 0, values = 0, v, keys, used, version;
	type_info *t;
	int k, i;

	if (rec_procmem_read(m, obj + (uint64_t)o->ob_type, &tp, 8) < 0 || !(t = type_of(n, m, tp)))
		return -EFAULT;
	switch (o->attrs) {
	case REC_PY_ATTRS_DICTOFFSET:
		if (t->dictoffset <= 0 || t->dictoffset > 4096 ||
		    rec_procmem_read(m, obj + (uint64_t)t->dictoffset, &dict, 8) < 0)
			return -EINVAL;
		break;
	case REC_PY_ATTRS_MANAGED_311:
		if (!(t->flags & TPFLAGS_MANAGED_DICT) || rec_procmem_read(m, obj - 24, &dict, 8) < 0)
			return -EINVAL;
		if (!dict && rec_procmem_read(m, obj - 32, &values, 8) < 0)
			return -EFAULT;
		break;
	case REC_PY_ATTRS_MANAGED_312:
		if (!(t->flags & TPFLAGS_MANAGED_DICT) || rec_procmem_read(m, obj - 24, &v, 8) < 0)
			return -EINVAL;
		if (v & 1)
			values = v + 1; /* tagged: the values pointer minus one */
		else
			dict = v;
		break;
	case REC_PY_ATTRS_INLINE_313:
		if (!(t->flags & TPFLAGS_MANAGED_DICT) || rec_procmem_read(m, obj - 24, &dict, 8) < 0)
			return -EINVAL;
		if (!dict && (t->flags & TPFLAGS_INLINE_VALUES)) {
			uint8_t h[4];
			if (t->basicsize <= 0 || t->basicsize > 4096 || rec_procmem_read(m, obj + (uint64_t)t->basicsize, h, 4) < 0)
				return -EFAULT;
			if (!h[3]) /* not valid: the values moved to a dict */
				return -EINVAL;
			values = obj + (uint64_t)t->basicsize;
		}
		break;
	default:
		return -ENOTSUP;
	}
	if (dict) {
		if (dict_head(n, m, dict, &keys, &values, &used, &version) < 0)
			return -EINVAL;
		if ((k = keys_items(n, m, keys, values, n->items2)) <= 0)
			return -EINVAL;
		if ((i = find_key(n, m, n->items2, k, "_name")) < 0 || !(v = n->items2[i].value))
			return -EINVAL;
		*slot = n->items2[i].slot;
	} else if (values && t->cached_keys) {
		/* the class's shared keys say where _name is among the values; once per class */
		if (t->name_ix == -1) {
			k = keys_items(n, m, t->cached_keys, 0, n->items2);
			i = k > 0 ? find_key(n, m, n->items2, k, "_name") : -1;
			t->name_ix = i < 0 ? -2 : i;
		}
		*slot = values + (uint64_t)o->dv_values + 8 * (uint64_t)t->name_ix;
		if (t->name_ix < 0 || rec_procmem_read(m, *slot, &v, 8) < 0)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	return rec_py_read_str(m, o, v, buf, cap) < 0 ? -EINVAL : 0;
}

/* Read the whole registry at n->active into n->v. 0 or -errno. */
static int read_registry(rec_pynames *n, rec_procmem *m)
{
	uint64_t keys, values, used, version;
	int k, i, rc;

	if ((rc = dict_head(n, m, n->active, &keys, &values, &used, &version)) < 0)
		return rc;
	if ((k = keys_items(n, m, keys, values, n->items)) < 0)
		return k;
	n->n = 0;
	for (i = 0; i < k; i++) {
		char name[REC_PYNAME_MAX];
		uint64_t ident = n->items[i].hash, slot = 0, ptr = 0; /* an int key's hash is its value (below 2^61 - 1) */
		if (!n->items[i].key || !n->items[i].value || !ident)
			continue;
		if (thread_name(n, m, n->items[i].value, name, sizeof(name), &slot) < 0 || !name[0])
			continue;
		if (GT_GROW(n->v, n->cap, n->n + 1) < 0 || GT_GROW(n->slots, n->cap_slots, n->n + 1) < 0 ||
		    GT_GROW(n->ptrs, n->cap_ptrs, n->n + 1) < 0)
			return -ENOMEM;
		if (rec_procmem_read(m, slot, &ptr, 8) < 0)
			slot = 0;
		n->v[n->n].ident = ident;
		memcpy(n->v[n->n].name, name, sizeof(name));
		n->slots[n->n] = slot;
		n->ptrs[n->n] = ptr;
		n->n++;
	}
	n->seen_used = used;
	n->seen_version = version;
	n->seen_keys = keys;
	return 0;
}

/* Did a thread get another name: its _name pointer changed (one batched read of them all). */
static int renamed(rec_pynames *n, rec_procmem *m)
{
	size_t i, k = n->n < MAX_ITEMS ? n->n : MAX_ITEMS;

	for (i = 0; i < k; i++)
		n->req[i] = (rec_procmem_req){ n->slots[i], &n->vals[i], n->slots[i] ? 8 : 0, 0 };
	if (k && rec_procmem_readv(m, n->req, k) < 0)
		return 1;
	for (i = 0; i < k; i++)
		if (n->slots[i] && (!n->req[i].ok || n->vals[i] != n->ptrs[i]))
			return 1;
	return 0;
}

int rec_pynames_poll(rec_pynames *n, rec_procmem *m, uint64_t interp, uint64_t now_ns,
                     const rec_pyname **out, size_t *n_out)
{
	uint64_t keys, values, used, version;
	int rc;

	*out = NULL;
	*n_out = 0;
	if (n->o->attrs == 0 || n->o->is_modules < 0 || n->o->dk_nentries < 0 || !n->dict_type)
		return -ENOTSUP;
	if (!n->items) {
		n->items = malloc(MAX_ITEMS * sizeof(*n->items));
		n->items2 = malloc(MAX_ITEMS * sizeof(*n->items2));
		n->heads = malloc((size_t)MAX_ITEMS * KEY_HEAD);
		n->vals = malloc(MAX_ITEMS * sizeof(*n->vals));
		n->req = malloc(MAX_ITEMS * sizeof(*n->req));
		if (!n->items || !n->items2 || !n->heads || !n->vals || !n->req)
			return -ENOMEM;
	}
	if (!n->active) {
		if (now_ns < n->next_search_ns)
			return 0;
		n->next_search_ns = now_ns + SEARCH_PERIOD_NS;
		if (!(n->active = find_active(n, m, interp)))
			return 0; /* threading not imported (yet) */
	}
	/* the registry as it was at the last read, and no rename due: nothing to do */
	if ((rc = dict_head(n, m, n->active, &keys, &values, &used, &version)) < 0) {
		n->active = 0; /* look for it again */
		return rc;
	}
	if (n->read_once && used == n->seen_used && version == n->seen_version && keys == n->seen_keys &&
	    now_ns - n->last_full_ns < RENAME_PERIOD_NS && !renamed(n, m))
		return 0;
	if ((rc = read_registry(n, m)) < 0)
		return rc;
	n->read_once = 1;
	n->last_full_ns = now_ns;
	*out = n->v;
	*n_out = n->n;
	return 1;
}
