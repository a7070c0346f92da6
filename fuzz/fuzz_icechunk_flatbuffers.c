/*
 * fuzz_icechunk_flatbuffers - libFuzzer target for the hand-written
 * flatbuffers reader: the input is a decompressed flatbuffer, decoded as a
 * repo file, a snapshot and a transaction log.  A repo that decodes is
 * rewritten with a branch change and must decode again with it, so the
 * builder is fuzzed too.  Failures must carry a message; nothing may crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/icechunk/icechunk_fmt.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tt_error err = TT_ERROR_INIT;
	ic_repo r, r2;
	ic_snapshot s;
	ic_txlog t;
	tt_buf again = TT_BUF_INIT;
	/* a copy: the readers must not depend on the caller's alignment */
	uint8_t *buf = malloc(size ? size : 1);

	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	if (tt_ic_snapshot_decode(buf, size, "fuzz", &s, &err) == 0)
		tt_ic_snapshot_release(&s);
	else if (!err.message)
		abort();
	tt_error_clear(&err);
	if (tt_ic_txlog_decode(buf, size, "fuzz", &t, &err) == 0)
		tt_ic_txlog_release(&t);
	else if (!err.message)
		abort();
	tt_error_clear(&err);
	if (tt_ic_repo_decode(buf, size, "fuzz", &r, &err) == 0) {
		ic_change ch = { IC_CHANGE_BRANCH_CREATE, "tether.ws.fuzz", (uint32_t)(r.nsnaps - 1),
				 NULL, 0, 1, "repo.0.X" };
		bool fresh = tt_ic_repo_find_ref(r.branches, r.nbranches, "tether.ws.fuzz") < 0;
		if (fresh && tt_ic_repo_rewrite(buf, size, &r, &ch, "fuzz", &again, &err) == 0) {
			if (tt_ic_repo_decode((const uint8_t *)again.ptr, again.len, "again", &r2, &err) != 0) {
				fprintf(stderr, "rewrite does not read back: %s\n", tt_error_text(&err));
				abort();
			}
			if (tt_ic_repo_find_ref(r2.branches, r2.nbranches, "tether.ws.fuzz") < 0 ||
			    r2.nbranches != r.nbranches + 1 || r2.ntags != r.ntags)
				abort();
			tt_ic_repo_release(&r2);
		}
		tt_ic_repo_release(&r);
	} else if (!err.message) {
		abort();
	}
	tt_error_clear(&err);
	tt_buf_release(&again);
	free(buf);
	return 0;
}
