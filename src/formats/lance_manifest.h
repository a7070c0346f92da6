/*
 * formats/lance_manifest.h - Lance manifest files, read and cloned.
 *
 * A manifest file ends in a 16-byte footer (i64 LE position of the
 * manifest, i16 major, i16 minor, "LANC"); at the position a u32 LE length
 * prefixes the lance.table.Manifest protobuf, which must end where the
 * footer starts.  Before it may sit a u32-prefixed IndexSection (Manifest
 * field 6 gives its offset, 0 included) and an inline Transaction (21).
 *
 * The reader decodes what tether needs (version, timestamp, branch, flags,
 * fragments with their data and deletion files, the flattened schema) and
 * tolerates any field it does not know.  tt_lance_manifest_branch writes
 * the first manifest of a branch the way Lance's shallow clone does, copying
 * every field it does not rewrite byte for byte.
 */
#ifndef TT_FORMATS_LANCE_MANIFEST_H
#define TT_FORMATS_LANCE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Feature flags this reader understands (reader and writer bits). */
#define TT_LANCE_FLAG_DELETION_FILES 1u
#define TT_LANCE_FLAG_STABLE_ROW_IDS 2u
#define TT_LANCE_FLAG_V2_FORMAT 4u
#define TT_LANCE_FLAG_TABLE_CONFIG 8u
#define TT_LANCE_FLAG_BASE_PATHS 16u
#define TT_LANCE_FLAG_NO_TXN_FILE 32u
#define TT_LANCE_KNOWN_FLAGS 63u

typedef struct tt_lance_fragment {
	uint64_t id;
	uint64_t physical_rows;
	size_t nfiles;
	uint64_t files_size;     /* sum of file_size_bytes (0: unknown) */
	char *files;             /* data file paths, "\n"-joined, in order */
	bool has_deletion;
	uint64_t del_read_version, del_id, del_rows;
} tt_lance_fragment;

typedef struct tt_lance_field {
	int32_t id, parent;      /* parent -1: a top-level column */
	char *name;
	char *type;              /* logical_type */
} tt_lance_field;

typedef struct tt_lance_manifest {
	uint64_t version;
	bool has_timestamp;
	int64_t ts_seconds;
	int32_t ts_nanos;
	char *branch;            /* NULL: main */
	uint64_t reader_flags, writer_flags;
	char *transaction_file;  /* NULL when empty */
	tt_lance_fragment *frags;
	size_t nfrags;
	tt_lance_field *fields;
	size_t nfields;
	uint16_t major, minor;   /* footer */
} tt_lance_manifest;

/* Parse a whole manifest file.  0, or -1 with why filled (what is wrong and
 * where) - the caller names the dataset and the file. */
int tt_lance_manifest_parse(tt_lance_manifest *m, const void *file, size_t len, char *why,
			    size_t whylen);
void tt_lance_manifest_release(tt_lance_manifest *m);

/* Manifest::summary(): total_fragments, total_data_files, ... */
typedef struct tt_lance_summary {
	uint64_t data_file_rows, data_files, deletion_file_rows, deletion_files, files_size,
		fragments, rows;
} tt_lance_summary;
void tt_lance_manifest_summary(const tt_lance_manifest *m, tt_lance_summary *s);

/*
 * The first manifest of branch `branch` cloned from the manifest file
 * `file` (which lives in the dataset root `source_uri`, on branch
 * `source_branch`, NULL for main): branch (20) set, a base path appended
 * for the source root and every data file, deletion file and index
 * without a base given its id, feature flags gain BASE_PATHS, timestamp
 * now, the legacy tag, transaction file and inline transaction dropped.
 * Every other field is copied byte for byte.  0, or -1 with why filled.
 */
int tt_lance_manifest_branch(tt_buf *out, const void *file, size_t len, const char *branch,
			     const char *source_branch, const char *source_uri, int64_t now_seconds,
			     int32_t now_nanos, char *why, size_t whylen);

/* Manifest file names: V1 "{v}.manifest", V2 "{u64max - v:020}.manifest".
 * 1 with *version and *v2 set, 0 when name is not an attached manifest
 * (temporaries, staging copies, detached "d..." versions, hints). */
int tt_lance_manifest_name(const char *name, uint64_t *version, bool *v2);

#endif
