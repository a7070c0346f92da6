/* cli/progress.h - progress on stderr (see progress.c). */
#ifndef TT_CLI_PROGRESS_H
#define TT_CLI_PROGRESS_H

#include <tether/tether.h>

/* Install the progress display on repo when it is wanted. */
void cli_progress_attach(tt_repo *repo);

#endif
