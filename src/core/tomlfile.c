/* core/tomlfile.c - positioned errors for tether's TOML files. */
#include "core/tomlfile.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

int tt_toml_refuse(tt_error *err, const char *file, const tt_toml_value *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = tt_vasprintf(fmt, ap);
	va_end(ap);
	if (!msg)
		return tt_error_oom(err);
	if (v && tt_toml_line(v) > 0)
		tt_error_set(err, TT_ECONFIG, "%s:%d:%d: %s", file, tt_toml_line(v), tt_toml_col(v), msg);
	else
		tt_error_set(err, TT_ECONFIG, "%s: %s", file, msg);
	free(msg);
	return TT_ECONFIG;
}

static int wrong_type(const tt_toml_value *v, const char *key, const char *want, const char *file,
		      const char *where, tt_error *err)
{
	return tt_toml_refuse(err, file, v, "%s %s must be %s, not a %s", where, key, want,
			      tt_toml_type_name(tt_toml_type_of(v)));
}

int tt_toml_get_bool(const tt_toml_value *t, const char *key, bool *out, const char *file,
		     const char *where, tt_error *err)
{
	const tt_toml_value *v = t ? tt_toml_table_get(t, key) : NULL;
	if (!v)
		return 0;
	if (tt_toml_type_of(v) != TT_TOML_BOOLEAN)
		return wrong_type(v, key, "true or false", file, where, err);
	*out = tt_toml_boolean(v);
	return 0;
}

int tt_toml_get_int(const tt_toml_value *t, const char *key, int64_t *out, const char *file,
		    const char *where, tt_error *err)
{
	const tt_toml_value *v = t ? tt_toml_table_get(t, key) : NULL;
	if (!v)
		return 0;
	if (tt_toml_type_of(v) != TT_TOML_INTEGER)
		return wrong_type(v, key, "an integer", file, where, err);
	*out = tt_toml_integer(v);
	return 0;
}

int tt_toml_get_str(const tt_toml_value *t, const char *key, const char **out, const char *file,
		    const char *where, tt_error *err)
{
	const tt_toml_value *v = t ? tt_toml_table_get(t, key) : NULL;
	if (!v)
		return 0;
	if (tt_toml_type_of(v) != TT_TOML_STRING)
		return wrong_type(v, key, "a string", file, where, err);
	size_t len;
	const char *s = tt_toml_string(v, &len);
	if (strlen(s) != len)
		return tt_toml_refuse(err, file, v, "%s %s holds a NUL character", where, key);
	*out = s;
	return 0;
}

int tt_toml_get_table(const tt_toml_value *t, const char *key, const tt_toml_value **out,
		      const char *file, const char *where, tt_error *err)
{
	const tt_toml_value *v = t ? tt_toml_table_get(t, key) : NULL;
	*out = NULL;
	if (!v)
		return 0;
	if (tt_toml_type_of(v) != TT_TOML_TABLE)
		return wrong_type(v, key, "a table", file, where, err);
	*out = v;
	return 0;
}
