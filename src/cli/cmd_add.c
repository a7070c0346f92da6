/* cli/cmd_add.c - `tether add [KEY] [LOCATOR] --kind KIND ...`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Named locator options, in the order they enter the locator. */
static const char *const field_opts[] = {
	"project-id", "database", "role", "branch", "remote", "region", "host", "port", "table",
};

/* Does --set name the path?  kind: tt_kind_describe's object. */
static bool names_path(const cli_cmd *cmd, const cli_args *a, const json_t *kind)
{
	int i = cli_opt_index(cmd, "set");
	for (size_t j = 0; j < a->nlist[i]; j++) {
		const char *item = a->list[i][j];
		const char *eq = strchr(item, '=');
		size_t len = eq ? (size_t)(eq - item) : strlen(item);
		if ((len == 3 && strncmp(item, "uri", 3) == 0) || (len == 4 && strncmp(item, "path", 4) == 0))
			return true;
		size_t k;
		json_t *name;
		json_array_foreach(json_object_get(kind, "path_keys"), k, name) {
			const char *p = json_string_value(name);
			if (p && strlen(p) == len && strncmp(item, p, len) == 0)
				return true;
		}
	}
	return false;
}

/* Which entry the answer names: a number from the list, else an id or the
 * start of one (the first that matches). */
static const json_t *chosen_entry(const json_t *entries, const char *answer)
{
	size_t n = json_array_size(entries), i;
	json_t *e;
	bool digits = *answer != '\0';
	for (const char *p = answer; *p; p++)
		digits = digits && *p >= '0' && *p <= '9';
	if (digits && strlen(answer) < 10) {
		unsigned long k = strtoul(answer, NULL, 10);
		if (k >= 1 && k <= n)
			return json_array_get(entries, k - 1);
	}
	json_array_foreach((json_t *)entries, i, e) {
		const char *id = json_string_value(json_object_get(e, "id"));
		if (id && strncmp(id, answer, strlen(answer)) == 0)
			return e;
	}
	return NULL;
}

/* --pick: list the object's native history numbered and ask on stdin which
 * entry to start at; the answer becomes the locator's `at`. */
