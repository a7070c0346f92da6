/*
 * db/mysql_api.h - libmariadb (MariaDB Connector/C), loaded on first use
 * (see util/dynlib.h).  Include this instead of <mysql.h>: the names below
 * then call through the loaded table.  tt_db_mysql_open() loads it; a
 * function not listed in TT_MYSQL_SYMS is not available.
 */
#ifndef TT_DB_MYSQL_API_H
#define TT_DB_MYSQL_API_H

#include <mysql.h>

#include "util/dynlib.h"

#define TT_MYSQL_SYMS(X) \
	X(mysql_init) X(mysql_optionsv) X(mysql_real_connect) X(mysql_close) X(mysql_errno) \
	X(mysql_error) X(mysql_real_query) X(mysql_use_result) X(mysql_field_count) \
	X(mysql_num_fields) X(mysql_fetch_fields) X(mysql_fetch_row) X(mysql_fetch_lengths) \
	X(mysql_free_result) X(mysql_stmt_init) X(mysql_stmt_prepare) \
	X(mysql_stmt_param_count) X(mysql_stmt_bind_param) X(mysql_stmt_execute) \
	X(mysql_stmt_result_metadata) X(mysql_stmt_bind_result) X(mysql_stmt_fetch) \
	X(mysql_stmt_fetch_column) X(mysql_stmt_errno) X(mysql_stmt_error) \
	X(mysql_stmt_close)

typedef struct tt_mysql_api {
	TT_MYSQL_SYMS(TT_DYN_FIELD)
} tt_mysql_api;
extern tt_mysql_api tt_mysql;

/* Load the library once: 0, or TT_ECAPABILITY naming it and the package. */
int tt_mysql_load(tt_error *err);

#ifndef TT_DB_MYSQL_API_IMPL
#define mysql_init (*tt_mysql.mysql_init)
#define mysql_optionsv (*tt_mysql.mysql_optionsv)
#define mysql_real_connect (*tt_mysql.mysql_real_connect)
#define mysql_close (*tt_mysql.mysql_close)
#define mysql_errno (*tt_mysql.mysql_errno)
#define mysql_error (*tt_mysql.mysql_error)
#define mysql_real_query (*tt_mysql.mysql_real_query)
#define mysql_use_result (*tt_mysql.mysql_use_result)
#define mysql_field_count (*tt_mysql.mysql_field_count)
#define mysql_num_fields (*tt_mysql.mysql_num_fields)
#define mysql_fetch_fields (*tt_mysql.mysql_fetch_fields)
#define mysql_fetch_row (*tt_mysql.mysql_fetch_row)
#define mysql_fetch_lengths (*tt_mysql.mysql_fetch_lengths)
#define mysql_free_result (*tt_mysql.mysql_free_result)
#define mysql_stmt_init (*tt_mysql.mysql_stmt_init)
#define mysql_stmt_prepare (*tt_mysql.mysql_stmt_prepare)
#define mysql_stmt_param_count (*tt_mysql.mysql_stmt_param_count)
#define mysql_stmt_bind_param (*tt_mysql.mysql_stmt_bind_param)
#define mysql_stmt_execute (*tt_mysql.mysql_stmt_execute)
#define mysql_stmt_result_metadata (*tt_mysql.mysql_stmt_result_metadata)
#define mysql_stmt_bind_result (*tt_mysql.mysql_stmt_bind_result)
#define mysql_stmt_fetch (*tt_mysql.mysql_stmt_fetch)
#define mysql_stmt_fetch_column (*tt_mysql.mysql_stmt_fetch_column)
#define mysql_stmt_errno (*tt_mysql.mysql_stmt_errno)
#define mysql_stmt_error (*tt_mysql.mysql_stmt_error)
#define mysql_stmt_close (*tt_mysql.mysql_stmt_close)
#endif

#endif
