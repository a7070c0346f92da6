/*
 * db/duck_api.h - libduckdb (DuckDB's C library), loaded on first use (see
 * util/dynlib.h): the one loader and symbol table behind the DuckLake
 * backend's DuckDB-file catalogs (backends/ducklake/ducklake_duck.c) and
 * `tether query`'s session (db/duck_session.c).
 *
 * The library is $TETHER_LIBDUCKDB, else the one the build found (CMake's
 * TETHER_LIBDUCKDB_DIR, filled by scripts/setup.sh) when it is still there,
 * else libduckdb.so on the loader's path.  duckdb.h is optional at build
 * time: without it (TT_HAVE_DUCKDB_H undefined) only tt_duck_load and
 * tt_duck_library_version exist, and the load fails saying how to build
 * with it.  With it, include this instead of <duckdb.h>: the DuckDB names
 * below then call through the loaded table.  A function not listed in
 * TT_DUCK_SYMS is not available.
 */
#ifndef TT_DB_DUCK_API_H
#define TT_DB_DUCK_API_H

#include "util/error.h"

/* Load libduckdb once: 0, or TT_ECAPABILITY saying what is missing and how
 * to install it (callers add what they needed it for). */
int tt_duck_load(tt_error *err);
/* The loaded library's version ("v1.5.5"), loading it if need be; NULL when
 * it cannot be loaded. */
const char *tt_duck_library_version(void);

#ifdef TT_HAVE_DUCKDB_H
/* DuckDB's header declares a few f() without void */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <duckdb.h>
#pragma GCC diagnostic pop

#include "util/dynlib.h"

#define TT_DUCK_SYMS(X)                                                                             \
	X(duckdb_create_config) X(duckdb_set_config) X(duckdb_destroy_config) X(duckdb_open_ext)    \
	X(duckdb_close) X(duckdb_connect) X(duckdb_disconnect) X(duckdb_interrupt) X(duckdb_query)  \
	X(duckdb_free) X(duckdb_library_version)                                                    \
	/* statements */                                                                            \
	X(duckdb_extract_statements) X(duckdb_extract_statements_error)                             \
	X(duckdb_prepare_extracted_statement) X(duckdb_destroy_extracted) X(duckdb_prepare)          \
	X(duckdb_prepare_error) X(duckdb_destroy_prepare) X(duckdb_bind_int64) X(duckdb_bind_varchar) \
	X(duckdb_bind_null) X(duckdb_prepared_statement_type) X(duckdb_prepared_statement_column_count) \
	X(duckdb_prepared_statement_column_name) X(duckdb_execute_prepared)                          \
	X(duckdb_execute_prepared_streaming)                                                        \
	/* results: whole, and chunk by chunk */                                                    \
	X(duckdb_result_error) X(duckdb_destroy_result) X(duckdb_column_count) X(duckdb_column_name) \
	X(duckdb_row_count) X(duckdb_value_is_null) X(duckdb_value_varchar) X(duckdb_fetch_chunk)    \
	X(duckdb_data_chunk_get_size) X(duckdb_data_chunk_get_vector) X(duckdb_vector_get_data)      \
	X(duckdb_vector_get_validity) X(duckdb_destroy_data_chunk)

typedef struct tt_duck_api {
	TT_DUCK_SYMS(TT_DYN_FIELD)
} tt_duck_api;
extern tt_duck_api tt_duckdb;

#ifndef TT_DB_DUCK_API_IMPL
#define duckdb_create_config (*tt_duckdb.duckdb_create_config)
#define duckdb_set_config (*tt_duckdb.duckdb_set_config)
#define duckdb_destroy_config (*tt_duckdb.duckdb_destroy_config)
#define duckdb_open_ext (*tt_duckdb.duckdb_open_ext)
#define duckdb_close (*tt_duckdb.duckdb_close)
#define duckdb_connect (*tt_duckdb.duckdb_connect)
#define duckdb_disconnect (*tt_duckdb.duckdb_disconnect)
#define duckdb_interrupt (*tt_duckdb.duckdb_interrupt)
#define duckdb_query (*tt_duckdb.duckdb_query)
#define duckdb_free (*tt_duckdb.duckdb_free)
#define duckdb_library_version (*tt_duckdb.duckdb_library_version)
#define duckdb_extract_statements (*tt_duckdb.duckdb_extract_statements)
#define duckdb_extract_statements_error (*tt_duckdb.duckdb_extract_statements_error)
#define duckdb_prepare_extracted_statement (*tt_duckdb.duckdb_prepare_extracted_statement)
#define duckdb_destroy_extracted (*tt_duckdb.duckdb_destroy_extracted)
#define duckdb_prepare (*tt_duckdb.duckdb_prepare)
#define duckdb_prepare_error (*tt_duckdb.duckdb_prepare_error)
#define duckdb_destroy_prepare (*tt_duckdb.duckdb_destroy_prepare)
#define duckdb_bind_int64 (*tt_duckdb.duckdb_bind_int64)
#define duckdb_bind_varchar (*tt_duckdb.duckdb_bind_varchar)
#define duckdb_bind_null (*tt_duckdb.duckdb_bind_null)
#define duckdb_prepared_statement_type (*tt_duckdb.duckdb_prepared_statement_type)
#define duckdb_prepared_statement_column_count (*tt_duckdb.duckdb_prepared_statement_column_count)
#define duckdb_prepared_statement_column_name (*tt_duckdb.duckdb_prepared_statement_column_name)
#define duckdb_execute_prepared (*tt_duckdb.duckdb_execute_prepared)
#define duckdb_execute_prepared_streaming (*tt_duckdb.duckdb_execute_prepared_streaming)
#define duckdb_result_error (*tt_duckdb.duckdb_result_error)
#define duckdb_destroy_result (*tt_duckdb.duckdb_destroy_result)
#define duckdb_column_count (*tt_duckdb.duckdb_column_count)
#define duckdb_column_name (*tt_duckdb.duckdb_column_name)
#define duckdb_row_count (*tt_duckdb.duckdb_row_count)
#define duckdb_value_is_null (*tt_duckdb.duckdb_value_is_null)
#define duckdb_value_varchar (*tt_duckdb.duckdb_value_varchar)
#define duckdb_fetch_chunk (*tt_duckdb.duckdb_fetch_chunk)
#define duckdb_data_chunk_get_size (*tt_duckdb.duckdb_data_chunk_get_size)
#define duckdb_data_chunk_get_vector (*tt_duckdb.duckdb_data_chunk_get_vector)
#define duckdb_vector_get_data (*tt_duckdb.duckdb_vector_get_data)
#define duckdb_vector_get_validity (*tt_duckdb.duckdb_vector_get_validity)
#define duckdb_destroy_data_chunk (*tt_duckdb.duckdb_destroy_data_chunk)
#endif
#endif /* TT_HAVE_DUCKDB_H */

#endif
