/*
 * engine/registry/registry_import.c - `import`: rows in the canonical object columns
 * from a registry (PostgreSQL, SQLite, CSV, JSONL) become add / update /
 * remove actions on the working-tree manifests.  Nothing external is
 * touched and nothing is pinned; `commit` still records states.
 *
 * SQL is only ever the user's own (--query, or secrets.toml [import]
 * query - never the committed tether.toml): it runs as one statement in a
 * read-only transaction through src/db/, so a query that writes is refused
 * by the database itself.
 */
#include "engine/registry/registry_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/kinds.h"
#include "backends/dispatch.h"
#include "core/layout.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "db/db.h"
#include "engine/kernel/context.h"
#include "engine/kernel/preconditions.h"
#include "engine/kernel/register.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/planned.h"
#include "engine/registry/registry.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "backends/registry.h"

static const char *const canonical_columns[] = { "key", "kind", "uri", "locator_json", "policy_file",
						 "policy_pin", "at" };

/* --- sources ------------------------------------------------------------------ */

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	if (n < m)
		return false;
	for (size_t i = 0; i < m; i++)
		if ((s[n - m + i] | 0x20) != suf[i])
			return false;
	return true;
}

bool tt_registry_sql_source(const char *source)
{
	return tt_db_is_postgres(source) ||
	       !(has_suffix(source, ".csv") || has_suffix(source, ".jsonl") || has_suffix(source, ".ndjson"));
}

