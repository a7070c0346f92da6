/* cli/human.h - text for people (see human.c). */
#ifndef TT_CLI_HUMAN_H
#define TT_CLI_HUMAN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"

/* "512 B", "1.5 KiB", "24 MiB", "2.4 GiB". */
void cli_size_text(char *out, size_t n, double bytes);

/* A state as its kind shows it: "0ca1b2c3d4e5" (git), "snapshot ID"
 * (icechunk), "version 7" (lance, delta), "dir, 25000 files, 2.4 GiB,
 * 627a8f55c225" (file); other kinds as short "k=v" fields. */
int cli_state_text(tt_buf *out, const json_t *state);

/* On stderr, after `open` printed a handle's address: a line to paste
 * into the kind's own library or tool (git, icechunk, lance, deltalake). */
void cli_handle_snippet(const json_t *handle);

/* Colour for stdout: only on a terminal, never with NO_COLOR or TERM=dumb. */
bool cli_colour(void);
/* sgr (e.g. CLI_GREEN) when colouring, else "". */
const char *cli_paint(const char *sgr);
#define CLI_RESET "\033[0m"
#define CLI_BOLD "\033[1m"
#define CLI_RED "\033[31m"
#define CLI_GREEN "\033[32m"
#define CLI_YELLOW "\033[33m"
#define CLI_CYAN "\033[36m"

#endif
