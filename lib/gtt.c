/* gtt.c — the .gtt trace format: chunk framing, CRC-32C, a buffered thread-safe writer and a
 * zero-copy reader that survives cut-off files. Record payloads are in gtt_codec.c; packed
 * blocks (1.1) in gtt_pack.c (writing) and gtt_unpack.c (reading); the index in gtt_index.c. */
#include "gtt_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


/* ---- CRC-32C, slicing by 8 ---- */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw; /* the CPU has the SSE4.2 crc32 instruction (same polynomial) */

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__builtin_cpu_init();
	crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* Hardware CRC-32C: about 8 bytes a cycle against ~1 byte a cycle for the tables; it
 * matters on the CUDA agent's path, which frames hundreds of thousands of records/s. */
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = ~crc & 0xffffffffu;
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (len--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return ~c32;
}
#endif

uint32_t gtt_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		                     (uint32_t)p[3] << 24);
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

uint32_t gtt_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (crc_hw)
		return crc_sse42(crc, buf, len);
#endif
	return gtt_crc32c_sw(crc, buf, len);
}
const char *gtt_strerror(int rc)
{
	switch (rc) {
	case GTT_OK: return "success";
	case GTT_EIO: return "I/O error";
	case GTT_ENOMEM: return "out of memory";
	case GTT_EFORMAT: return "not a groundtruth trace (bad magic or header)";
	case GTT_EVERSION: return "trace written by a newer, unsupported format version";
	case GTT_ECORRUPT: return "corrupt chunk (checksum mismatch or impossible length)";
	case GTT_ETRUNC: return "trace is cut off inside a chunk";
	case GTT_EINVAL: return "invalid argument or undecodable record";
	case GTT_EEMPTY: return "empty file";
	case GTT_ENOZSTD: return "the trace holds zstd-compressed chunks and libzstd.so.1 could not be loaded (install libzstd1 / libzstd)";
	default: return "unknown error";
	}
}

uint64_t gtt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- writer ---- */

#define WRITER_FLUSH_BYTES (1u << 20)

static int write_all(int fd, const uint8_t *p, size_t n, int *err_errno)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			*err_errno = errno;
			return GTT_EIO;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Write the buffer out; caller holds the lock. */
static int flush_locked(gtt_writer *w)
{
	if (w->err)
		return w->err;
	if (w->out.n) {
		int rc = write_all(w->fd, w->out.p, w->out.n, &w->err_errno);
		if (rc) {
			w->err = rc;
			return rc;
		}
		w->written_bytes += w->out.n;
		w->out.n = 0;
	}
	return 0;
}

/* Take the writer's lock once no gtt_writer_switch is under way, and count the caller as
 * active until unlock_writer: a write can wait for the compression worker (releasing the lock)
 * in the middle of a record — between interning its callchain and encoding it — so a switch
 * waits until no call is active, and new calls wait until the switch is done. */
static void lock_writer(gtt_writer *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->switching)
		pthread_cond_wait(&w->cv_switch, &w->lock);
	w->active++;
}

static void unlock_writer(gtt_writer *w)
{
	if (--w->active == 0 && w->switching)
		pthread_cond_broadcast(&w->cv_switch);
	pthread_mutex_unlock(&w->lock);
}

void gtt_writer_opts_init(gtt_writer_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->minor = GTT_VERSION_MINOR;
}

/* The file header, at the start of w->fd. */
static int write_header(gtt_writer *w)
{
	uint8_t h[GTT_HEADER_LEN];
	memcpy(h, GTT_MAGIC, GTT_MAGIC_LEN);
	h[8] = GTT_VERSION_MAJOR & 0xff; h[9] = GTT_VERSION_MAJOR >> 8;
	h[10] = (uint8_t)w->minor; h[11] = 0;
	le32(h + 12, 0); /* flags, reserved */
	int rc = write_all(w->fd, h, sizeof(h), &w->err_errno);
	if (!rc)
		w->written_bytes = sizeof(h);
	return rc;
}