static int select_sql(const char *table, const char *query, char **out, tt_error *err)
{
	if (!table == !query)
		return tt_error_set(err, TT_ECONFIG, "give exactly one of --table or --query for a SQL source");
	if (query) {
		*out = tt_strdup(query);
		return *out ? 0 : tt_error_oom(err);
	}
	bool ok = *table != '\0';
	for (const char *p = table; *p; p++)
		ok &= (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '.';
	if (!ok)
		return tt_error_set(err, TT_ECONFIG, "invalid table name: '%s'", table);
	*out = tt_asprintf("SELECT * FROM %s", table);
	return *out ? 0 : tt_error_oom(err);
}

static int read_sql(const char *source, const char *table, const char *query, json_t *rows, tt_error *err)
{
	char *sql = NULL;
	int rc = select_sql(table, query, &sql, err);
	if (rc < 0)
		return rc;
	tt_db *db = NULL;
	tt_db_opts o = { .read_only = true, .timeout_ms = 60000, .max_rows = 1000000 };
	tt_db_rows res = { 0 };
	if ((rc = tt_db_open(&db, source, &o, err)) == 0 && (rc = tt_db_begin(db, true, err)) == 0)
		rc = tt_db_query(db, sql, NULL, 0, &res, err);
	if (rc < 0 && tt_db_is_postgres(source))
		tt_error_prefix(err, "the import query failed");
	for (size_t r = 0; rc == 0 && r < res.nrows; r++) {
		json_t *row = json_object();
		if (!row || json_array_append_new(rows, row) < 0) {
			rc = tt_error_oom(err);
			break;
		}
		for (size_t c = 0; c < res.ncols; c++) {
			const char *v = res.cells[r * res.ncols + c];
			json_object_set_new(row, res.names[c], v ? json_string(v) : json_null());
		}
	}
	tt_db_rows_release(&res);
	tt_db_close(db);  /* the read-only transaction ends with it */
	free(sql);
	return rc;
}

/* Python's csv.DictReader: the first record names the fields; quoted
 * fields may hold commas, doubled quotes and line breaks; blank records
 * are skipped; a short record leaves its missing fields null. */
static int read_csv(const char *text, size_t len, const char *what, json_t *rows, tt_error *err)
{
	json_t *header = NULL, *rec = json_array();
	tt_buf field = TT_BUF_INIT;
	size_t i = 0;
	int rc = 0;
	if (!rec)
		return tt_error_oom(err);
	while (i <= len && rc == 0) {
		bool quoted = false, any = false;
		json_array_clear(rec);
		/* One record. */
		for (;;) {
			tt_buf_reset(&field);
			quoted = false;
			if (i < len && text[i] == '"') {
				quoted = true;
				i++;
				for (;;) {
					if (i >= len) {
						rc = tt_error_set(err, TT_EPARSE, "%s: unexpected end of data in a quoted field", what);
						break;
					}
					if (text[i] == '"') {
						if (i + 1 < len && text[i + 1] == '"') {
							tt_buf_putc(&field, '"');
							i += 2;
							continue;
						}
						i++;
						break;
					}
					tt_buf_putc(&field, text[i++]);
				}
			}
			while (rc == 0 && i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
				tt_buf_putc(&field, text[i++]);
			if (rc < 0)
				break;
			any |= quoted || field.len > 0;
			json_array_append_new(rec, json_stringn(field.ptr ? field.ptr : "", field.len));
			if (i < len && text[i] == ',') {
				i++;
				any = true;
				continue;
			}
			if (i < len && text[i] == '\r')
				i++;
			if (i < len && text[i] == '\n')
				i++;
			else if (i >= len)
				i = len + 1;
			break;
		}
		if (rc < 0 || !any)
			continue;
		if (!header) {
			header = json_copy(rec);
			continue;
		}
		json_t *row = json_object();
		for (size_t k = 0; row && k < json_array_size(header); k++)
			json_object_set(row, json_string_value(json_array_get(header, k)),
					k < json_array_size(rec) ? json_array_get(rec, k) : json_null());
		if (!row || json_array_append_new(rows, row) < 0)
			rc = tt_error_oom(err);
	}
	tt_buf_release(&field);
	json_decref(header);
	json_decref(rec);
	return rc < 0 ? rc : tt_buf_check(&field, err, what);
}

static int read_jsonl(char *text, const char *what, json_t *rows, tt_error *err)
{
	char *save = NULL;
	size_t line = 0;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		line++;
		if (strspn(l, " \t\r") == strlen(l))
			continue;
		json_error_t je;
		json_t *row = json_loads(l, JSON_DECODE_ANY, &je);
		if (!json_is_object(row)) {
			json_decref(row);
			return tt_error_set(err, TT_EPARSE, "%s: line %zu is not a JSON object", what, line);
		}
		json_array_append_new(rows, row);
	}
	return 0;
}

int tt_registry_read_source(const char *source, const char *table, const char *query, json_t **rows,
			    tt_error *err)
{
	json_t *out = json_array();
	int rc = 0;
	if (!out)
		return tt_error_oom(err);
	if (tt_db_is_postgres(source)) {
		rc = read_sql(source, table, query, out, err);
	} else if (!tt_registry_sql_source(source)) {
		tt_buf b = TT_BUF_INIT;
		if ((rc = tt_read_file(source, &b, 0, err)) == 0 && (rc = tt_buf_putc(&b, '\0')) == 0) {
			if (has_suffix(source, ".csv"))
				rc = read_csv(b.ptr, b.len - 1, source, out, err);
			else
				rc = read_jsonl(b.ptr, source, out, err);
		}
		tt_buf_release(&b);
	} else if (!tt_is_file(source)) {
		rc = tt_error_set(err, TT_ENOTFOUND, "import source not found: %s", source);
	} else {
		rc = read_sql(source, table, query, out, err);
	}
	if (rc < 0) {
		json_decref(out);
		return rc;
	}
	*rows = out;
	return 0;
}

/* --- rows -> specs -------------------------------------------------------------- */

typedef struct spec {
	const char *key, *kind;   /* borrowed from the row */
	json_t *locator;
	tt_policy policy;
} spec;

static bool blank(const json_t *v)
{
	return !v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0);
}

/* str(v) for a scalar cell. */
static char *cell_str(const json_t *v)
{
	if (json_is_string(v))
		return tt_strdup(json_string_value(v));
	if (json_is_integer(v))
		return tt_asprintf("%lld", (long long)json_integer_value(v));
	if (json_is_true(v))
		return tt_strdup("True");
	if (json_is_false(v))
		return tt_strdup("False");
	tt_buf b = TT_BUF_INIT;
	tt_json_dump(&b, v, (tt_json_style){ -1, false, false, false });
	return tt_buf_detach(&b);
}

