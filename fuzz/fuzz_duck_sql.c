/*
 * fuzz_duck_sql - libFuzzer target for SQL text read as DuckDB's lexer
 * reads it (db/duck_sql.c): the split into statements, the text with its
 * comments and strings blanked, and the string literals.  Any bytes must
 * give an answer, never a crash; the blanked text keeps the input's length
 * and changes only bytes to spaces; every statement is a piece of the
 * input; no statement is blank.
 *
 * The module is compiled into this file, so that it gets the fuzzer's
 * coverage instrumentation; its archive member is then never linked in.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db/duck_sql.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *sql = malloc(size + 1);
	if (!sql)
		return 0;
	memcpy(sql, data, size);
	sql[size] = '\0';
	size_t len = strlen(sql); /* the text ends at its first NUL */

	char *code = tt_duck_sql_code(sql);
	if (code) {
		if (strlen(code) != len)
			abort();
		for (size_t i = 0; i < len; i++)
			if (code[i] != sql[i] && code[i] != ' ')
				abort();
		free(code);
	}
	json_t *parts = NULL;
	if (tt_duck_split_sql(sql, &parts) == 0) {
		size_t i;
		json_t *v;
		const char *from = sql;
		json_array_foreach(parts, i, v) {
			const char *p = json_string_value(v);
			const char *at = strstr(from, p);
			if (!at || strspn(p, " \t\n\r\f\v") == strlen(p))
				abort();
			from = at + strlen(p);
		}
		json_decref(parts);
	}
	json_t *strings = NULL;
	if (tt_duck_sql_strings(sql, &strings) == 0)
		json_decref(strings);
	free(sql);
	return 0;
}
