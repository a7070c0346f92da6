/*
 * cli/cli.h - the command-line front end: a table of commands, each with
 * its options declared once so parsing and `--help` come from the same
 * place.  Only the CLI prints and chooses exit statuses:
 *   0 ok, 1 error, 2 usage error, 3 partial success, 130 interrupted
 *   (Ctrl-C stopped a read-only phase; nothing was written).
 */
#ifndef TT_CLI_CLI_H
#define TT_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <tether/tether.h>

#include "util/buf.h"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2, EXIT_PARTIAL = 3, EXIT_INTERRUPTED = 130 };

typedef enum cli_opt_type { OPT_FLAG, OPT_VALUE, OPT_LIST, OPT_INT } cli_opt_type;

typedef struct cli_opt {
	const char *name;      /* long name without "--" */
	char shortc;           /* 0: none */
	cli_opt_type type;
	const char *metavar;   /* for values */
	const char *help;
} cli_opt;

#define CLI_MAX_OPTS 32

typedef struct cli_args {
	int seen[CLI_MAX_OPTS];
	const char *value[CLI_MAX_OPTS];
	long long ivalue[CLI_MAX_OPTS];
	const char **list[CLI_MAX_OPTS];
	size_t nlist[CLI_MAX_OPTS];
	const char **pos;
	size_t npos;
	/* A planned command's, set by the dispatcher (planned.c) from
	 * --dry-run / --no-dry-run / --plan / --from-plan: */
	bool plan_dry;            /* preview only (--plan FILE saves it) */
	const char *plan_from;    /* --from-plan FILE: the saved plan to apply */
} cli_args;

/*
 * How a command plans.  A planned command declares the options --dry-run,
 * --plan FILE and --from-plan FILE (and --no-dry-run where a preview is
 * the default); the dispatcher refuses --from-plan with --dry-run or
 * --plan and sets cli_args.plan_dry / plan_from before the command runs,
 * which hands its library call to cli_run_planned.
 */
typedef enum cli_plan_mode {
	CLI_UNPLANNED = 0,
	CLI_PLANNED,              /* applies unless --dry-run or --plan */
	CLI_PLANNED_DRY_DEFAULT,  /* previews unless --no-dry-run (gc, drop) */
} cli_plan_mode;

typedef struct cli_cmd cli_cmd;
struct cli_cmd {
	const char *name;         /* also the command of its saved plans */
	const char *synopsis;     /* after "tether <name> " */
	const char *summary;      /* one line */
	const char *description;  /* paragraphs for --help */
	const cli_opt *opts;      /* terminated by { NULL } */
	size_t min_pos, max_pos;
	int (*run)(const cli_cmd *cmd, cli_args *args);
	cli_plan_mode planned;
};

/* Index of an option by long name (the command's own table). */
int cli_opt_index(const cli_cmd *cmd, const char *name);
bool cli_flag(const cli_cmd *cmd, const cli_args *a, const char *name);
const char *cli_value(const cli_cmd *cmd, const cli_args *a, const char *name);

/* Output helpers.  Under --json (cli_json_errors, set by main when the
 * command was given --json) errors go to stderr as one JSON object, see
 * errors.c; cli_error prints one of the CLI's own (hint may be NULL). */
extern bool cli_json_errors;
extern const char *cli_usage_line;
int cli_error(const char *hint, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_json_error(const char *message, const char *hint, const char *code, const char *key,
		    const char *kind, int exit_status);
int cli_fail(tt_error *err);                 /* prints "error: ..." (+ hint); returns 1 */
int cli_usage_error(const cli_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));    /* stderr "note: " */
void cli_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* stderr "warning: " */
int cli_print_json(json_t *v);               /* json.dumps(v, indent=2) + newline */
/* --format text|markdown beside --json: *markdown set, or a usage error
 * (EXIT_USAGE) when they contradict or the value is neither. */
int cli_output_format(const cli_cmd *cmd, const cli_args *a, int *markdown);
void cli_print_help(const cli_cmd *cmd);
/* Native history as `tether log` prints it: "  <id>  <when>  <message>  [refs]"
 * ("%3d. " instead of the indent when numbered, as add --pick asks). */
void cli_print_history(const json_t *entries, bool numbered);
/*
 * Planned commands (planned.c).  cli_plan_args is the dispatcher's: it
 * refuses --from-plan with --dry-run or --plan (printing the error,
 * EXIT_ERROR) and fills a->plan_dry / a->plan_from; else EXIT_OK.
 */
