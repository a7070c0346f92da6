/*
 * formats/parquet.h - one string column of a Parquet file, read.
 *
 * Delta checkpoints are Parquet files, and the data files a version needs
 * are the `add.path` values of its checkpoint.  This reader decodes just
 * that: a BYTE_ARRAY leaf column outside any repeated field, from the
 * footer (Thrift compact) through its pages (v1 and v2 data pages, a
 * dictionary page), definition levels (RLE/bit-packed hybrid, or the old
 * BIT_PACKED encoding), values in PLAIN or dictionary encoding, pages
 * stored UNCOMPRESSED or compressed with SNAPPY, GZIP or ZSTD.
 *
 * Input is untrusted.  Every offset, length and count is checked against
 * the file, a page larger than TT_PARQUET_PAGE_MAX is refused, a read
 * that would hand out more values, or bytes of them, than its size can
 * hold (TT_PARQUET_VALUES_PER_BYTE, TT_PARQUET_BYTES_PER_BYTE) is
 * TT_ELIMIT, and a
 * malformed file is TT_EPARSE naming it; a codec or encoding outside the
 * list above is TT_ECAPABILITY naming it.
 */
#ifndef TT_FORMATS_PARQUET_H
#define TT_FORMATS_PARQUET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define TT_PARQUET_PAGE_MAX ((size_t)256 << 20)
/* What one read hands to its callback at most (TT_ELIMIT past it), per
 * byte of the file: repeated runs of dictionary indices make any number of
 * values from a few bytes, where real files (a Delta checkpoint's rows
 * each hold a unique path) take more than a byte per row and compress
 * their strings far less than 64 times.  Small files get the floors. */
#define TT_PARQUET_VALUES_PER_BYTE 8u
#define TT_PARQUET_VALUES_FLOOR ((uint64_t)1 << 20)
#define TT_PARQUET_BYTES_PER_BYTE 64u
#define TT_PARQUET_BYTES_FLOOR ((uint64_t)1 << 24)

/* One value of the column, in row `row` of the file (counting from 0
 * across row groups).  s is not NUL-terminated and points into a buffer
 * that lives until the callback returns.  Non-zero stops the read. */
typedef int (*tt_parquet_string_fn)(void *ctx, int64_t row, const unsigned char *s, size_t n,
				    tt_error *err);

/*
 * Call fn for every non-null value of the column whose field names from
 * the root are path[0..depth) (for instance "add", "path"), in a whole
 * Parquet file, row group by row group in row order.  *found says whether
 * the file has the column at all (fn is never called when it has not).
 * what names the file in errors.
 */
int tt_parquet_strings(const unsigned char *data, size_t len, const char *what,
		       const char *const *path, size_t depth, tt_parquet_string_fn fn, void *ctx,
		       bool *found, tt_error *err);

/* --- writing ---------------------------------------------------------------
 *
 * A small writer for flat tables: every column OPTIONAL, one row group
 * (none for an empty table), one v1 data page per column, PLAIN values,
 * RLE definition levels, UNCOMPRESSED.  Column types: UTF-8 strings
 * (BYTE_ARRAY, logical type STRING), 64-bit integers and booleans - what
 * pyarrow, DuckDB and this reader all read.
 */
typedef enum tt_parquet_type { TT_PARQUET_STRING, TT_PARQUET_INT64, TT_PARQUET_BOOL } tt_parquet_type;

typedef struct tt_parquet_column {
	const char *name;
	tt_parquet_type type;
} tt_parquet_column;

/* One cell: null, or s (n bytes) for a string, i for an integer or a
 * boolean (non-zero true). */
typedef struct tt_parquet_cell {
	bool null;
	const char *s;
	size_t n;
	int64_t i;
} tt_parquet_cell;

struct tt_buf;
/* Append a whole Parquet file of nrows rows (cells row-major, ncols per
 * row) to out.  created_by names the writer in the footer. */
int tt_parquet_write(struct tt_buf *out, const tt_parquet_column *cols, size_t ncols,
		     const tt_parquet_cell *cells, size_t nrows, const char *created_by, tt_error *err);

#endif
