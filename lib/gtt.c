/* gtt.c — the .gtt trace format: chunk framing, CRC-32C, a buffered thread-safe writer and a
 * zero-copy reader that survives cut-off files. Record payloads are in gtt_codec.c. */
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

struct gtt_writer {
	int fd;
	pthread_mutex_t lock;
	enc out;            /* whole chunks waiting to be written */
	uint64_t written_bytes;
	uint64_t n_records;
	int err;            /* first error, sticky */
	int err_errno;
};

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

gtt_writer *gtt_writer_fdopen(int fd, int append, int *err)
{
	int rc = GTT_OK;
	gtt_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		rc = GTT_ENOMEM;
		goto fail;
	}
	w->fd = fd;
	pthread_mutex_init(&w->lock, NULL);
	if (!append) {
		uint8_t h[GTT_HEADER_LEN];
		memcpy(h, GTT_MAGIC, GTT_MAGIC_LEN);
		h[8] = GTT_VERSION_MAJOR & 0xff; h[9] = GTT_VERSION_MAJOR >> 8;
		h[10] = GTT_VERSION_MINOR & 0xff; h[11] = GTT_VERSION_MINOR >> 8;
		le32(h + 12, 0); /* flags, reserved */
		rc = write_all(fd, h, sizeof(h), &w->err_errno);
		if (rc) {
			errno = w->err_errno;
			goto fail;
		}
		w->written_bytes = sizeof(h);
	}
	if (err)
		*err = 0;
	return w;
fail:
	if (w) {
		pthread_mutex_destroy(&w->lock);
		free(w);
	}
	if (err)
		*err = rc;
	return NULL;
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

/* Append one framed chunk to out; caller holds the lock. */
static int append_chunk(gtt_writer *w, uint32_t tag, const uint8_t *payload, uint32_t len)
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
	memcpy(w->out.p + w->out.n, hdr, sizeof(hdr));
	if (len)
		memcpy(w->out.p + w->out.n + sizeof(hdr), payload, len);
	w->out.n += sizeof(hdr) + (size_t)len;
	w->n_records++;
	if (w->out.n >= WRITER_FLUSH_BYTES)
		return flush_locked(w);
	return 0;
}

int gtt_write_raw(gtt_writer *w, uint32_t tag, const void *payload, uint32_t len)
{
	if (!w)
		return GTT_EINVAL;
	pthread_mutex_lock(&w->lock);
	int rc = w->err ? w->err : append_chunk(w, tag, payload, len);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int gtt_write(gtt_writer *w, const gtt_record *rec)
{
	if (!w || !rec)
		return GTT_EINVAL;
	pthread_mutex_lock(&w->lock);
	int rc = w->err;
	if (rc)
		goto out;
	/* Encode straight behind a reserved chunk header, then fill the header in:
	 * one pass over the bytes, no copy (this is the CUDA agent's per-record path). */
	size_t at = w->out.n;
	if (enc_reserve(&w->out, GTT_CHUNK_HEADER_LEN + 256) != 0) {
		rc = w->out.err;
		goto out;
	}
	w->out.n += GTT_CHUNK_HEADER_LEN;
	rc = gtt_encode(&w->out, rec);
	size_t len = w->out.n - at - GTT_CHUNK_HEADER_LEN;
	if (!rc && len > GTT_MAX_PAYLOAD)
		rc = GTT_EINVAL;
	if (rc) {
		w->out.n = at; /* drop the partial record */
		if (rc != GTT_ENOMEM)
			w->out.err = 0;
		goto out;
	}
	uint8_t *h = w->out.p + at;
	le32(h, rec->tag);
	le32(h + 4, (uint32_t)len);
	le32(h + 8, gtt_crc32c(gtt_crc32c(0, h, 8), h + GTT_CHUNK_HEADER_LEN, len));
	w->n_records++;
	if (w->out.n >= WRITER_FLUSH_BYTES)
		rc = flush_locked(w);
out:
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int gtt_writer_flush(gtt_writer *w)
{
	if (!w)
		return GTT_EINVAL;
	pthread_mutex_lock(&w->lock);
	int rc = flush_locked(w);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

uint64_t gtt_writer_bytes(const gtt_writer *w)
{
	return w ? w->written_bytes + w->out.n : 0;
}

uint64_t gtt_writer_records(const gtt_writer *w)
{
	return w ? w->n_records : 0;
}

int gtt_writer_errno(const gtt_writer *w)
{
	return w ? w->err_errno : 0;
}

int gtt_writer_close(gtt_writer *w)
{
	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	int rc = flush_locked(w);
	pthread_mutex_unlock(&w->lock);
	if (close(w->fd) != 0 && !rc) {
		w->err_errno = errno;
		rc = GTT_EIO;
	}
	if (!rc)
		rc = w->err;
	free(w->out.p);
	pthread_mutex_destroy(&w->lock);
	free(w);
	return rc;
}

/* ---- reader ---- */

struct gtt_reader {
	const uint8_t *data;
	size_t len;
	int mapped;         /* data is an mmap of len bytes */
	int owned;          /* data was malloc'ed */
	size_t off;         /* next chunk */
	size_t last_off;    /* chunk last returned */
	int truncated;
	int stopped;        /* an unrecoverable error ended reading */
	uint32_t major, minor;
	void *scratch;
	size_t scratch_cap;
	int err_errno;
};

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
	return 0;
}

static gtt_reader *reader_finish(gtt_reader *r, int *err)
{
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

int gtt_reader_next(gtt_reader *r, gtt_record *rec)
{
	if (!r || !rec)
		return GTT_EINVAL;
	if (r->stopped || r->off >= r->len)
		return 0;
	size_t left = r->len - r->off;
	r->last_off = r->off;
	if (left < GTT_CHUNK_HEADER_LEN) {
		r->truncated = 1;
		r->off = r->len;
		return 0;
	}
	const uint8_t *h = r->data + r->off;
	uint32_t tag = rd32(h), len = rd32(h + 4), crc = rd32(h + 8);
	if (len > GTT_MAX_PAYLOAD) {
		r->stopped = 1; /* no way to find the next chunk */
		return GTT_ECORRUPT;
	}
	if ((size_t)len > left - GTT_CHUNK_HEADER_LEN) {
		r->truncated = 1;
		r->off = r->len;
		return 0;
	}
	const uint8_t *payload = h + GTT_CHUNK_HEADER_LEN;
	r->off += GTT_CHUNK_HEADER_LEN + (size_t)len;
	if (gtt_crc32c(gtt_crc32c(0, h, 8), payload, len) != crc)
		return GTT_ECORRUPT;
	int rc = gtt_decode(tag, payload, len, rec, &r->scratch, &r->scratch_cap);
	return rc < 0 ? rc : 1;
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

void gtt_reader_rewind(gtt_reader *r)
{
	if (!r)
		return;
	r->off = r->len >= GTT_HEADER_LEN ? GTT_HEADER_LEN : r->len;
	r->stopped = 0;
	r->truncated = r->len < GTT_HEADER_LEN;
}

void gtt_reader_close(gtt_reader *r)
{
	if (!r)
		return;
	if (r->mapped)
		munmap((void *)r->data, r->len);
	else if (r->owned)
		free((void *)r->data);
	free(r->scratch);
	free(r);
}
