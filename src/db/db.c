/* db/db.c - the dialect-neutral half of the connection interface (db.h);
 * opening one, which knows every driver, is db/open.c. */
#include <ctype.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "db/db.h"
#include "util/buf.h"
#include "util/mem.h"

bool tt_db_is_postgres(const char *target)
{
	return target && (strncmp(target, "postgresql://", 13) == 0 || strncmp(target, "postgres://", 11) == 0);
}

bool tt_db_is_mysql(const char *target)
{
	return target && (strncmp(target, "mysql://", 8) == 0 || strncmp(target, "mariadb://", 10) == 0);
}

bool tt_db_identifier_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 63 || isdigit((unsigned char)name[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)name[i]) || name[i] == '_') || (unsigned char)name[i] >= 0x80)
			return false;
	return true;
}

int tt_db_fail(tt_db *db, tt_error *err, int code, const char *message)
{
	tt_buf b = TT_BUF_INIT;
	const char *m = message && *message ? message : "unknown error";
	size_t sl = db->secret ? strlen(db->secret) : 0;
	tt_buf_printf(&b, "%s: ", db->where ? db->where : "database");
	while (*m) {
		if (sl && strncmp(m, db->secret, sl) == 0) {
			tt_buf_puts(&b, "***");
			m += sl;
		} else {
			tt_buf_putc(&b, *m++);
		}
	}
	while (b.len && (b.ptr[b.len - 1] == '\n' || b.ptr[b.len - 1] == ' '))
		b.len--;
	if (b.failed) {
		tt_buf_release(&b);
		return tt_error_oom(err);
	}
	tt_buf_putc(&b, '\0');
	int rc = tt_error_set(err, code, "%s", b.ptr);
	tt_buf_release(&b);
	return rc;
}

void tt_db_close(tt_db *db)
{
	if (!db)
		return;
	if (db->in_tx)
		tt_db_rollback(db);
	if (db->ops && db->ops->close)
		db->ops->close(db);
	free(db->where);
	if (db->secret) {
		memset(db->secret, 0, strlen(db->secret));
		free(db->secret);
	}
	free(db);
}

const char *tt_db_kind(const tt_db *db)
{
	return db->ops->kind;
}

const char *tt_db_where(const tt_db *db)
{
	return db->where;
}

int tt_db_begin(tt_db *db, bool read_only, tt_error *err)
{
	bool pg = strcmp(db->ops->kind, "postgres") == 0, my = strcmp(db->ops->kind, "mysql") == 0;
	const char *sql = my ? (read_only ? "START TRANSACTION READ ONLY" : "START TRANSACTION")
			     : (read_only && pg ? "BEGIN READ ONLY" : "BEGIN");
	int rc = db->ops->exec(db, sql, NULL, 0, NULL, err);
	if (rc == 0)
		db->in_tx = true;
	return rc;
}

int tt_db_commit(tt_db *db, tt_error *err)
{
	int rc = db->ops->exec(db, "COMMIT", NULL, 0, NULL, err);
	if (rc < 0)
		tt_db_rollback(db);
	db->in_tx = false;
	return rc;
}

void tt_db_rollback(tt_db *db)
{
	tt_error ignored = TT_ERROR_INIT;
	if (db->in_tx)
		db->ops->exec(db, "ROLLBACK", NULL, 0, NULL, &ignored);
	db->in_tx = false;
	tt_error_clear(&ignored);
}

int tt_db_exec(tt_db *db, const char *sql, const tt_db_value *params, size_t n, tt_error *err)
{
	return db->ops->exec(db, sql, params, n, NULL, err);
}

int tt_db_query(tt_db *db, const char *sql, const tt_db_value *params, size_t n, tt_db_rows *out,
		tt_error *err)
{
	memset(out, 0, sizeof *out);
	return db->ops->exec(db, sql, params, n, out, err);
}

int tt_db_exec_many(tt_db *db, const char *sql, const tt_db_value *params, size_t ncols, size_t nrows,
		    tt_error *err)
{
	return nrows ? db->ops->exec_many(db, sql, params, ncols, nrows, err) : 0;
}

void tt_db_rows_release(tt_db_rows *rows)
{
	if (!rows)
		return;
	for (size_t i = 0; i < rows->ncols; i++)
		free(rows->names ? rows->names[i] : NULL);
	for (size_t i = 0; rows->cells && i < rows->nrows * rows->ncols; i++)
		free(rows->cells[i]);
	free(rows->names);
	free(rows->cells);
	memset(rows, 0, sizeof *rows);
}

int tt_db_rows_push(tt_db *db, tt_db_rows *out, char **cells, size_t *bytes, size_t *alloc,
		    tt_error *err)
{
	size_t add = 0;
	for (size_t i = 0; i < out->ncols; i++)
		add += cells[i] ? strlen(cells[i]) + 1 : 1;
	if (out->nrows + 1 > db->opts.max_rows || *bytes + add > db->opts.max_bytes) {
		for (size_t i = 0; i < out->ncols; i++)
			free(cells[i]);
		char msg[160];
		snprintf(msg, sizeof msg, "the result is larger than the cap (%zu rows, %zu bytes); "
			 "narrow the query", db->opts.max_rows, db->opts.max_bytes);
		return tt_db_fail(db, err, TT_ELIMIT, msg);
	}
	if ((out->nrows + 1) * out->ncols > *alloc) {
		size_t want = *alloc ? *alloc * 2 : 64 * (out->ncols ? out->ncols : 1);
		while (want < (out->nrows + 1) * out->ncols)
			want *= 2;
		char **grown = realloc(out->cells, want * sizeof *grown);
		if (!grown) {
			for (size_t i = 0; i < out->ncols; i++)
				free(cells[i]);
			return tt_error_oom(err);
		}
		out->cells = grown;
		*alloc = want;
	}
	memcpy(out->cells + out->nrows * out->ncols, cells, out->ncols * sizeof *cells);
	out->nrows++;
	*bytes += add;
	return 0;
}
