/*
 * engine/gc/gc_listings.c - gc: the listings job: stored listings no manifest
 * names.
 */
#include "engine/gc/gc_listings.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/index.h"
#include "core/layout.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/fault.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/gc/state.h"

/* --- listings ----------------------------------------------------------------------- */

int tt_gc_plan_listings(gc_state *s, tt_error *err)
{
	tt_repo *repo = s->repo;
	json_t *wanted = json_object();
	char *dir = tt_tether_path(repo->root, TT_LISTINGS_DIR);
	char **names = NULL;
	size_t n = 0, alloc = 0;
	DIR *d = NULL;
	int rc = 0;
	if (!wanted || !dir) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < tt_gc_manifest_count(s); i++) {
		const tt_manifest *m = tt_gc_manifest_at(s, i);
		tt_backend *b;
		json_t *identity = NULL, *content = NULL;
		char name[TT_LISTING_NAME_MAX];
		if (!m->state)
			continue;
		if ((rc = tt_gc_manifest_identity(repo, m, &b, &identity, err)) < 0)
			goto done;
		if (!(content = tt_content_state(b->kind, m->state)))
			rc = tt_error_oom(err);
		else if ((rc = tt_listing_name(name, m->kind, identity, content, err)) == 0)
			tt_gc_set_add(wanted, name);
		json_decref(identity);
		json_decref(content);
		if (rc < 0)
			goto done;
	}
	if (!tt_is_dir(dir) || !(d = opendir(dir)))
		goto done;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		/* glob("*.jsonl"): no hidden names */
		if (l < 6 || e->d_name[0] == '.' || strcmp(e->d_name + l - 6, ".jsonl") != 0)
			continue;
		if (TT_ARRAY_GROW(names, alloc, n + 1) < 0 || !(names[n] = tt_strdup(e->d_name))) {
			rc = tt_error_oom(err);
			goto done;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof *names, tt_cmp_cstr);
	for (size_t i = 0; i < n && rc == 0; i++)
		if (!tt_gc_set_has(wanted, names[i]))
			rc = tt_plan_action(s->plan, "delete-listing", NULL, NULL, names[i], "unreferenced", NULL, err);
done:
	if (d)
		closedir(d);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(dir);
	json_decref(wanted);
	return rc;
}