static int row_spec(const json_t *row, const tt_policy *defaults, spec *s, tt_error *err)
{
	memset(s, 0, sizeof *s);
	json_t *k = json_object_get(row, "key"), *kd = json_object_get(row, "kind");
	s->key = json_is_string(k) ? json_string_value(k) : NULL;
	s->kind = json_is_string(kd) ? json_string_value(kd) : NULL;
	if (!s->key || !*s->key || !s->kind || !*s->kind) {
		char *shown = cell_str(row);
		int rc = tt_error_set(err, TT_ECONFIG, "import row needs `key` and `kind`: %s", shown ? shown : "?");
		free(shown);
		return rc;
	}
	int rc = tt_validate_key(s->key, err);
	if (rc < 0)
		return rc;
	if (!tt_kind_find(s->kind))
		return tt_error_set(err, TT_ECONFIG, "unknown backend kind '%s' for '%s'", s->kind, s->key);
	if (!(s->locator = json_object()))
		return tt_error_oom(err);
	json_t *raw = json_object_get(row, "locator_json");
	if (!blank(raw)) {
		json_t *parsed = json_is_string(raw) ? json_loads(json_string_value(raw), JSON_DECODE_ANY, NULL)
						     : json_incref(raw);
		if (!json_is_object(parsed)) {
			json_decref(parsed);
			return tt_error_set(err, TT_ECONFIG, "locator_json for '%s' must be a JSON object", s->key);
		}
		const char *lk;
		json_t *lv;
		json_object_foreach(parsed, lk, lv)
			if (!json_is_null(lv))
				json_object_set(s->locator, lk, lv);
		json_decref(parsed);
	}
	json_t *uri = json_object_get(row, "uri"), *at = json_object_get(row, "at");
	if (!blank(uri) && !json_object_get(s->locator, "uri")) {
		char *u = cell_str(uri);
		json_object_set_new(s->locator, "uri", json_string(u ? u : ""));
		free(u);
	}
	if (!blank(at)) {
		char *a = cell_str(at);
		json_object_set_new(s->locator, "at", json_string(a ? a : ""));
		free(a);
	}
	if (!json_object_size(s->locator))
		return tt_error_set(err, TT_ECONFIG, "import row for '%s' has no locator (uri/locator_json)", s->key);
	s->policy = *defaults;
	json_t *pf = json_object_get(row, "policy_file"), *pp = json_object_get(row, "policy_pin");
	if (!blank(pf) && json_is_string(pf) && (rc = tt_policy_set(&s->policy, "file", json_string_value(pf), err)) < 0)
		return rc;
	if (!blank(pp) && json_is_string(pp) && (rc = tt_policy_set(&s->policy, "pin", json_string_value(pp), err)) < 0)
		return rc;
	return 0;
}

/* --- plan ----------------------------------------------------------------------- */

static int hash_now(tt_repo *repo, json_t **out, tt_error *err)
{
	char hex[65];
	int rc = tt_manifests_hash(hex, &repo->objects, err);
	if (rc < 0)
		return rc;
	*out = json_string(hex);
	return *out ? 0 : tt_error_oom(err);
}

static json_t *policy_json(const tt_policy *p)
{
	return json_pack("{s:s,s:s}", "file", p->file, "pin", p->pin);
}

static bool policy_eq(const tt_policy *a, const tt_policy *b)
{
	return !strcmp(a->file, b->file) && !strcmp(a->pin, b->pin);
}