static int pick(tt_repo *repo, const char *kind, json_t *loc)
{
	tt_error err = TT_ERROR_INIT;
	json_t *entries = NULL;
	char *line = NULL;
	size_t cap = 0;
	int rc = EXIT_OK;
	tt_log_opts lo = TT_LOG_OPTS_INIT;
	lo.kind = kind;
	lo.locator = loc;
	lo.limit = 20;
	if (tt_repo_log(repo, &lo, &entries, &err) < 0)
		return cli_fail(&err);
	if (!json_array_size(entries)) {
		fprintf(stderr, "error: no history to choose from\n");
		json_decref(entries);
		return EXIT_ERROR;
	}
	cli_print_history(entries, true);
	printf("Pick an entry (number or id) [1]: ");
	fflush(stdout);
	ssize_t got = getline(&line, &cap, stdin);
	if (got < 0) {
		printf("\n");
		fprintf(stderr, "error: --pick asks on stdin which entry to start at, and stdin ended "
				"without an answer\n"
				"hint: run it where you can answer, or give the state with `--at ID` (any id "
				"listed above)\n");
		rc = EXIT_ERROR;
		goto done;
	}
	char *answer = line;
	while (*answer == ' ' || *answer == '\t')
		answer++;
	size_t len = strlen(answer);
	while (len && strchr(" \t\r\n", answer[len - 1]))
		answer[--len] = '\0';
	const json_t *e = chosen_entry(entries, *answer ? answer : "1");
	if (!e) {
		char *r = tt_repr_str(answer);
		/* tether-vcs's words: the answer is the user's, not the backend's */
		fprintf(stderr, "error: no entry matches %s\n"
				"hint: answer with a number from the list or an id; `--at ID` skips the "
				"question\n", r ? r : answer);
		free(r);
		rc = EXIT_ERROR;
		goto done;
	}
	json_object_set(loc, "at", json_object_get(e, "id"));
done:
	free(line);
	json_decref(entries);
	return rc;
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *loc = NULL, *out = NULL;
	const char *key = a->npos > 0 ? a->pos[0] : NULL;
	const char *locator = a->npos > 1 ? a->pos[1] : NULL;
	const char *kind_name = cli_value(cmd, a, "kind");
	json_t *kind = NULL;  /* tt_kind_describe's object */
	const char *name = NULL;
	int rc;

	if (!kind_name)
		return cli_usage_error(cmd, "missing option '--kind'");
	if (cli_flag(cmd, a, "at") && cli_flag(cmd, a, "pick"))
		return cli_usage_error(cmd, "--at and --pick both choose the initial state; give one");
	if ((rc = cli_open_repo(&repo)))
		return rc;
	/* As tether-vcs: the missing object is an error (1), not a usage error. */
	if (!key) {
		tt_error_set(&err, TT_ECONFIG, "add needs a KEY, a LOCATOR, or both");
		rc = cli_fail(&err);
		goto done;
	}
	if (tt_kind_describe(kind_name, &kind, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	name = json_string_value(json_object_get(kind, "kind"));
	/* For a kind whose locator is a path, a lone positional is the LOCATOR
	 * and the key comes from it, unless --set already names the path. */
	if (!locator && json_is_true(json_object_get(kind, "path_locator")) && !names_path(cmd, a, kind)) {
		locator = key;
		key = NULL;
	}
	loc = json_object();
	if (locator)
		json_object_set_new(loc, json_string_value(json_object_get(kind, "locator_key")), json_string(locator));
	for (size_t i = 0; i < sizeof field_opts / sizeof field_opts[0]; i++) {
		int idx = cli_opt_index(cmd, field_opts[i]);
		if (!a->seen[idx])
			continue;
		char field[32];
		snprintf(field, sizeof field, "%s", field_opts[i]);
		for (char *p = field; *p; p++)
			if (*p == '-')
				*p = '_';
		if (cmd->opts[idx].type == OPT_INT)
			json_object_set_new(loc, field, json_integer(a->ivalue[idx]));
		else
			json_object_set_new(loc, field, json_string(a->value[idx]));
	}
	int si = cli_opt_index(cmd, "set");
	for (size_t j = 0; j < a->nlist[si]; j++) {
		const char *item = a->list[si][j];
		const char *eq = strchr(item, '=');
		if (!eq) {
			fprintf(stderr, "error: --set expects key=value, got '%s'\n", item);
			rc = EXIT_ERROR;
			goto done;
		}
		char *k = strndup(item, (size_t)(eq - item));
		if (!k || !*k) {
			free(k);
			fprintf(stderr, "error: --set expects key=value, got '%s'\n", item);
			rc = EXIT_ERROR;
			goto done;
		}
		json_object_set_new(loc, k, json_string(eq + 1));
		free(k);
	}
	if (cli_flag(cmd, a, "at"))
		json_object_set_new(loc, "at", json_string(cli_value(cmd, a, "at")));
	if (cli_flag(cmd, a, "pick") && (rc = pick(repo, name, loc)) != EXIT_OK)
		goto done;

	tt_add_opts opts = {
		.version = TT_ADD_OPTS_VERSION,
		.key = key,
		.kind = name,
		.locator = loc,
		.file_policy = cli_value(cmd, a, "file"),
		.pin_policy = cli_value(cmd, a, "pin"),
		.create = cli_flag(cmd, a, "create"),
	};
	if (tt_repo_add(repo, &opts, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	json_t *at = json_object_get(out, "at");
	const char *maturity = json_string_value(json_object_get(kind, "maturity"));
	const char *note = json_string_value(json_object_get(kind, "note"));
	printf("added %s (%s%s%s)", json_string_value(json_object_get(out, "key")), name,
	       opts.create ? ", created" : "",
	       json_is_true(json_object_get(out, "derived_key")) ? ", key from the locator" : "");
	if (json_is_string(at))
		printf(" at %s", json_string_value(at));
	printf("\n");
	if (opts.create)
		cli_note("the store lifecycle (`--create`, `gc --delete-stores`) is experimental: deleting a "
			 "store has no `repair`; see docs/store-lifecycle.md");
	if (json_is_true(json_object_get(out, "experimental")) && strcmp(name, "dolt") == 0)
		/* dolt */
		cli_note("the dolt backend is experimental: CI tests it against a test server (go-mysql-server "
			 "with Dolt's versioning SQL), not a real dolt sql-server; docs/backend-dolt.md says how "
			 "to run the suite against one (`tether backends`)");
	else if (json_is_true(json_object_get(out, "experimental")) && note)
		/* neon: what it is tested against */
		cli_note("the %s backend is %s: %s (`tether backends`)", name, maturity,
			 note);
	else if (json_is_true(json_object_get(out, "experimental")))
		cli_note("the %s backend is %s (`tether backends`; docs/backend-%s.md says what it is "
			 "tested against)", name, maturity, name);
done:
	json_decref(kind);
	json_decref(loc);
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "kind", 0, OPT_VALUE, "KIND",
	  "Backend kind (required): {kinds}. `tether backends` lists each with its maturity." },
	{ "branch", 0, OPT_VALUE, "BRANCH",
	  "Upstream branch (default main) for branching backends: what the trunk bookmark "
	  "stands for." },
	{ "at", 0, OPT_VALUE, "STATE",
	  "Start at this native state (snapshot id, version, commit or tag) instead of the "
	  "branch head." },
	{ "pick", 0, OPT_FLAG, NULL,
	  "List the system's history (numbered, newest first) and ask on stdin which entry to start "
	  "at: a number or an id.  Without an answer on stdin it fails; use --at there." },
	{ "project-id", 0, OPT_VALUE, "ID", "Neon project." },
	{ "database", 0, OPT_VALUE, "NAME", "Neon/Dolt database." },
	{ "role", 0, OPT_VALUE, "ROLE", "Neon role for connections." },
	{ "remote", 0, OPT_VALUE, "NAME", "git: a configured remote to push pins to." },
	{ "region", 0, OPT_VALUE, "REGION", "Object-store region." },
	{ "host", 0, OPT_VALUE, "HOST", "Dolt server host." },
	{ "port", 0, OPT_INT, "PORT", "Dolt server port." },
	{ "table", 0, OPT_VALUE, "TABLE", "DuckLake table scope (iceberg: the identifier)." },
	{ "set", 0, OPT_LIST, "K=V", "Extra locator field (repeatable): path=, identifier=, ..." },
	{ "file", 0, OPT_VALUE, "immutable|versioned",
	  "file backend: immutable (any byte change is an error) or versioned (addressable "
	  "via object-store version ids).  Default: tether.toml [defaults] file." },
	{ "pin", 0, OPT_VALUE, "native|record",
	  "native: a tag/branch per commit; record: the state only.  Default: [defaults] pin." },
	{ "create", 0, OPT_FLAG, NULL,
	  "Make an empty store at the locator first (file directories, git, icechunk), marked as "
	  "this dataset's; refused if anything exists there.  `gc --delete-stores` removes it once "
	  "nothing references it; on a bookmark its working branch is forked at once "
	  "(experimental)." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_add = {
	.name = "add",
	.synopsis = "[KEY] [LOCATOR] --kind KIND [options]",
	.summary = "Register an object in the working copy.",
	.description = "Writes the object's manifest, .tether/objects/KEY.toml, and contacts nothing: the\n"
	"first commit records (and pins) its state.  The positional LOCATOR becomes the\n"
	"locator's `uri` (a dolt object's `url`: mysql://user@host:port/database); named\n"
	"options set other fields.  For a kind whose locator is a path (file, git,\n"
	"icechunk, lance, delta) a lone positional is the LOCATOR and the key is its last\n"
	"segment less the store suffix.  Relative local paths and a leading ~ are\n"
	"resolved against the current directory and stored absolute.  --pick lists history\n"
	"first; --create makes the store (undo removes it again while it is still empty).\n"
	"An iceberg table is named by --table (or --set identifier=ns.table); its catalog's\n"
	"uri and credentials come from .tether/secrets.toml.  Journaled and undoable.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 2,
	.run = run,
};
