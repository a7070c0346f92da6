/*
 * fuzz_icechunk_container - libFuzzer target for Icechunk's metadata-file
 * container (header + zstd frame) and the decoders behind it: the input is
 * a whole file.  Whatever decodes is decoded again after a round trip (a
 * repo file rewritten with a new tag must decode with that tag); failures
 * must be errors with a message, never a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/icechunk/icechunk_fmt.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void need_message(int rc, const tt_error *err)
{
	if (rc && (!err->message || !*err->message))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int types[] = { IC_FILE_REPO, IC_FILE_SNAPSHOT, IC_FILE_TXLOG };
	for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
		tt_error err = TT_ERROR_INIT;
		tt_buf fb = TT_BUF_INIT, again = TT_BUF_INIT, file = TT_BUF_INIT, back = TT_BUF_INIT;
		int spec = 0, rc;

		rc = tt_ic_container_read(data, size, types[t], "fuzz", (size_t)16 << 20, &fb, &spec, &err);
		need_message(rc, &err);
		tt_error_clear(&err);
		if (rc == 0 && types[t] == IC_FILE_REPO) {
			ic_repo r, r2;
			rc = tt_ic_repo_decode((const uint8_t *)fb.ptr, fb.len, "fuzz", &r, &err);
			need_message(rc, &err);
			tt_error_clear(&err);
			if (rc == 0) {
				ic_change ch = { IC_CHANGE_TAG_CREATE, "tether.fuzz", 0, NULL, 0, 1, "repo.0.X" };
				bool fresh = tt_ic_repo_find_ref(r.tags, r.ntags, "tether.fuzz") < 0;
				if (fresh &&
				    tt_ic_repo_rewrite((const uint8_t *)fb.ptr, fb.len, &r, &ch, "fuzz", &again, &err) == 0) {
					/* what we write must read back, through the container too */
					if (tt_ic_container_write((const uint8_t *)again.ptr, again.len, IC_FILE_REPO, 2,
							       &file, &err) != 0 ||
					    tt_ic_container_read((const uint8_t *)file.ptr, file.len, IC_FILE_REPO, "again",
							      0, &back, &spec, &err) != 0 ||
					    tt_ic_repo_decode((const uint8_t *)back.ptr, back.len, "again", &r2, &err) != 0) {
						fprintf(stderr, "rewrite does not read back: %s\n", tt_error_text(&err));
						abort();
					}
					if (tt_ic_repo_find_ref(r2.tags, r2.ntags, "tether.fuzz") < 0 || r2.nsnaps != r.nsnaps)
						abort();
					tt_ic_repo_release(&r2);
				}
				tt_error_clear(&err);
				tt_ic_repo_release(&r);
			}
		} else if (rc == 0 && types[t] == IC_FILE_SNAPSHOT) {
			ic_snapshot s;
			rc = tt_ic_snapshot_decode((const uint8_t *)fb.ptr, fb.len, "fuzz", &s, &err);
			need_message(rc, &err);
			if (rc == 0)
				tt_ic_snapshot_release(&s);
		} else if (rc == 0) {
			ic_txlog x;
			rc = tt_ic_txlog_decode((const uint8_t *)fb.ptr, fb.len, "fuzz", &x, &err);
			need_message(rc, &err);
			if (rc == 0)
				tt_ic_txlog_release(&x);
		}
		tt_error_clear(&err);
		tt_buf_release(&fb);
		tt_buf_release(&again);
		tt_buf_release(&file);
		tt_buf_release(&back);
	}
	return 0;
}
