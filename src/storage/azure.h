/*
 * storage/azure.h - the store interface on Azure Blob Storage (and Azurite).
 *
 * Keys are relative to `prefix` inside `container`.  Requests are signed
 * with Shared Key (the account key, base64) or carry a SAS token; block
 * blobs are written whole with one Put Blob; List Blobs pages with
 * maxresults/marker (the marker is the page token); conditional writes with
 * If-None-Match: * (409 or 412: TT_EEXISTS) and If-Match (412:
 * TT_EREFMOVED).  Version ids are read where the account keeps them
 * (x-ms-version-id); Azurite has no blob versioning, so a store on it is
 * unversioned.  Errors name "az://container/prefix" and the key and say
 * what the service said, never the key or the SAS.
 */
#ifndef TT_STORAGE_AZURE_H
#define TT_STORAGE_AZURE_H

#include <stdbool.h>

#include "net/http.h"
#include "storage/store.h"

typedef struct tt_azure_config {
	const char *account;     /* the storage account name */
	const char *container;
	const char *prefix;      /* "" or NULL: the whole container */
	/* "http(s)://host[:port][/path]": the blob service root; NULL:
	 * https://<account>.blob.core.windows.net.  An emulator's root names
	 * the account in its path (http://127.0.0.1:10000/devstoreaccount1). */
	const char *endpoint;
	const char *account_key; /* base64 Shared Key */
	const char *sas_token;   /* "sv=...&sig=..." (a leading '?' is dropped) */
	tt_http_opts http;
} tt_azure_config;

int tt_store_azure_open(const tt_azure_config *cfg, tt_store **out, tt_error *err);

/* Create the container (an existing one is fine).  Tests, `add --create`. */
int tt_azure_create_container(const tt_azure_config *cfg, tt_error *err);

#endif