static int plan_specs(tt_repo *repo, spec *specs, size_t n, bool sync, json_t *notes, tt_plan *plan,
		      tt_error *err)
{
	json_t *mh = NULL, *sv = json_boolean(sync), *rows = json_integer((json_int_t)n);
	char *cwd = tt_getcwd();
	int rc = cwd && sv && rows ? hash_now(repo, &mh, err) : tt_error_oom(err);
	if (rc == 0 && (rc = tt_plan_set_context(plan, "manifest_hash", mh, err)) == 0 &&
	    (rc = tt_plan_set_context(plan, "sync", sv, err)) == 0 &&
	    (rc = tt_plan_set_context(plan, "rows", rows, err)) == 0) {
		size_t i;
		json_t *note;
		json_array_foreach(notes, i, note)
			if (rc == 0)
				rc = tt_plan_note(plan, json_string_value(note), err);
	}
	if (rc == 0)
		rc = tt_plan_require(plan, "manifest_hash", mh, NULL, NULL,
				     "manifests changed since the plan was made; re-run the plan", err);
	json_decref(mh);
	json_decref(sv);
	json_decref(rows);
	/* specs come sorted by key. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		spec *s = &specs[i];
		const tt_kind *kind = tt_kind_find(s->kind);
		json_t *loc = json_deep_copy(s->locator);
		if (!loc) {
			rc = tt_error_oom(err);
			break;
		}
		if ((rc = tt_absolutize_locator(loc, s->kind, cwd, err)) < 0 ||
		    (kind->validate_locator && (rc = kind->validate_locator(loc, repo->vcs->root, err)) < 0)) {
			tt_error_object(err, s->key, s->kind);
			json_decref(loc);
			break;
		}
		json_t *params = json_pack("{s:o,s:o}", "locator", loc, "policy", policy_json(&s->policy));
		json_t *uri = json_object_get(s->locator, "uri");
		char *target = uri ? cell_str(uri) : tt_strdup("");
		const tt_manifest *cur = tt_manifests_find(&repo->objects, s->key);
		if (!params || !target) {
			rc = tt_error_oom(err);
		} else if (!cur) {
			rc = tt_plan_action(plan, "add", s->key, s->kind, target, "register", params, err);
		} else if (strcmp(cur->kind, s->kind)) {
			rc = tt_error_set(err, TT_ECONFIG, "'%s' is registered as '%s' but the source says '%s'; remove "
					  "and re-add it to change kinds", s->key, cur->kind, s->kind);
		} else {
			bool loc_changed = !json_equal(cur->locator, json_object_get(params, "locator"));
			bool pol_changed = !policy_eq(&cur->policy, &s->policy);
			if (loc_changed || pol_changed) {
				char *detail = tt_asprintf("%s%s%s changed; committed state kept", loc_changed ? "locator" : "",
							   loc_changed && pol_changed ? " and " : "",
							   pol_changed ? "policy" : "");
				rc = detail ? tt_plan_action(plan, "update", s->key, s->kind, target, detail, params, err)
					    : tt_error_oom(err);
				free(detail);
			} else {
				char *note = tt_asprintf("%s: unchanged", s->key);
				rc = note ? tt_plan_note(plan, note, err) : tt_error_oom(err);
				free(note);
			}
		}
		free(target);
		json_decref(params);
	}
	if (rc == 0 && sync) {
		for (size_t m = 0; rc == 0 && m < repo->objects.n; m++) {
			const tt_manifest *cur = &repo->objects.items[m];
			bool wanted = false;
			for (size_t i = 0; i < n && !wanted; i++)
				wanted = !strcmp(specs[i].key, cur->key);
			if (!wanted)
				rc = tt_plan_action(plan, "remove", cur->key, cur->kind, NULL,
						    "not listed by the source (sync)", NULL, err);
		}
	}
	free(cwd);
	return rc;
}

static int cmp_spec(const void *a, const void *b)
{
	return strcmp(((const spec *)a)->key, ((const spec *)b)->key);
}

static int plan_import(tt_repo *repo, void *vctx, bool applying, tt_plan **out, tt_error *err)
{
	const tt_import_rows *ctx = vctx;
	const json_t *rows = ctx->rows;
	bool sync = ctx->sync;
	(void)applying;
	size_t n = json_array_size(rows);
	spec *specs = tt_calloc(n + 1, sizeof *specs);
	json_t *extra = json_object(), *notes = json_array();
	tt_plan *plan = tt_plan_new("import");
	int rc = specs && extra && notes && plan ? 0 : tt_error_oom(err);
	size_t built = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		json_t *row = json_array_get(rows, i);
		const char *col;
		json_t *v;
		json_object_foreach(row, col, v) {
			bool known = false;
			for (size_t c = 0; c < sizeof canonical_columns / sizeof *canonical_columns; c++)
				known |= !strcmp(col, canonical_columns[c]);
			if (!known)
				json_object_set_new(extra, col, json_true());
		}
		if ((rc = row_spec(row, &repo->config.defaults, &specs[built], err)) < 0) {
			json_decref(specs[built].locator);
			break;
		}
		for (size_t j = 0; j < built; j++)
			if (!strcmp(specs[j].key, specs[built].key)) {
				rc = tt_error_set(err, TT_ECONFIG, "import source lists '%s' more than once", specs[j].key);
				break;
			}
		built++;
	}
	if (rc == 0 && json_object_size(extra)) {
		/* "ignored columns: a, b" (sorted). */
		size_t ne = json_object_size(extra), k = 0;
		const char **names = tt_calloc(ne, sizeof *names);
		const char *col;
		json_t *v;
		tt_buf b = TT_BUF_INIT;
		if (!names) {
			rc = tt_error_oom(err);
		} else {
			json_object_foreach(extra, col, v)
				names[k++] = col;
			for (size_t a = 1; a < ne; a++)
				for (size_t c = a; c > 0 && strcmp(names[c - 1], names[c]) > 0; c--) {
					const char *t = names[c];
					names[c] = names[c - 1];
					names[c - 1] = t;
				}
			tt_buf_puts(&b, "ignored columns: ");
			for (k = 0; k < ne; k++)
				tt_buf_printf(&b, "%s%s", k ? ", " : "", names[k]);
			tt_buf_putc(&b, '\0');
			if ((rc = tt_buf_check(&b, err, "a note")) == 0)
				json_array_append_new(notes, json_string(b.ptr));
		}
		tt_buf_release(&b);
		free(names);
	}
	if (rc == 0) {
		qsort(specs, built, sizeof *specs, cmp_spec);
		rc = plan_specs(repo, specs, built, sync, notes, plan, err);
	}
	for (size_t i = 0; i < built; i++)
		json_decref(specs[i].locator);
	free(specs);
	json_decref(extra);
	json_decref(notes);
	if (rc < 0)
		tt_plan_free(plan);
	else
		*out = plan;
	return rc;
}

