/*
 * core/tomlfile.h - reading tether's TOML files with errors that point at
 * the line: every refusal of a value reads "FILE:LINE:COL: ..." so the user
 * can open the file at the right place.
 */
#ifndef TT_CORE_TOMLFILE_H
#define TT_CORE_TOMLFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"
#include "util/toml.h"

/* Set err to TT_ECONFIG, "<file>:<line>:<col>: <message>" (position of v;
 * just "<file>: " when v carries none). Returns TT_ECONFIG. */
int tt_toml_refuse(tt_error *err, const char *file, const tt_toml_value *v, const char *fmt, ...)
	TT_PRINTF(4, 5);

/*
 * Typed lookups in table t.  Absent keys leave *out untouched and return 0
 * (the caller's default stands); a value of the wrong type is refused with
 * its position.  `where` names the table in messages ("[snapshot]").
 */
int tt_toml_get_bool(const tt_toml_value *t, const char *key, bool *out, const char *file,
		     const char *where, tt_error *err);
int tt_toml_get_int(const tt_toml_value *t, const char *key, int64_t *out, const char *file,
		    const char *where, tt_error *err);
/* *out points into the tree (valid while it lives). */
int tt_toml_get_str(const tt_toml_value *t, const char *key, const char **out, const char *file,
		    const char *where, tt_error *err);
/* A sub-table (NULL when absent); anything else there is refused. */
int tt_toml_get_table(const tt_toml_value *t, const char *key, const tt_toml_value **out,
		      const char *file, const char *where, tt_error *err);

#endif
