/*
 * db/pg_api.h - libpq (PostgreSQL's client library), loaded on first use
 * (see util/dynlib.h).  Include this instead of <libpq-fe.h>: the names
 * below then call through the loaded table.  tt_db_pg_open() loads it; a
 * function not listed in TT_PG_SYMS is not available.
 */
#ifndef TT_DB_PG_API_H
#define TT_DB_PG_API_H

#include <libpq-fe.h>

#include "util/dynlib.h"

#define TT_PG_SYMS(X) \
	X(PQclear) X(PQstatus) X(PQresultStatus) X(PQresultErrorField) X(PQgetResult) \
	X(PQsetSingleRowMode) X(PQsetNoticeProcessor) X(PQsendQueryPrepared) \
	X(PQsendQueryParams) X(PQresultErrorMessage) X(PQprepare) X(PQpipelineSync) \
	X(PQntuples) X(PQnfields) X(PQgetvalue) X(PQgetisnull) X(PQgetCancel) X(PQfreemem) \
	X(PQfreeCancel) X(PQfname) X(PQfinish) X(PQexitPipelineMode) X(PQerrorMessage) \
	X(PQenterPipelineMode) X(PQconninfoParse) X(PQconninfoFree) X(PQconnectdbParams) \
	X(PQcancel)

typedef struct tt_pg_api {
	TT_PG_SYMS(TT_DYN_FIELD)
} tt_pg_api;
extern tt_pg_api tt_pg;

/* Load the library once: 0, or TT_ECAPABILITY naming it and the package. */
int tt_pg_load(tt_error *err);

#ifndef TT_DB_PG_API_IMPL
#define PQclear (*tt_pg.PQclear)
#define PQstatus (*tt_pg.PQstatus)
#define PQresultStatus (*tt_pg.PQresultStatus)
#define PQresultErrorField (*tt_pg.PQresultErrorField)
#define PQgetResult (*tt_pg.PQgetResult)
#define PQsetSingleRowMode (*tt_pg.PQsetSingleRowMode)
#define PQsetNoticeProcessor (*tt_pg.PQsetNoticeProcessor)
#define PQsendQueryPrepared (*tt_pg.PQsendQueryPrepared)
#define PQsendQueryParams (*tt_pg.PQsendQueryParams)
#define PQresultErrorMessage (*tt_pg.PQresultErrorMessage)
#define PQprepare (*tt_pg.PQprepare)
#define PQpipelineSync (*tt_pg.PQpipelineSync)
#define PQntuples (*tt_pg.PQntuples)
#define PQnfields (*tt_pg.PQnfields)
#define PQgetvalue (*tt_pg.PQgetvalue)
#define PQgetisnull (*tt_pg.PQgetisnull)
#define PQgetCancel (*tt_pg.PQgetCancel)
#define PQfreemem (*tt_pg.PQfreemem)
#define PQfreeCancel (*tt_pg.PQfreeCancel)
#define PQfname (*tt_pg.PQfname)
#define PQfinish (*tt_pg.PQfinish)
#define PQexitPipelineMode (*tt_pg.PQexitPipelineMode)
#define PQerrorMessage (*tt_pg.PQerrorMessage)
#define PQenterPipelineMode (*tt_pg.PQenterPipelineMode)
#define PQconninfoParse (*tt_pg.PQconninfoParse)
#define PQconninfoFree (*tt_pg.PQconninfoFree)
#define PQconnectdbParams (*tt_pg.PQconnectdbParams)
#define PQcancel (*tt_pg.PQcancel)
#endif

#endif