gtt_writer *gtt_writer_fdopen_opts(int fd, int append, const gtt_writer_opts *o, int *err)
{
	int rc = GTT_OK;
	gtt_writer_opts defaults;
	if (!o) {
		gtt_writer_opts_init(&defaults);
		o = &defaults;
	}
	gtt_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		rc = GTT_ENOMEM;
		goto fail;
	}
	w->fd = fd;
	w->append = append;
	w->minor = o->minor >= 1 ? 1 : 0;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cv_switch, NULL);
	if (w->minor >= 1 && !append && !(w->pk = gtt_pack_new(o, &rc)))
		goto fail;
	/* 1.2 only where a chunk of codec 2 can come: any 1.1 reader reads the rest */
	if (w->pk && gtt_pack_splits(w->pk))
		w->minor = 2;
	if (!append && (rc = write_header(w)) != 0) {
		errno = w->err_errno;
		goto fail;
	}
	if (w->pk && (rc = gtt_pack_open(w)) < 0)
		goto fail;
	if (err)
		*err = 0;
	return w;
fail:
	if (w) {
		gtt_pack_free(w->pk);
		free(w->out.p);
		pthread_cond_destroy(&w->cv_switch);
		pthread_mutex_destroy(&w->lock);
		free(w);
	}
	if (err)
		*err = rc;
	return NULL;
}

gtt_writer *gtt_writer_fdopen(int fd, int append, int *err)
{
	return gtt_writer_fdopen_opts(fd, append, NULL, err);
}

gtt_writer *gtt_writer_open(const char *path, int *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		if (err)
			*err = GTT_EIO;
		return NULL;
	}
	gtt_writer *w = gtt_writer_fdopen(fd, 0, err);
	if (!w) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return w;
}

int gtt_append_chunk(gtt_writer *w, uint32_t tag, const uint8_t *payload, uint32_t len, uint64_t *at)
{
	uint8_t hdr[GTT_CHUNK_HEADER_LEN];
	if (len > GTT_MAX_PAYLOAD)
		return GTT_EINVAL;
	le32(hdr, tag);
	le32(hdr + 4, len);
	uint32_t crc = gtt_crc32c(0, hdr, 8);
	crc = gtt_crc32c(crc, payload, len);
	le32(hdr + 8, crc);
	if (enc_reserve(&w->out, sizeof(hdr) + (size_t)len) != 0)
		return w->out.err;
	if (at)
		*at = w->written_bytes + w->out.n;
	memcpy(w->out.p + w->out.n, hdr, sizeof(hdr));
	if (len)
		memcpy(w->out.p + w->out.n + sizeof(hdr), payload, len);
	w->out.n += sizeof(hdr) + (size_t)len;
	if (w->out.n >= WRITER_FLUSH_BYTES)
		return flush_locked(w);
	return 0;
}

int gtt_append_record(gtt_writer *w, const gtt_record *rec)
{
	/* Encode straight behind a reserved chunk header, then fill the header in:
	 * one pass over the bytes, no copy (this is the CUDA agent's per-record path). */
	size_t at = w->out.n;
	if (enc_reserve(&w->out, GTT_CHUNK_HEADER_LEN + 256) != 0)
		return w->out.err;
	w->out.n += GTT_CHUNK_HEADER_LEN;
	int rc = gtt_encode(&w->out, rec);
	size_t len = w->out.n - at - GTT_CHUNK_HEADER_LEN;
	if (!rc && len > GTT_MAX_PAYLOAD)
		rc = GTT_EINVAL;
	if (rc) {
		w->out.n = at; /* drop the partial record */
		if (rc != GTT_ENOMEM)
			w->out.err = 0;
		return rc;
	}
	uint8_t *h = w->out.p + at;
	le32(h, rec->tag);
	le32(h + 4, (uint32_t)len);
	le32(h + 8, gtt_crc32c(gtt_crc32c(0, h, 8), h + GTT_CHUNK_HEADER_LEN, len));
	if (w->out.n >= WRITER_FLUSH_BYTES)
		return flush_locked(w);
	return 0;
}

