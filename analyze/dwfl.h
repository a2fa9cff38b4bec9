/* dwfl.h — symbolization and offline DWARF unwinding of samples with libdw/libdwfl: the only
 * part of gt-analyze that talks to elfutils. One Dwfl per address space (pid) for unwinding;
 * names and lines from a Dwfl per binary, one binary's DWARF open at a time when the samples
 * are collected first (ana_sym_collect, ana_sym_prepare); results cached by (binary, address).
 * A binary is looked for in this order (dwfl_files.c, ana_symf_resolve): the trace's embedded
 * archive, --symfs (DIR/PATH, then DIR/BASENAME), the original path, then the separate debug
 * file under --symfs's and the system's /usr/lib/debug/.build-id; a file is used only when its
 * build-id matches (and only when it is a regular file).
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_DWFL_H
#define ANA_DWFL_H

#include <stddef.h>
#include <stdint.h>
#include "gtt.h"
#include "model.h"

typedef struct ana_sym ana_sym;

typedef struct ana_sym_opts {
	const char *symfs;      /* --symfs DIR or NULL */
	int no_archive;         /* ignore embedded binaries */
	int kernel;             /* keep kernel frames */
} ana_sym_opts;

/* Symbolizer over the model's mappings and processes (read them before creating it: the
 * model must hold every mapping record). Frames are interned into m. NULL on ENOMEM. */
ana_sym *ana_sym_create(ana_model *m, const ana_sym_opts *o);
/* Hand over an embedded binary assembled from archive pieces (data malloc'd, owned by the
 * symbolizer from now on, also on failure). Call before the first ana_sym_sample. 0 or <0. */
int ana_sym_add_archive(ana_sym *s, const uint8_t *build_id, uint32_t build_id_len,
                        const char *path, uint8_t *data, size_t len);
/* How a sample's stack ended (ana_sym_sample). */
typedef struct ana_unwind_info {
	uint8_t unwind;        /* enum ana_unwind */
	uint8_t pending;       /* completed from the frame-pointer callchain up to a thread entry whose
	                          callers no complete stack of the image has shown yet: the same sample
	                          unwound again after the others may reach further */
} ana_unwind_info;
/* Native stack of one sample as frame ids, root first, into frames[0..cap). Unwinds the
 * regs+stack copy when the sample carries one (continued with its frame-pointer callchain
 * where the copy ran out and the two agree), else uses its callchain. Returns the number of
 * frames (0 when nothing is known) or <0 on ENOMEM; *ui says how the user stack ended. */
int ana_sym_sample(ana_sym *s, const gtt_sample *smp, uint32_t *frames, uint32_t cap, ana_unwind_info *ui);
/* Symbolizing by binary, so that the DWARF of one binary at a time is in memory (libdw
 * inflates a debug file's compressed sections and keeps them while its Dwfl lives): unwind a
 * sample and note its user addresses for ana_sym_prepare. With unwind_id, the unwind is kept
 * (distinct unwinds once, up to a budget) and *unwind_id names it (> 0; 0 when the budget is
 * spent): ana_sym_sample_unwound(id) then gives what ana_sym_sample(smp) would, without the
 * sample. 0 or GTT_ENOMEM. */
int ana_sym_collect(ana_sym *s, const gtt_sample *smp, uint32_t *unwind_id);
/* Symbolize the addresses noted since the last call, binary by binary, each binary's DWARF
 * released before the next is opened. An address never noted is symbolized when asked, with
 * its binary's DWARF held until the next call. 0 or GTT_ENOMEM. */
int ana_sym_prepare(ana_sym *s);
/* ana_sym_sample of the sample ana_sym_collect kept as unwind_id; GTT_EINVAL for an id it did
 * not give. */
int ana_sym_sample_unwound(ana_sym *s, uint32_t unwind_id, uint32_t *frames, uint32_t cap, ana_unwind_info *ui);
/* The address space (process image) a sample of pid at time_ns is symbolized in, as a number
 * > 0: equal numbers give equal ana_sym_sample results for equal callchains without registers.
 * Creates the space on first use; 0 on ENOMEM. */
uint32_t ana_sym_space_id(ana_sym *s, uint32_t pid, uint64_t time_ns);
/* Counters for the report and warnings. */
typedef struct ana_sym_stats {
	uint64_t n_files;          /* distinct binaries that samples hit */
	uint64_t n_from_archive, n_from_symfs, n_from_debugdir, n_from_path, n_missing;
	uint64_t n_mismatch;       /* binaries found on disk whose build-id did not match */
	uint64_t n_dwarf;          /* samples unwound from a stack copy */
	uint64_t n_dwarf_errors;   /* of those, unwinds that stopped before a root */
	uint64_t n_addr_cached;    /* distinct (binary, address) pairs symbolized */
	uint64_t n_addr_late;      /* of those, symbolized when asked, not noted ahead (ana_sym_collect):
	                              their binary's DWARF is held until the next ana_sym_prepare */
	uint64_t n_overlaps;       /* mappings over an earlier one of another file (the earlier is used) */
} ana_sym_stats;
void ana_sym_get_stats(const ana_sym *s, ana_sym_stats *st);
/* One line per binary that could not be symbolized ("path (build-id ...): reason"), for
 * warnings; returns the count and sets *lines (owned by s). */
size_t ana_sym_missing(const ana_sym *s, const char *const **lines);
/* Free everything. NULL ok. */
void ana_sym_destroy(ana_sym *s);

#endif
