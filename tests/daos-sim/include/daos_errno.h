// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
/*
 * daos-sim: our own declaration of the DAOS error numbers (DER_*) the plugin and the
 * simulator use. Values match DAOS 2.6+ (GURT range from 1001, DAOS range from 2001).
 * Calls return the negative code, e.g. -DER_INVAL.
 */
#ifndef DAOS_SIM_DAOS_ERRNO_H
#define DAOS_SIM_DAOS_ERRNO_H

#ifdef __cplusplus
extern "C" {
#endif

enum daos_errno {
	DER_SUCCESS      = 0,
	DER_NO_PERM      = 1001,
	DER_NO_HDL       = 1002,
	DER_INVAL        = 1003,
	DER_EXIST        = 1004,
	DER_NONEXIST     = 1005,
	DER_UNREACH      = 1006,
	DER_NOSPACE      = 1007,
	DER_ALREADY      = 1008,
	DER_NOMEM        = 1009,
	DER_NOSYS        = 1010,
	DER_TIMEDOUT     = 1011,
	DER_BUSY         = 1012,
	DER_AGAIN        = 1013,
	DER_PROTO        = 1014,
	DER_UNINIT       = 1015,
	DER_TRUNC        = 1016,
	DER_OVERFLOW     = 1017,
	DER_CANCELED     = 1018,
	DER_OOG          = 1019,
	DER_HG           = 1020,
	DER_MISC         = 1025,
	DER_MISMATCH     = 1031,
	DER_EXCLUDED     = 1032,
	DER_NOREPLY      = 1033,
	DER_DOS          = 1034,
	DER_IO           = 2001,
	DER_ENOENT       = 2003,
	DER_STALE        = 2007,
	DER_NOTLEADER    = 2008,
	DER_EP_RO        = 2010,
	DER_EP_OLD       = 2011,
	DER_KEY2BIG      = 2012,
	DER_REC2BIG      = 2013,
	DER_IO_INVAL     = 2014,
	DER_SHUTDOWN     = 2017,
	DER_INPROGRESS   = 2018,
	DER_CSUM         = 2021,
	DER_TX_RESTART   = 2025,
	DER_DATA_LOSS    = 2026,
	DER_RF           = 2031,
	DER_AGENT_COMM   = 2034,
	DER_NOTSUPPORTED = 2037,
	DER_NO_SERVICE   = 2039,
	DER_NVME_IO      = 2042,
	DER_UNKNOWN      = 501000,
};

/* Name ("DER_INVAL") and description of a negative DER code. */
const char *d_errstr(int rc);
const char *d_errdesc(int rc);

#ifdef __cplusplus
}
#endif

#endif