int gtt_write_raw(gtt_writer *w, uint32_t tag, const void *payload, uint32_t len)
{
	if (!w || (len && !payload))
		return GTT_EINVAL;
	lock_writer(w);
	int rc = w->err;
	if (!rc)
		rc = w->pk ? gtt_pack_write_raw(w, tag, payload, len) : gtt_append_chunk(w, tag, payload, len, NULL);
	if (!rc)
		w->n_records++;
	unlock_writer(w);
	return rc;
}

int gtt_write(gtt_writer *w, const gtt_record *rec)
{
	if (!w || !rec)
		return GTT_EINVAL;
	lock_writer(w);
	int rc = w->err;
	if (!rc)
		rc = w->pk ? gtt_pack_write(w, rec) : gtt_append_record(w, rec);
	if (!rc)
		w->n_records++;
	unlock_writer(w);
	return rc;
}

int gtt_writer_flush(gtt_writer *w)
{
	if (!w)
		return GTT_EINVAL;
	lock_writer(w);
	int rc = w->err;
	if (!rc && w->pk && (rc = gtt_pack_sync(w)) < 0 && !w->err)
		w->err = rc;
	if (!rc)
		rc = flush_locked(w);
	unlock_writer(w);
	return rc;
}

uint64_t gtt_writer_bytes(const gtt_writer *w)
{
	return w ? w->written_bytes + w->out.n + gtt_pack_pending(w->pk) : 0;
}

uint64_t gtt_writer_records(const gtt_writer *w)
{
	return w ? w->n_records : 0;
}

int gtt_writer_errno(const gtt_writer *w)
{
	return w ? w->err_errno : 0;
}

void gtt_writer_get_stats(gtt_writer *w, gtt_writer_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	st->minor = w->minor;
	st->codec = "plain";
	st->n_records = w->n_records;
	if (w->pk)
		gtt_pack_stats(w->pk, st);
	pthread_mutex_unlock(&w->lock);
}

int gtt_writer_redefine(gtt_writer *w, uint64_t since_seq)
{
	if (!w || !w->pk)
		return GTT_EINVAL;
	lock_writer(w);
	int rc = w->err ? w->err : gtt_pack_redefine(w, since_seq);
	unlock_writer(w);
	return rc;
}

void gtt_writer_set_tap(gtt_writer *w, gtt_writer_tap fn, void *ctx)
{
	if (!w)
		return;
	lock_writer(w);
	w->tap = fn;
	w->tap_ctx = ctx;
	unlock_writer(w);
}

/* The replay's way in: a record into the new file's blocks (lock held by the switch). */
static int replay_put(gtt_writer *w, const gtt_record *rec)
{
	int rc = rec ? gtt_pack_write(w, rec) : GTT_EINVAL;
	if (!rc)
		w->n_records++;
	return rc;
}