int cli_plan_args(const cli_cmd *cmd, cli_args *a);
/* Show a computed plan: saved to --plan FILE when given, printed as JSON
 * with --json, else as text.  Returns an exit status. */
int cli_show_plan(const cli_cmd *cmd, const cli_args *a, const char *plan_json, const char *plan_text);

/*
 * A planned command's library call in the API's one planned form (tether.h,
 * "planned commands"): plan as plan says, results into res.  Returns 0 or a
 * negative tt_code with err set; res->out may be set beside a failure when
 * part of the command took effect.
 */
typedef int (*cli_plan_fn)(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res,
			   tt_error *err);
/*
 * The one place a planned command's plan flags act: reads the saved plan
 * of --from-plan (refusing a plan of another command, by file name), calls
 * fn, prints its error or shows the plan, and returns that exit status --
 * or CLI_PLAN_APPLIED with *out what fn applied, for the command to print
 * (and release).  partial (may be NULL): a failure that left *out set is
 * a partial success, its error moved to *partial and CLI_PLAN_APPLIED
 * returned.
 */
#define CLI_PLAN_APPLIED (-1)
int cli_run_planned(const cli_cmd *cmd, const cli_args *a, tt_repo *repo, cli_plan_fn fn, void *ctx,
		    json_t **out, tt_error *partial);

/* Open the dataset around the current directory, printing its warnings. */
int cli_open_repo(tt_repo **out);
/* Print repo's warnings not printed yet ("warning: ..." on stderr): those
 * of opening it, then, when it is closed, those the command added (a peer
 * checkout's file skipped, a pin index not updated).  NULL forgets what
 * was printed (cli_close_repo). */
void cli_print_warnings(const tt_repo *repo);
/* From here until cli_close_repo, Ctrl-C asks repo to stop (interrupt.c):
 * for the commands whose read-only phases can stop (status, snapshot,
 * commit, pull, verify). */
void cli_interrupt_attach(tt_repo *repo);
/* Print the warnings the command added, and free repo (NULL-safe). */
void cli_close_repo(tt_repo *repo);

/* The kinds this tether knows, sorted by name, from tt_backends() (read
 * once per process; the strings live as long as it does). */
typedef struct cli_kind {
	const char *name;
	const char *maturity;  /* "stable" | "experimental" */
	bool built;            /* a backend is compiled in */
} cli_kind;
const cli_kind *cli_kinds(size_t *count);

/* The commands. */
extern const cli_cmd cmd_init, cmd_add, cmd_set, cmd_remove, cmd_backends, cmd_status, cmd_snapshot,
	cmd_commit, cmd_verify, cmd_log, cmd_diff, cmd_new, cmd_open, cmd_promote, cmd_gc, cmd_ops,
	cmd_pull, cmd_undo, cmd_repair, cmd_restore;
/* The registry commands (experimental), and their per-table counts
 * ("  <table padded>  <n:>7> row(s)", cmd_export.c). */
extern const cli_cmd cmd_export, cmd_publish, cmd_import;
/* {table: rows} of an export (tt_repo_export's object), in table order. */
json_t *cli_row_counts(const json_t *bundle);
void cli_print_row_counts(const json_t *counts);
/* The rest of the lifecycle. */
extern const cli_cmd cmd_recover, cmd_forget_workspace, cmd_abandon, cmd_drop, cmd_upgrade;
/* SQL over the dataset at a revision (cmd_query.c). */
extern const cli_cmd cmd_query;
/* `open KEY --for ENGINE`: the snippet reading KEY at its state (cmd_query.c). */
/* Whether engine is one `--for` knows (duckdb, spark, trino, polars). */
bool cli_engine_known(const char *engine);
int cli_open_for(const char *key, const char *rev, const char *engine, bool json);
/* Bookmarks and their expiry (cmd_bookmarks.c). */
extern const cli_cmd cmd_bookmarks;
/* The expiry cmd's --ttl / --expires (/ --no-expiry) give: *set when one
 * does, *expires in UTC seconds, *clear for --no-expiry.  A bad duration
 * or time is a usage error naming the accepted forms (its exit status is
 * returned; EXIT_OK otherwise). */
int cli_expiry_args(const cli_cmd *cmd, const cli_args *a, bool *set, long long *expires, bool *clear);
/* tether-vcs's _print_gc_report (cmd_gc.c). */
void cli_print_gc_report(const json_t *report);

#endif