/* --- apply ---------------------------------------------------------------------- */

static int workspace_text(tt_repo *repo, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc = tt_workspace_render(&b, &repo->ws, err);
	if (rc == 0 && !(*out = json_stringn(b.ptr, b.len)))
		rc = tt_error_oom(err);
	tt_buf_release(&b);
	return rc;
}

static int apply_update(tt_repo *repo, const tt_plan_action_view *a, tt_error *err)
{
	tt_manifest *cur = tt_manifests_find(&repo->objects, a->key);
	if (!cur)
		return tt_error_set(err, TT_ESTALEPLAN, "no such object: %s", a->key);
	json_t *loc = json_object_get(a->params, "locator"), *pol = json_object_get(a->params, "policy");
	tt_policy policy = cur->policy;
	int rc;
	if (!json_is_object(loc))
		return tt_error_set(err, TT_ECONFIG, "the import plan's update of %s has no locator", a->key);
	if ((rc = tt_policy_set(&policy, "file", json_string_value(json_object_get(pol, "file")), err)) < 0 ||
	    (rc = tt_policy_set(&policy, "pin", json_string_value(json_object_get(pol, "pin")), err)) < 0)
		return rc;
	bool same_loc = json_equal(cur->locator, loc);
	/* Another system: the committed state and pin describe the old one. */
	tt_backend *b = NULL;
	json_t *old_id = NULL, *new_id = NULL;
	tt_error ignored = TT_ERROR_INIT;
	if (!same_loc && tt_engine_backend(repo, cur->kind, &b, &ignored) == 0) {
		if (tt_backend_identity(b, cur->locator, &old_id, &ignored) < 0)
			old_id = NULL;
		tt_error_clear(&ignored);
		if (tt_backend_identity(b, loc, &new_id, &ignored) < 0)
			new_id = NULL;
	}
	tt_error_clear(&ignored);
	bool other_system = !same_loc && (!old_id || !new_id || !json_equal(old_id, new_id));
	json_decref(old_id);
	json_decref(new_id);
	json_decref(cur->locator);
	cur->locator = json_deep_copy(loc);
	cur->policy = policy;
	if (other_system) {
		json_decref(cur->state);
		cur->state = NULL;
		free(cur->pin_id);
		free(cur->pin_ref);
		cur->pin_id = cur->pin_ref = NULL;
		cur->recoverable = true;
	}
	if (!cur->locator)
		return tt_error_oom(err);
	if ((rc = tt_manifest_save(cur, repo->root, err)) < 0)
		return rc;
	/* The working branch lives in the old system: drop this checkout's hold. */
	if (!same_loc)
		tt_workspace_forget_key(&repo->ws, a->key, 0);
	return 0;
}

static int apply_remove(tt_repo *repo, const char *key, tt_error *err)
{
	if (!tt_manifests_find(&repo->objects, key))
		return tt_error_set(err, TT_ESTALEPLAN, "no such object: %s", key);
	int rc = tt_manifest_delete(repo->root, key, err);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < repo->objects.n; i++) {
		if (strcmp(repo->objects.items[i].key, key))
			continue;
		tt_manifest_release(&repo->objects.items[i]);
		memmove(&repo->objects.items[i], &repo->objects.items[i + 1],
			(repo->objects.n - i - 1) * sizeof repo->objects.items[0]);
		repo->objects.n--;
		break;
	}
	json_object_del(repo->ws.last_snapshot, key);
	json_object_del(repo->ws.last_snapshot_errors, key);
	tt_workspace_forget_key(&repo->ws, key, 1);
	return 0;
}

static int load_import(tt_repo *repo, void *ctx, tt_plan *plan, tt_error *err)
{
	(void)ctx;
	return tt_engine_check_preconditions(repo, plan, "import", err);
}