int gtt_writer_switch(gtt_writer *w, int fd, gtt_writer_replay replay, void *ctx, int *old_fd)
{
	if (old_fd)
		*old_fd = -1;
	if (!w || !w->pk || w->append || fd < 0 || !old_fd)
		return GTT_EINVAL;
	pthread_mutex_lock(&w->lock);
	while (w->switching)
		pthread_cond_wait(&w->cv_switch, &w->lock);
	w->switching = 1;
	while (w->active)
		pthread_cond_wait(&w->cv_switch, &w->lock);
	int rc = w->err;
	/* the old file ends whole: every block, then its index (gtt_pack_write_index drains the
	 * compression worker, whose waits let other threads take the lock: they wait on cv_switch) */
	if (!rc && (rc = gtt_pack_sync(w)) == 0 && (rc = gtt_pack_write_index(w)) == 0)
		rc = flush_locked(w);
	if (!rc) {
		*old_fd = w->fd;
		w->fd = fd;
		w->written_bytes = 0;
		gtt_pack_new_file(w);
		w->in_replay = 1; /* the writer's own meta and the replay: already known to the tap */
		if ((rc = write_header(w)) == 0 && (rc = gtt_pack_open(w)) == 0 && replay)
			rc = replay(ctx, w, replay_put);
		w->in_replay = 0;
	}
	if (rc && !w->err)
		w->err = rc;
	w->switching = 0;
	pthread_cond_broadcast(&w->cv_switch);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int gtt_writer_close(gtt_writer *w)
{
	if (!w)
		return 0;
	lock_writer(w);
	int rc = w->err;
	if (!rc && w->pk && (rc = gtt_pack_sync(w)) == 0)
		rc = gtt_pack_write_index(w);
	if (!rc)
		rc = flush_locked(w);
	unlock_writer(w);
	gtt_pack_stop(w);
	if (close(w->fd) != 0 && !rc) {
		w->err_errno = errno;
		rc = GTT_EIO;
	}
	if (!rc)
		rc = w->err;
	gtt_pack_free(w->pk);
	free(w->out.p);
	pthread_cond_destroy(&w->cv_switch);
	pthread_mutex_destroy(&w->lock);
	free(w);
	return rc;
}

/* ---- reader ---- */

static int check_header(gtt_reader *r)
{
	if (r->len == 0)
		return GTT_EEMPTY;
	size_t have = r->len < GTT_HEADER_LEN ? r->len : GTT_HEADER_LEN;
	size_t cmp = have < GTT_MAGIC_LEN ? have : GTT_MAGIC_LEN;
	if (memcmp(r->data, GTT_MAGIC, cmp) != 0)
		return GTT_EFORMAT;
	if (have < GTT_HEADER_LEN) {
		/* Cut off inside the header: a trace with no chunks. */
		r->truncated = 1;
		r->off = r->len;
		return 0;
	}
	r->major = (uint32_t)r->data[8] | (uint32_t)r->data[9] << 8;
	r->minor = (uint32_t)r->data[10] | (uint32_t)r->data[11] << 8;
	if (r->major == 0)
		return GTT_EFORMAT;
	if (r->major > GTT_VERSION_MAJOR)
		return GTT_EVERSION;
	r->off = GTT_HEADER_LEN;
	r->crc_ok_to = r->crc_at = GTT_HEADER_LEN;
	return 0;
}

static gtt_reader *reader_finish(gtt_reader *r, int *err)
{
	r->blk_off = UINT64_MAX;
	int rc = check_header(r);
	if (rc) {
		gtt_reader_close(r);
		if (err)
			*err = rc;
		return NULL;
	}
	if (err)
		*err = 0;
	return r;
}

gtt_reader *gtt_reader_open_mem(const void *buf, size_t len, int *err)
{
	gtt_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		if (err)
			*err = GTT_ENOMEM;
		return NULL;
	}
	r->data = buf;
	r->len = len;
	return reader_finish(r, err);
}

/* Read a whole non-seekable stream into memory. */
static int slurp(int fd, uint8_t **out, size_t *outlen)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *p = malloc(cap);
	if (!p)
		return GTT_ENOMEM;
	for (;;) {
		if (n == cap) {
			uint8_t *q = realloc(p, cap * 2);
			if (!q) {
				free(p);
				return GTT_ENOMEM;
			}
			p = q;
			cap *= 2;
		}
		ssize_t k = read(fd, p + n, cap - n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			free(p);
			return GTT_EIO;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	*out = p;
	*outlen = n;
	return 0;
}

gtt_reader *gtt_reader_open(const char *path, int *err)
{
	int rc = GTT_OK, fd = -1;
	gtt_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		rc = GTT_ENOMEM;
		goto fail;
	}
	fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r->err_errno = errno;
		rc = GTT_EIO;
		goto fail;
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		r->err_errno = EISDIR;
		rc = GTT_EIO;
		goto fail;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			/* readers go front to back: let the kernel read ahead */
			madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
			r->data = p;
			r->len = (size_t)st.st_size;
			r->mapped = 1;
		}
	}
	if (!r->mapped) {
		uint8_t *p = NULL;
		size_t n = 0;
		if ((rc = slurp(fd, &p, &n)) < 0) {
			r->err_errno = errno;
			goto fail;
		}
		r->data = p;
		r->len = n;
		r->owned = 1;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	return reader_finish(r, err);
fail:
	if (fd >= 0 && fd != STDIN_FILENO)
		close(fd);
	if (r && rc == GTT_EIO)
		errno = r->err_errno;
	free(r);
	if (err)
		*err = rc;
	return NULL;
}

