/* engine/kernel/revisions.c - the dataset's manifests at other revisions
 * (see revisions.h). */
#include "engine/kernel/revisions.h"

#include <stdlib.h>
#include <string.h>

#include "core/layout.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "util/fs.h"
#include "engine/kernel/repo.h"

/* A parse-error label: "<commit[:12]>:<path>", or path alone. */
static char *history_label(const char *commit, const char *path)
{
	return commit ? tt_asprintf("%.12s:%s", commit, path) : tt_strdup(path);
}

static int cmp_manifest(const void *a, const void *b)
{
	return strcmp(((const tt_manifest *)a)->key, ((const tt_manifest *)b)->key);
}

/* Parse {path: text} under reldir into a manifest set (sorted). */
static int parse_files(const json_t *files, const char *reldir, const char *rev,
		       tt_manifest_set *set, tt_error *err)
{
	const char *path;
	json_t *text;
	memset(set, 0, sizeof *set);
	json_object_foreach((json_t *)files, path, text) {
		if (!tt_engine_is_manifest_path(reldir, path))
			continue;
		if (TT_ARRAY_GROW(set->items, set->alloc, set->n + 1) < 0) {
			tt_manifests_release(set);
			return tt_error_oom(err);
		}
		char *label = history_label(rev, path);
		int rc = label ? tt_manifest_parse(&set->items[set->n], json_string_value(text),
						   json_string_length(text), label, err)
			       : tt_error_oom(err);
		free(label);
		if (rc < 0) {
			tt_manifests_release(set);
			return rc;
		}
		set->n++;
	}
	if (set->n)
		qsort(set->items, set->n, sizeof *set->items, cmp_manifest);
	return 0;
}

int tt_engine_objects_at(tt_repo *repo, const char *rev, tt_manifest_set *set, char **resolved,
			 tt_error *err)
{
	char *commit = NULL, *reldir = tt_engine_objects_reldir(repo);
	json_t *files = NULL;
	int rc;
	memset(set, 0, sizeof *set);
	if (!reldir)
		return tt_error_oom(err);
	if ((rc = tt_vcs_resolve(repo->vcs, rev, &commit, err)) == 0 &&
	    (rc = tt_vcs_files_at(repo->vcs, commit, reldir, &files, err)) == 0)
		rc = parse_files(files, reldir, commit, set, err);
	if (rc == 0 && resolved) {
		*resolved = commit;
		commit = NULL;
	}
	free(commit);
	free(reldir);
	json_decref(files);
	return rc;
}

/* ".tether/objects" relative to the VCS root. */
char *tt_engine_objects_reldir(const tt_repo *repo)
{
	return tt_path_join(tt_engine_dataset_rel(repo), TT_DIR "/" TT_OBJECTS_DIR);
}

bool tt_engine_is_manifest_path(const char *reldir, const char *path)
{
	size_t dl = strlen(reldir), pl = strlen(path);
	return pl > dl + 6 && strncmp(path, reldir, dl) == 0 && path[dl] == '/' &&
	       strcmp(path + pl - 5, ".toml") == 0;
}

int tt_manifest_memo_get(tt_manifest_memo *memo, const json_t *text, const char *commit,
			 const char *path, size_t *index, bool *fresh, tt_error *err)
{
	json_t *idx;
	if (fresh)
		*fresh = false;
	if (!memo->texts && !(memo->texts = json_object()))
		return tt_error_oom(err);
	if ((idx = json_object_get(memo->texts, json_string_value(text)))) {
		*index = (size_t)json_integer_value(idx);
		return 0;
	}
	if (TT_ARRAY_GROW(memo->items, memo->alloc, memo->n + 1) < 0)
		return tt_error_oom(err);
	char *label = history_label(commit, path);
	int rc = label ? tt_manifest_parse(&memo->items[memo->n], json_string_value(text),
					   json_string_length(text), label, err)
		       : tt_error_oom(err);
	free(label);
	if (rc < 0)
		return rc;
	if (json_object_set_new(memo->texts, json_string_value(text), json_integer((json_int_t)memo->n)) < 0) {
		tt_manifest_release(&memo->items[memo->n]);
		return tt_error_oom(err);
	}
	*index = memo->n++;
	if (fresh)
		*fresh = true;
	return 0;
}

void tt_manifest_memo_release(tt_manifest_memo *memo)
{
	for (size_t i = 0; i < memo->n; i++)
		tt_manifest_release(&memo->items[i]);
	free(memo->items);
	json_decref(memo->texts);
	memset(memo, 0, sizeof *memo);
}