static int apply_import(tt_repo *repo, void *ctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err)
{
	json_t *pre = NULL, *objects = json_object(), *wstext = NULL;
	json_t *added = json_array(), *updated = json_array(), *removed = json_array(), *unchanged = json_array();
	json_t *result = NULL;
	int rc = 0;
	(void)ctx, (void)saved;
	if (!objects || !added || !updated || !removed || !unchanged) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < tt_plan_note_count(plan); i++) {
		const char *note = tt_plan_note_at(plan, i);
		const char *sep = strstr(note, ": ");
		if (sep && !strcmp(sep + 2, "unchanged"))
			json_array_append_new(unchanged, json_stringn(note, (size_t)(sep - note)));
	}
	size_t n = tt_plan_action_count(plan);
	for (size_t i = 0; i < n; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		char *text = NULL;
		if (tt_manifests_find(&repo->objects, a.key) &&
		    (rc = tt_manifest_read_text(&text, repo->root, a.key, err)) < 0)
			goto done;
		json_object_set_new(objects, a.key, text ? json_string(text) : json_null());
		free(text);
	}
	if ((rc = workspace_text(repo, &wstext, err)) < 0)
		goto done;
	if (!(pre = json_pack("{s:O,s:O}", "objects", objects, "workspace", wstext))) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		if (!strcmp(a.op, "add")) {
			json_t *loc = json_deep_copy(json_object_get(a.params, "locator"));
			json_t *pol = json_object_get(a.params, "policy");
			tt_policy policy = repo->config.defaults;
			if (!json_is_object(loc))
				rc = tt_error_set(err, TT_ECONFIG, "the import plan's add of %s has no locator", a.key);
			else if (tt_manifests_find(&repo->objects, a.key))
				rc = tt_error_set(err, TT_ESTALEPLAN, "object already exists: %s", a.key);
			else if ((rc = tt_policy_set(&policy, "file", json_string_value(json_object_get(pol, "file")), err)) == 0 &&
				 (rc = tt_policy_set(&policy, "pin", json_string_value(json_object_get(pol, "pin")), err)) == 0)
				rc = tt_engine_register(repo, a.key, a.kind, loc, policy, false, err);
			json_decref(loc);
			if (rc == 0)
				json_array_append_new(added, json_string(a.key));
		} else if (!strcmp(a.op, "update")) {
			if ((rc = apply_update(repo, &a, err)) == 0)
				json_array_append_new(updated, json_string(a.key));
		} else if (!strcmp(a.op, "remove")) {
			if ((rc = apply_remove(repo, a.key, err)) == 0)
				json_array_append_new(removed, json_string(a.key));
		} else {
			rc = tt_error_set(err, TT_ECONFIG, "an import plan cannot '%s'", a.op);
		}
		if (rc < 0)
			tt_error_object(err, a.key, a.kind);
	}
	int wrc = tt_workspace_save(&repo->ws, repo->root, rc < 0 ? NULL : err);
	if (rc == 0)
		rc = wrc;
	result = json_pack("{s:O,s:O,s:O,s:O}", "added", added, "updated", updated, "removed", removed, "unchanged",
			   unchanged);
	if (!result && rc == 0)
		rc = tt_error_oom(err);
	/* Journaled even after a partial failure, so undo can restore what was written. */
	if (result && n && (json_array_size(added) || json_array_size(updated) || json_array_size(removed))) {
		/* With the plan it applied, as tether-vcs journals it. */
		tt_error perr = TT_ERROR_INIT;
		json_t *pj = tt_plan_to_object(plan, &perr);
		tt_error_clear(&perr);
		int lrc = tt_oplog_record_plan(repo->root, "import", pj, result, pre, NULL, NULL, rc < 0 ? NULL : err);
		json_decref(pj);
		if (rc == 0)
			rc = lrc;
	}
	if (rc == 0) {
		*out = result;
		result = NULL;
	}
done:
	json_decref(pre);
	json_decref(objects);
	json_decref(wstext);
	json_decref(added);
	json_decref(updated);
	json_decref(removed);
	json_decref(unchanged);
	json_decref(result);
	return rc;
}

/* Planned under the checkout lock, from the manifests on disk as apply
 * will check them (a handle kept open across an earlier import holds them
 * as that import left them in memory; the lock reads them afresh). */
const tt_planned_cmd tt_registry_import_cmd = {
	.command = "import",
	.locks = TT_PLANNED_CHECKOUT,
	.plan = plan_import,
	.load = load_import,
	.apply = apply_import,
};