/* Read the chunk at r->off: 1 with its tag and payload (r->off moves past it), 0 at the end
 * (cut off: r->truncated), or GTT_ECORRUPT. */
static int read_chunk(gtt_reader *r, uint32_t *tag, const uint8_t **payload, uint32_t *len)
{
	size_t left = r->len - r->off;
	r->last_off = r->off;
	if (left < GTT_CHUNK_HEADER_LEN) {
		r->truncated = 1;
		r->off = r->len;
		return 0;
	}
	const uint8_t *h = r->data + r->off;
	uint32_t n = rd32(h + 4), crc = rd32(h + 8);
	*tag = rd32(h);
	if (n > GTT_MAX_PAYLOAD) {
		r->stopped = 1; /* no way to find the next chunk */
		return GTT_ECORRUPT;
	}
	if ((size_t)n > left - GTT_CHUNK_HEADER_LEN) {
		r->truncated = 1;
		r->off = r->len;
		return 0;
	}
	*payload = h + GTT_CHUNK_HEADER_LEN;
	*len = n;
	size_t at = r->off;
	r->off += GTT_CHUNK_HEADER_LEN + (size_t)n;
	/* checked once: a chunk reached in order from the start inside the checked prefix is not
	 * checked again */
	int in_order = at == r->crc_at;
	r->crc_at = SIZE_MAX;
	if (!in_order || r->off > r->crc_ok_to) {
		if (gtt_crc32c(gtt_crc32c(0, h, 8), *payload, n) != crc)
			return GTT_ECORRUPT;
		if (at == r->crc_ok_to)
			r->crc_ok_to = r->off;
	}
	if (in_order)
		r->crc_at = r->off;
	return 1;
}

/* Every 8 MiB read, the pages of a mapped trace behind the chunk about to be read leave the
 * process (MADV_DONTNEED on a read-only private file mapping: nothing is lost, a page touched
 * again comes back from the page cache or the file), so that reading a trace of any size keeps
 * the reader's resident memory bounded. After a seek back, dropping starts over from there. */
#define DROP_BEHIND_BYTES ((size_t)8 << 20)
void gtt_drop_behind(const gtt_reader *r, size_t *dropped_to, size_t at, int now)
{
	if (!r->mapped)
		return;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), hi = at / page * page;
	if (hi < *dropped_to) {
		*dropped_to = hi;
		return;
	}
	if (hi == *dropped_to || (!now && hi - *dropped_to < DROP_BEHIND_BYTES))
		return;
	madvise((void *)(uintptr_t)(r->data + *dropped_to), hi - *dropped_to, MADV_DONTNEED);
	*dropped_to = hi;
}

static void drop_behind(gtt_reader *r, size_t at)
{
	gtt_drop_behind(r, &r->dropped_to, at, 0);
}

int gtt_reader_next(gtt_reader *r, gtt_record *rec)
{
	if (!r || !rec)
		return GTT_EINVAL;
	for (;;) {
		if (r->blk_active) {
			int rc = 2;
			while (rc == 2 && r->blk_pos < r->blk_len) {
				r->cur_index = r->blk_index;
				rc = gtt_unpack_next(r, rec);
			}
			if (rc != 2) {
				r->cur = r->blk_info;
				r->last_off = r->blk_off;
				return rc;
			}
			r->blk_active = 0;
		}
		if (r->stopped || r->off >= r->len)
			return 0;
		if (r->window && !r->seeked_plain) {
			int rc = gtt_index_position(r);
			if (rc <= 0)
				return rc;
		}
		r->seeked_plain = 0;
		uint32_t tag = 0, len = 0;
		const uint8_t *payload = NULL;
		uint64_t at = r->off;
		drop_behind(r, r->off);
		int rc = read_chunk(r, &tag, &payload, &len);
		if (rc <= 0)
			return rc;
		if (tag == GTT_REC_INDEX)
			continue; /* the reader's own business */
		if (tag == GTT_REC_PACKED) {
			/* a stream of kinds the caller did not ask for: not even expanded. Its checksum was
			 * checked like any chunk's; what only expanding it could find (a frame that does
			 * not expand) goes unreported, as errors inside records passed over do */
			if (gtt_unpack_unwanted(r, payload, len))
				continue;
			gtt_chunk_info ci;
			if (gtt_unpack_summarized(r, payload, len, &ci)) {
				gtt_summary *s = &r->summary;
				s->n_chunks++;
				s->n_records += ci.n_records;
				if (ci.first_ns <= ci.last_ns) {
					s->first_ns = ci.first_ns < s->first_ns ? ci.first_ns : s->first_ns;
					s->last_ns = ci.last_ns > s->last_ns ? ci.last_ns : s->last_ns;
				}
				continue;
			}
			if ((rc = gtt_unpack_open(r, payload, len, at)) < 0)
				return rc;
			continue;
		}
		memset(&r->cur, 0, sizeof(r->cur));
		r->cur.offset = at;
		r->cur.tag = tag;
		r->cur.stored_len = r->cur.raw_len = len;
		r->cur.n_records = 1;
		r->cur.first_ns = UINT64_MAX;
		r->cur_index = 0;
		/* a kind not wanted (gtt_reader_only): a plain chunk has no block state to keep */
		int unwanted = r->only && tag < 64 && !(r->only >> tag & 1);
		if (unwanted && tag != GTT_REC_CALLCHAIN)
			continue;
		rc = gtt_decode(tag, payload, len, rec, &r->scratch, &r->scratch_cap);
		if (rc == 0 && tag == GTT_REC_SAMPLE && r->skip_stacks) {
			/* bare, as from a packed chunk (a 1.0 trace, a sample too large for a block) */
			gtt_sample *s = &rec->u.sample;
			s->n_regs = 0;
			s->regs = NULL;
			s->stack_len = 0;
			s->stack = NULL;
		}
		if (rc == 0 && tag == GTT_REC_CALLCHAIN)
			rc = gtt_chaintab_put(&r->chains, rec->u.callchain.id, rec->u.callchain.n_kernel,
			                      rec->u.callchain.n_user, rec->u.callchain.ips);
		if (unwanted) {
			if (rc == GTT_ENOMEM)
				return rc;
			continue;
		}
		return rc < 0 ? rc : 1;
	}
}

void gtt_reader_tell(const gtt_reader *r, gtt_pos *pos)
{
	pos->chunk = r ? r->cur.offset : 0;
	pos->index = r ? r->cur_index : 0;
}

int gtt_reader_seek(gtt_reader *r, const gtt_pos *pos)
{
	if (!r || !pos || pos->chunk < GTT_HEADER_LEN || pos->chunk >= r->len)
		return GTT_EINVAL;
	r->stopped = 0;
	r->seeked_plain = 0;
	if (r->blk_off == pos->chunk) {
		/* the chunk is expanded already: go on from here, or start it over */
		if (pos->index < r->blk_index || !r->blk_active)
			gtt_unpack_restart(r);
		r->off = (size_t)(r->blk_off + GTT_CHUNK_HEADER_LEN + r->blk_info.stored_len);
	} else {
		r->blk_active = 0;
		r->off = (size_t)pos->chunk;
		drop_behind(r, r->off);
		uint32_t tag = 0, len = 0;
		const uint8_t *payload = NULL;
		int rc = read_chunk(r, &tag, &payload, &len);
		if (rc <= 0)
			return rc < 0 ? rc : GTT_EINVAL;
		if (tag != GTT_REC_PACKED) {
			r->off = (size_t)pos->chunk; /* read again by gtt_reader_next */
			r->seeked_plain = 1;
			return pos->index == 0 ? 0 : GTT_EINVAL;
		}
		if ((rc = gtt_unpack_open(r, payload, len, pos->chunk)) < 0)
			return rc;
	}
	return gtt_unpack_skip(r, pos->index);
}

void gtt_reader_chunk(const gtt_reader *r, gtt_chunk_info *ci)
{
	if (r)
		*ci = r->cur;
	else
		memset(ci, 0, sizeof(*ci));
}

uint64_t gtt_reader_offset(const gtt_reader *r) { return r ? r->last_off : 0; }
int gtt_reader_truncated(const gtt_reader *r) { return r ? r->truncated : 0; }
uint64_t gtt_reader_size(const gtt_reader *r) { return r ? r->len : 0; }
int gtt_reader_errno(const gtt_reader *r) { return r ? r->err_errno : 0; }

void gtt_reader_version(const gtt_reader *r, uint32_t *major, uint32_t *minor)
{
	if (major)
		*major = r ? r->major : 0;
	if (minor)
		*minor = r ? r->minor : 0;
}

void gtt_reader_only(gtt_reader *r, uint64_t tag_mask)
{
	if (r)
		r->only = tag_mask;
}

void gtt_reader_summarize(gtt_reader *r, uint32_t stream_mask)
{
	if (!r)
		return;
	r->summarize = stream_mask;
	memset(&r->summary, 0, sizeof(r->summary));
	r->summary.first_ns = UINT64_MAX;
}

void gtt_reader_summary(const gtt_reader *r, gtt_summary *s)
{
	if (r)
		*s = r->summary;
	else
		memset(s, 0, sizeof(*s));
}

int gtt_reader_chunk_at(const gtt_reader *r, uint64_t off, gtt_chunk_info *ci)
{
	memset(ci, 0, sizeof(*ci));
	if (!r || off < GTT_HEADER_LEN || off > r->len || r->len - off < GTT_CHUNK_HEADER_LEN)
		return 0;
	const uint8_t *h = r->data + off, *p = h + GTT_CHUNK_HEADER_LEN;
	uint32_t n = rd32(h + 4);
	if (n > GTT_MAX_PAYLOAD || n > r->len - off - GTT_CHUNK_HEADER_LEN ||
	    gtt_crc32c(gtt_crc32c(0, h, 8), p, n) != rd32(h + 8))
		return 0;
	if (rd32(h) == GTT_REC_PACKED && gtt_unpack_header(p, n, ci) == 0) {
		ci->offset = off;
		return 1;
	}
	memset(ci, 0, sizeof(*ci));
	ci->offset = off;
	ci->tag = rd32(h);
	ci->stored_len = ci->raw_len = n;
	ci->n_records = 1;
	ci->first_ns = UINT64_MAX;
	return 1;
}

void gtt_reader_rewind(gtt_reader *r)
{
	if (!r)
		return;
	r->off = r->len >= GTT_HEADER_LEN ? GTT_HEADER_LEN : r->len;
	r->crc_at = GTT_HEADER_LEN;
	r->stopped = 0;
	r->truncated = r->len < GTT_HEADER_LEN;
	r->blk_active = 0;
	r->seeked_plain = 0;
}

void gtt_reader_skip_stacks(gtt_reader *r, int on)
{
	if (r)
		r->skip_stacks = on != 0;
}

void gtt_reader_prefetch(gtt_reader *r)
{
	if (r)
		r->want_prefetch = 1;
}

uint64_t gtt_reader_expanded(const gtt_reader *r)
{
	return r ? r->n_expanded : 0;
}

void gtt_reader_close(gtt_reader *r)
{
	if (!r)
		return;
	gtt_prefetch_free(r->pf); /* first: its worker may be reading the trace */
	if (r->mapped)
		munmap((void *)r->data, r->len);
	else if (r->owned)
		free((void *)r->data);
	free(r->scratch);
	free(r->blk_x.p);
	free(r->side_x.p);
	gtt_zstd_dctx_free(r->dctx);
	gtt_chaintab_free(&r->chains);
	free(r->idx);
	free(r);
}
