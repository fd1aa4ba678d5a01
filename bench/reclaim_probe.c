// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//
// reclaim_probe: measures, on a real DAOS engine, how pool free space tracks writes and
// punches (the facts the eviction code needs), plus a few object-API semantics. Built and run
// by bench/reclaim_probe.sh (read its header); one sub-command per measurement:
//
//   reclaim_probe layout                        daos_pool_info_t sizes/offsets, DPI_SPACE
//   reclaim_probe <pool> <cont> qlat            daos_pool_query(DPI_SPACE) latency, 20 calls
//   reclaim_probe <pool> <cont> sem             punched fetch, conditional inserts, 2-iod
//                                               fetch, leading hole, punch of a missing dkey
//   reclaim_probe <pool> <cont> fill MIB        write new MIB-MiB keys until an update fails
//   reclaim_probe <pool> <cont> reclaim ROUNDS  fill with 1 MiB keys, punch the oldest half,
//                                               watch free space / a test write every 0.5 s
//                                               for up to 180 s; ROUNDS times (refill between)
//   reclaim_probe <pool> <cont> steady SECS PCT fill, then a writer thread (new 1 MiB keys as
//                                               fast as it can) and a punch thread (oldest key
//                                               whenever live keys > PCT% of the full count)
//
// Each key is one string dkey "k%09u" (per run prefix), its bytes in the array akey "data"
// (iod_size 1, one recx [0, len)). Output is line-oriented "tag key=value ..." text.
#define _GNU_SOURCE
#include <daos.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024ULL * 1024ULL)

static daos_handle_t poh, coh, oh;
static double t0;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double rel(void) { return now() - t0; }

static void load(char *out, size_t n)
{
	FILE *f = fopen("/proc/loadavg", "r");
	out[0] = 0;
	if (f) {
		if (fgets(out, (int)n, f)) {
			char *nl = strchr(out, '\n');
			if (nl)
				*nl = 0;
		}
		fclose(f);
	}
}

static void phase(const char *name)
{
	char l[128];
	time_t t = time(NULL);
	char tod[64];
	strftime(tod, sizeof(tod), "%H:%M:%S", gmtime(&t));
	load(l, sizeof(l));
	printf("PHASE %s t=%.3f tod=%sZ loadavg=\"%s\"\n", name, rel(), tod, l);
	fflush(stdout);
}

#define CHECK(what, rc)                                                                    \
	do {                                                                               \
		int rc_ = (rc);                                                            \
		if (rc_ != 0) {                                                            \
			fprintf(stderr, "FATAL %s rc=%d\n", what, rc_);                    \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

/* Free space: media 0 (SCM) and 1 (NVMe). Returns the query rc. */
static uint64_t last_min0, last_max0;

static int space(uint64_t *free0, uint64_t *free1, uint64_t *tot0, uint64_t *tot1)
{
	daos_pool_info_t info;
	memset(&info, 0, sizeof(info));
	info.pi_bits = DPI_SPACE;
	int rc = daos_pool_query(poh, NULL, &info, NULL, NULL);
	if (rc == 0) {
		*free0 = info.pi_space.ps_space.s_free[0];
		*free1 = info.pi_space.ps_space.s_free[1];
		last_min0 = info.pi_space.ps_free_min[0];
		last_max0 = info.pi_space.ps_free_max[0];
		if (tot0)
			*tot0 = info.pi_space.ps_space.s_total[0];
		if (tot1)
			*tot1 = info.pi_space.ps_space.s_total[1];
	}
	return rc;
}

static void keyname(char *buf, size_t n, const char *pfx, uint64_t i)
{
	snprintf(buf, n, "%s%09llu", pfx, (unsigned long long)i);
}

static int put(daos_handle_t o, uint64_t flags, const char *dkey_s, const char *akey_s,
	       daos_iod_type_t type, uint64_t off, void *buf, size_t len)
{
	daos_key_t dkey, akey;
	d_iov_set(&dkey, (void *)dkey_s, strlen(dkey_s));
	d_iov_set(&akey, (void *)akey_s, strlen(akey_s));
	daos_recx_t recx = {.rx_idx = off, .rx_nr = len};
	daos_iod_t iod;
	memset(&iod, 0, sizeof(iod));
	iod.iod_name = akey;
	iod.iod_type = type;
	if (type == DAOS_IOD_ARRAY) {
		iod.iod_size = 1;
		iod.iod_nr = 1;
		iod.iod_recxs = &recx;
	} else {
		iod.iod_size = len;
		iod.iod_nr = 1;
	}
	d_iov_t sg_iov;
	d_iov_set(&sg_iov, buf, len);
	d_sg_list_t sgl = {.sg_nr = 1, .sg_nr_out = 0, .sg_iovs = &sg_iov};
	return daos_obj_update(o, DAOS_TX_NONE, flags, &dkey, 1, &iod, &sgl, NULL);
}

static int put_key(const char *dkey_s, void *buf, size_t len)
{
	return put(oh, 0, dkey_s, "data", DAOS_IOD_ARRAY, 0, buf, len);
}

static int punch(const char *dkey_s)
{
	daos_key_t dkey;
	d_iov_set(&dkey, (void *)dkey_s, strlen(dkey_s));
	return daos_obj_punch_dkeys(oh, DAOS_TX_NONE, 0, 1, &dkey, NULL);
}

/* Array fetch of [off, off+len) of akey "data"; reports iod_size, sg_nr_out, iov_len. */
static int get_arr(const char *dkey_s, uint64_t off, void *buf, size_t len, uint64_t rec_size,
		   daos_size_t *iod_size, uint32_t *nr_out, size_t *iov_len)
{
	daos_key_t dkey;
	d_iov_set(&dkey, (void *)dkey_s, strlen(dkey_s));
	daos_recx_t recx = {.rx_idx = off, .rx_nr = len};
	daos_iod_t iod;
	memset(&iod, 0, sizeof(iod));
	d_iov_set(&iod.iod_name, "data", 4);
	iod.iod_type = DAOS_IOD_ARRAY;
	iod.iod_size = rec_size;
	iod.iod_nr = 1;
	iod.iod_recxs = &recx;
	d_iov_t sg_iov;
	d_iov_set(&sg_iov, buf, len);
	d_sg_list_t sgl = {.sg_nr = 1, .sg_nr_out = 0, .sg_iovs = &sg_iov};
	int rc = daos_obj_fetch(oh, DAOS_TX_NONE, 0, &dkey, 1, &iod, &sgl, NULL, NULL);
	*iod_size = iod.iod_size;
	*nr_out = sgl.sg_nr_out;
	*iov_len = sg_iov.iov_len;
	return rc;
}

static void open_all(const char *pool, const char *cont)
{
	CHECK("daos_init", daos_init());
	CHECK("daos_pool_connect2", daos_pool_connect2(pool, NULL, DAOS_PC_RW, &poh, NULL, NULL));
	CHECK("daos_cont_open2", daos_cont_open2(poh, cont, DAOS_COO_RW, &coh, NULL, NULL));
	daos_obj_id_t oid = {.hi = 0, .lo = 1};
	CHECK("daos_obj_generate_oid2",
	      daos_obj_generate_oid2(coh, &oid, DAOS_OT_MULTI_HASHED, 0, 0, 0));
	CHECK("daos_obj_open", daos_obj_open(coh, oid, DAOS_OO_RW, &oh, NULL));
	char ocname[64] = "?";
	daos_oclass_id2name(daos_obj_id2class(oid), ocname);
	printf("OPEN pool=%s cont=%s oid=%llx.%llx oclass=%s\n", pool, cont,
	       (unsigned long long)oid.hi, (unsigned long long)oid.lo, ocname);
}

static void close_all(void)
{
	daos_obj_close(oh, NULL);
	daos_cont_close(coh, NULL);
	daos_pool_disconnect(poh, NULL);
	daos_fini();
}

static void *mkbuf(size_t len, int seed)
{
	unsigned char *b = malloc(len);
	if (!b) {
		perror("malloc");
		exit(1);
	}
	uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(seed + 1);
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (unsigned char)x;
	}
	return b;
}

/* ---------------------------------------------------------------- layout */
static void cmd_layout(void)
{
	printf("LAYOUT sizeof(daos_pool_info_t)=%zu\n", sizeof(daos_pool_info_t));
	printf("LAYOUT offsetof(pi_uuid)=%zu pi_ntargets=%zu pi_nnodes=%zu pi_ndisabled=%zu "
	       "pi_map_ver=%zu pi_leader=%zu\n",
	       offsetof(daos_pool_info_t, pi_uuid), offsetof(daos_pool_info_t, pi_ntargets),
	       offsetof(daos_pool_info_t, pi_nnodes), offsetof(daos_pool_info_t, pi_ndisabled),
	       offsetof(daos_pool_info_t, pi_map_ver), offsetof(daos_pool_info_t, pi_leader));
	printf("LAYOUT offsetof(pi_bits)=%zu\n", offsetof(daos_pool_info_t, pi_bits));
	printf("LAYOUT offsetof(pi_space)=%zu sizeof(struct daos_pool_space)=%zu\n",
	       offsetof(daos_pool_info_t, pi_space), sizeof(struct daos_pool_space));
	printf("LAYOUT offsetof(pi_space.ps_space)=%zu sizeof(struct daos_space)=%zu\n",
	       offsetof(daos_pool_info_t, pi_space.ps_space), sizeof(struct daos_space));
	printf("LAYOUT offsetof(pi_space.ps_space.s_total[0])=%zu s_total[1]=%zu\n",
	       offsetof(daos_pool_info_t, pi_space.ps_space.s_total[0]),
	       offsetof(daos_pool_info_t, pi_space.ps_space.s_total[1]));
	printf("LAYOUT offsetof(pi_space.ps_space.s_free[0])=%zu s_free[1]=%zu\n",
	       offsetof(daos_pool_info_t, pi_space.ps_space.s_free[0]),
	       offsetof(daos_pool_info_t, pi_space.ps_space.s_free[1]));
	printf("LAYOUT offsetof(pi_space.ps_free_min)=%zu ps_free_max=%zu ps_free_mean=%zu\n",
	       offsetof(daos_pool_info_t, pi_space.ps_free_min),
	       offsetof(daos_pool_info_t, pi_space.ps_free_max),
	       offsetof(daos_pool_info_t, pi_space.ps_free_mean));
	printf("LAYOUT offsetof(pi_space.ps_ntargets)=%zu ps_padding=%zu\n",
	       offsetof(daos_pool_info_t, pi_space.ps_ntargets),
	       offsetof(daos_pool_info_t, pi_space.ps_padding));
	printf("LAYOUT offsetof(pi_rebuild_st)=%zu sizeof(struct daos_rebuild_status)=%zu\n",
	       offsetof(daos_pool_info_t, pi_rebuild_st), sizeof(struct daos_rebuild_status));
	printf("LAYOUT DAOS_MEDIA_MAX=%d DAOS_MEDIA_SCM=%d DAOS_MEDIA_NVME=%d\n", DAOS_MEDIA_MAX,
	       DAOS_MEDIA_SCM, DAOS_MEDIA_NVME);
	printf("LAYOUT DPI_SPACE=%llu DPI_REBUILD_STATUS=%llu\n", (unsigned long long)DPI_SPACE,
	       (unsigned long long)DPI_REBUILD_STATUS);
	printf("LAYOUT DAOS_COND_DKEY_INSERT=%d DAOS_COND_AKEY_INSERT=%d DAOS_REC_ANY=%d\n",
	       DAOS_COND_DKEY_INSERT, DAOS_COND_AKEY_INSERT, DAOS_REC_ANY);
	printf("LAYOUT DER_NOSPACE=%d DER_EXIST=%d DER_NONEXIST=%d\n", DER_NOSPACE, DER_EXIST,
	       DER_NONEXIST);
}

/* ---------------------------------------------------------------- qlat */
static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void cmd_qlat(void)
{
	phase("qlat");
	double us[20];
	uint64_t f0 = 0, f1 = 0, t0_ = 0, t1_ = 0;
	for (int i = 0; i < 20; i++) {
		double s = now();
		int rc = space(&f0, &f1, &t0_, &t1_);
		us[i] = (now() - s) * 1e6;
		if (rc)
			printf("QLAT call=%d rc=%d\n", i, rc);
	}
	double sorted[20];
	memcpy(sorted, us, sizeof(us));
	qsort(sorted, 20, sizeof(double), cmp_d);
	printf("QLAT calls=20 median_us=%.1f min_us=%.1f max_us=%.1f first_us=%.1f\n",
	       (sorted[9] + sorted[10]) / 2, sorted[0], sorted[19], us[0]);
	printf("QLAT total0=%llu total1=%llu free0=%llu free1=%llu\n", (unsigned long long)t0_,
	       (unsigned long long)t1_, (unsigned long long)f0, (unsigned long long)f1);
}

/* ---------------------------------------------------------------- sem */
static void cmd_sem(void)
{
	phase("sem");
	size_t len = 64 * 1024;
	unsigned char *w = mkbuf(2 * MIB, 7);
	unsigned char *r = malloc(2 * MIB);
	daos_size_t isz;
	uint32_t nout;
	size_t ilen;
	int rc;

	/* (a) fetch of a punched key */
	CHECK("sem put a", put_key("sem-a", w, len));
	rc = get_arr("sem-a", 0, r, len, 1, &isz, &nout, &ilen);
	printf("SEM a0 fetch-before-punch rc=%d iod_size=%llu sg_nr_out=%u iov_len=%zu\n", rc,
	       (unsigned long long)isz, nout, ilen);
	rc = punch("sem-a");
	printf("SEM a punch rc=%d\n", rc);
	memset(r, 0xAB, len);
	rc = get_arr("sem-a", 0, r, len, 1, &isz, &nout, &ilen);
	printf("SEM a fetch-punched(iod_size=1) rc=%d iod_size=%llu sg_nr_out=%u iov_len=%zu "
	       "buf_untouched=%d\n",
	       rc, (unsigned long long)isz, nout, ilen, r[0] == 0xAB && r[len - 1] == 0xAB);
	rc = get_arr("sem-a", 0, r, len, DAOS_REC_ANY, &isz, &nout, &ilen);
	printf("SEM a fetch-punched(iod_size=REC_ANY) rc=%d iod_size=%llu sg_nr_out=%u "
	       "iov_len=%zu\n",
	       rc, (unsigned long long)isz, nout, ilen);
	rc = get_arr("sem-never", 0, r, len, 1, &isz, &nout, &ilen);
	printf("SEM a fetch-never-written rc=%d iod_size=%llu sg_nr_out=%u iov_len=%zu\n", rc,
	       (unsigned long long)isz, nout, ilen);

	/* (b) DAOS_COND_DKEY_INSERT */
	CHECK("sem put b", put_key("sem-b", w, len));
	rc = put(oh, DAOS_COND_DKEY_INSERT, "sem-b", "data", DAOS_IOD_ARRAY, 0, w, len);
	printf("SEM b cond_dkey_insert-existing rc=%d\n", rc);
	rc = put(oh, DAOS_COND_DKEY_INSERT, "sem-b-new", "data", DAOS_IOD_ARRAY, 0, w, len);
	printf("SEM b cond_dkey_insert-new rc=%d\n", rc);
	rc = punch("sem-b");
	rc = put(oh, DAOS_COND_DKEY_INSERT, "sem-b", "data", DAOS_IOD_ARRAY, 0, w, len);
	printf("SEM b cond_dkey_insert-after-punch rc=%d\n", rc);

	/* (c) DAOS_COND_AKEY_INSERT */
	CHECK("sem put c", put_key("sem-c", w, len));
	rc = put(oh, DAOS_COND_AKEY_INSERT, "sem-c", "gen", DAOS_IOD_SINGLE, 0, w, 16);
	printf("SEM c cond_akey_insert-new-akey(single 'gen') rc=%d\n", rc);
	rc = put(oh, DAOS_COND_AKEY_INSERT, "sem-c", "gen", DAOS_IOD_SINGLE, 0, w, 16);
	printf("SEM c cond_akey_insert-existing-akey(single 'gen') rc=%d\n", rc);
	rc = put(oh, DAOS_COND_AKEY_INSERT, "sem-c", "data", DAOS_IOD_ARRAY, 0, w, len);
	printf("SEM c cond_akey_insert-existing-akey(array 'data') rc=%d\n", rc);
	rc = put(oh, DAOS_COND_AKEY_INSERT, "sem-c", "data2", DAOS_IOD_ARRAY, 0, w, len);
	printf("SEM c cond_akey_insert-new-akey(array 'data2') rc=%d\n", rc);
	rc = put(oh, DAOS_COND_AKEY_INSERT, "sem-c-newdkey", "data", DAOS_IOD_ARRAY, 0, w, len);
	printf("SEM c cond_akey_insert-new-dkey rc=%d\n", rc);

	/* (d) fetch with 2 iods: array "data" (exists) + single "gen" (missing) */
	CHECK("sem put d", put_key("sem-d", w, len));
	for (int variant = 0; variant < 2; variant++) {
		daos_key_t dkey;
		d_iov_set(&dkey, "sem-d", 5);
		daos_recx_t recx = {.rx_idx = 0, .rx_nr = len};
		daos_iod_t iods[2];
		memset(iods, 0, sizeof(iods));
		d_iov_set(&iods[0].iod_name, "data", 4);
		iods[0].iod_type = DAOS_IOD_ARRAY;
		iods[0].iod_size = 1;
		iods[0].iod_nr = 1;
		iods[0].iod_recxs = &recx;
		d_iov_set(&iods[1].iod_name, "gen", 3);
		iods[1].iod_type = DAOS_IOD_SINGLE;
		iods[1].iod_size = variant == 0 ? DAOS_REC_ANY : 16;
		iods[1].iod_nr = 1;
		unsigned char gen[16];
		memset(gen, 0xAB, sizeof(gen));
		d_iov_t v[2];
		d_iov_set(&v[0], r, len);
		d_iov_set(&v[1], gen, sizeof(gen));
		d_sg_list_t sgls[2] = {{.sg_nr = 1, .sg_iovs = &v[0]}, {.sg_nr = 1, .sg_iovs = &v[1]}};
		rc = daos_obj_fetch(oh, DAOS_TX_NONE, 0, &dkey, 2, iods, sgls, NULL, NULL);
		printf("SEM d two-iod gen.iod_size_in=%s rc=%d data.iod_size=%llu gen.iod_size=%llu "
		       "data.sg_nr_out=%u gen.sg_nr_out=%u data.iov_len=%zu gen.iov_len=%zu "
		       "data_ok=%d gen_untouched=%d\n",
		       variant == 0 ? "REC_ANY" : "16", rc, (unsigned long long)iods[0].iod_size,
		       (unsigned long long)iods[1].iod_size, sgls[0].sg_nr_out, sgls[1].sg_nr_out,
		       v[0].iov_len, v[1].iov_len, memcmp(r, w, len) == 0, gen[0] == 0xAB);
	}

	/* (e) leading hole: write [1 MiB, 2 MiB), fetch [0, 2 MiB) */
	rc = put(oh, 0, "sem-e", "data", DAOS_IOD_ARRAY, MIB, w + MIB, MIB);
	CHECK("sem put e", rc);
	memset(r, 0xAB, 2 * MIB);
	rc = get_arr("sem-e", 0, r, 2 * MIB, 1, &isz, &nout, &ilen);
	size_t untouched = 0, zero = 0;
	for (size_t i = 0; i < MIB; i++) {
		untouched += r[i] == 0xAB;
		zero += r[i] == 0;
	}
	printf("SEM e leading-hole rc=%d iod_size=%llu sg_nr_out=%u iov_len=%zu "
	       "hole_bytes_0xAB=%zu/%llu hole_bytes_zero=%zu data_ok=%d\n",
	       rc, (unsigned long long)isz, nout, ilen, untouched, MIB, zero,
	       memcmp(r + MIB, w + MIB, MIB) == 0);
	/* and a trailing hole: write [0, 1 MiB), fetch [0, 2 MiB) */
	rc = put(oh, 0, "sem-e2", "data", DAOS_IOD_ARRAY, 0, w, MIB);
	CHECK("sem put e2", rc);
	memset(r, 0xAB, 2 * MIB);
	rc = get_arr("sem-e2", 0, r, 2 * MIB, 1, &isz, &nout, &ilen);
	untouched = 0;
	for (size_t i = MIB; i < 2 * MIB; i++)
		untouched += r[i] == 0xAB;
	printf("SEM e trailing-hole rc=%d iod_size=%llu sg_nr_out=%u iov_len=%zu "
	       "tail_bytes_0xAB=%zu/%llu data_ok=%d\n",
	       rc, (unsigned long long)isz, nout, ilen, untouched, MIB, memcmp(r, w, MIB) == 0);

	/* (f) punch of a dkey that does not exist */
	rc = punch("sem-never-existed");
	printf("SEM f punch-missing-dkey rc=%d\n", rc);

	/* punch_dkeys with nr = 16 on small keys */
	daos_key_t keys[16];
	char names[16][32];
	for (int i = 0; i < 16; i++) {
		keyname(names[i], sizeof(names[i]), "sem-m", i);
		CHECK("sem put m", put_key(names[i], w, 4096));
		d_iov_set(&keys[i], names[i], strlen(names[i]));
	}
	rc = daos_obj_punch_dkeys(oh, DAOS_TX_NONE, 0, 16, keys, NULL);
	printf("SEM punch_dkeys nr=16 rc=%d\n", rc);
	rc = get_arr(names[5], 0, r, 4096, 1, &isz, &nout, &ilen);
	printf("SEM punch_dkeys nr=16 then fetch key[5] rc=%d iod_size=%llu\n", rc,
	       (unsigned long long)isz);
	rc = get_arr(names[0], 0, r, 4096, 1, &isz, &nout, &ilen);
	printf("SEM punch_dkeys nr=16 then fetch key[0] rc=%d iod_size=%llu\n", rc,
	       (unsigned long long)isz);
	free(w);
	free(r);
}

/* ---------------------------------------------------------------- fill */
struct keyspace {
	const char *pfx;
	uint64_t lo, hi; /* live keys are [lo, hi) */
	size_t len;
	uint64_t written; /* bytes of successful writes */
};

static void print_space(const char *tag, struct keyspace *ks, double extra_t)
{
	uint64_t f0 = 0, f1 = 0, t0_ = 0, t1_ = 0;
	int rc = space(&f0, &f1, &t0_, &t1_);
	printf("%s t=%.3f written_mib=%.0f live_keys=%llu free0=%llu free1=%llu total0=%llu "
	       "total1=%llu tgt_free_min0=%llu tgt_free_max0=%llu qrc=%d%s",
	       tag, extra_t >= 0 ? extra_t : rel(), ks->written / (double)MIB,
	       (unsigned long long)(ks->hi - ks->lo), (unsigned long long)f0,
	       (unsigned long long)f1, (unsigned long long)t0_, (unsigned long long)t1_,
	       (unsigned long long)last_min0, (unsigned long long)last_max0, rc, "\n");
	fflush(stdout);
}

/* Write new keys until an update fails; returns its rc. */
static int fill(struct keyspace *ks, void *buf, const char *tag)
{
	uint64_t next_report = (ks->written / (100 * MIB) + 1) * 100 * MIB;
	double s = now();
	uint64_t start_bytes = ks->written;
	char name[64];
	print_space(tag, ks, -1);
	for (;;) {
		keyname(name, sizeof(name), ks->pfx, ks->hi);
		double ws = now();
		int rc = put_key(name, buf, ks->len);
		double we = now();
		if (rc != 0) {
			printf("%s-FAIL t=%.3f rc=%d key=%s update_ms=%.2f written_mib=%.0f "
			       "this_fill_mib=%.0f fill_s=%.2f\n",
			       tag, rel(), rc, name, (we - ws) * 1e3, ks->written / (double)MIB,
			       (ks->written - start_bytes) / (double)MIB, we - s);
			print_space(tag, ks, -1);
			/* a few more tries: is it sticky? */
			for (int i = 0; i < 3; i++) {
				ws = now();
				int rc2 = put_key(name, buf, ks->len);
				printf("%s-RETRY t=%.3f rc=%d update_ms=%.2f\n", tag, rel(), rc2,
				       (now() - ws) * 1e3);
				if (rc2 == 0) {
					ks->hi++;
					ks->written += ks->len;
					break;
				}
			}
			fflush(stdout);
			return rc;
		}
		ks->hi++;
		ks->written += ks->len;
		if (ks->written >= next_report) {
			print_space(tag, ks, -1);
			next_report += 100 * MIB;
		}
	}
}

static void cmd_fill(size_t mib)
{
	char pfx[32];
	snprintf(pfx, sizeof(pfx), "f%zu-", mib);
	struct keyspace ks = {.pfx = pfx, .len = mib * MIB};
	void *buf = mkbuf(ks.len, 1);
	char tag[32];
	snprintf(tag, sizeof(tag), "FILL%zu", mib);
	phase(tag);
	int rc = fill(&ks, buf, tag);
	/* the reported free space lags; show it once it has refreshed */
	for (int i = 0; i < 4; i++) {
		usleep(1000000);
		print_space(tag, &ks, -1);
	}
	printf("%s-DONE rc=%d keys=%llu written_mib=%.0f\n", tag, rc, (unsigned long long)ks.hi,
	       ks.written / (double)MIB);
	free(buf);
}

/* ---------------------------------------------------------------- reclaim */
static void punch_range(struct keyspace *ks, uint64_t n, const char *tag)
{
	char names[16][64];
	daos_key_t keys[16];
	double s = now();
	int batch = 16, first = 1;
	uint64_t done = 0, errs = 0;
	while (done < n) {
		int k = (n - done) < (uint64_t)batch ? (int)(n - done) : batch;
		for (int i = 0; i < k; i++) {
			keyname(names[i], sizeof(names[i]), ks->pfx, ks->lo + i);
			d_iov_set(&keys[i], names[i], strlen(names[i]));
		}
		double ps = now();
		int rc = daos_obj_punch_dkeys(oh, DAOS_TX_NONE, 0, (unsigned)k, keys, NULL);
		if (first) {
			printf("%s-PUNCH first_call nr=%d rc=%d ms=%.2f\n", tag, k, rc,
			       (now() - ps) * 1e3);
			first = 0;
		}
		if (rc != 0 && k > 1) {
			printf("%s-PUNCH nr=%d rc=%d -> punching one at a time\n", tag, k, rc);
			batch = 1;
			continue;
		}
		if (rc != 0)
			errs++;
		ks->lo += k;
		done += k;
	}
	printf("%s-PUNCH keys=%llu batch=%d errors=%llu punch_s=%.3f per_key_ms=%.3f\n", tag,
	       (unsigned long long)n, batch, (unsigned long long)errs, now() - s,
	       (now() - s) * 1e3 / (double)n);
	fflush(stdout);
}

static void cmd_reclaim(int rounds)
{
	struct keyspace ks = {.pfx = "r-", .len = MIB};
	void *buf = mkbuf(ks.len, 2);
	char tag[32], name[64];
	for (int round = 1; round <= rounds; round++) {
		snprintf(tag, sizeof(tag), "R%d-FILL", round);
		phase(tag);
		fill(&ks, buf, tag);
		/* the free space the pool reports lags (it refreshes every ~2 s): wait until it
		 * stops changing, so the baseline is the full pool, not a stale value */
		uint64_t f0 = 0, f1 = 0, prev = 0;
		space(&f0, &f1, NULL, NULL);
		double ws0 = now();
		for (int i = 0; i < 20; i++) {
			prev = f0 + f1;
			usleep(1000000);
			space(&f0, &f1, NULL, NULL);
			printf("%s-SETTLE t=%.3f free0=%llu free1=%llu tgt_free_min0=%llu\n", tag,
			       rel(), (unsigned long long)f0, (unsigned long long)f1,
			       (unsigned long long)last_min0);
			if (i >= 3 && f0 + f1 == prev)
				break;
		}
		printf("%s-SETTLED after_s=%.1f\n", tag, now() - ws0);
		uint64_t base_free = f0 + f1;
		uint64_t n = (ks.hi - ks.lo) / 2;
		snprintf(tag, sizeof(tag), "R%d", round);
		phase(tag);
		double tp = now();
		punch_range(&ks, n, tag);
		double tpe = now();
		uint64_t punched = n * ks.len;
		printf("%s-PUNCHED t=%.3f punched_mib=%.0f base_free=%llu punch_took_s=%.3f\n", tag,
		       rel(), punched / (double)MIB, (unsigned long long)base_free, tpe - tp);
		/* verify a punched key reads empty */
		{
			unsigned char small[16];
			daos_size_t isz;
			uint32_t nout;
			size_t ilen;
			keyname(name, sizeof(name), ks.pfx, ks.lo - 1);
			int rc = get_arr(name, 0, small, sizeof(small), 1, &isz, &nout, &ilen);
			printf("%s-VERIFY punched key %s fetch rc=%d iod_size=%llu\n", tag, name, rc,
			       (unsigned long long)isz);
		}
		double first_rise = -1, half = -1, ninety = -1, first_ok = -1;
		uint64_t max_gain = 0;
		int ok_writes = 0, fail_writes = 0;
		for (int tick = 0; tick <= 360; tick++) {
			double target = tp + tick * 0.5;
			double d = target - now();
			if (d > 0)
				usleep((useconds_t)(d * 1e6));
			double tt = now() - tp;
			space(&f0, &f1, NULL, NULL);
			/* gain relative to before the punch, corrected for test writes since */
			int64_t gain = (int64_t)(f0 + f1) - (int64_t)base_free +
				       (int64_t)ok_writes * (int64_t)ks.len;
			if (gain > 0 && (uint64_t)gain > max_gain)
				max_gain = gain;
			if (first_rise < 0 && gain > (int64_t)(4 * MIB))
				first_rise = tt;
			if (half < 0 && gain >= (int64_t)(punched / 2))
				half = tt;
			if (ninety < 0 && gain >= (int64_t)(punched * 9 / 10))
				ninety = tt;
			keyname(name, sizeof(name), ks.pfx, ks.hi);
			double ws = now();
			int rc = put_key(name, buf, ks.len);
			double wms = (now() - ws) * 1e3;
			if (rc == 0) {
				ks.hi++;
				ks.written += ks.len;
				ok_writes++;
				if (first_ok < 0)
					first_ok = tt;
			} else {
				fail_writes++;
			}
			printf("%s-TICK since_punch_s=%.2f free0=%llu free1=%llu tgt_free_min0=%llu "
			       "gain_mib=%.1f write_rc=%d write_ms=%.2f\n",
			       tag, tt, (unsigned long long)f0, (unsigned long long)f1,
			       (unsigned long long)last_min0, gain / (double)MIB, rc, wms);
			fflush(stdout);
			/* stop once space is back and writes work, after a while to watch it settle */
			if (ninety >= 0 && first_ok >= 0 && tt > ninety + 10)
				break;
		}
		printf("%s-SUMMARY punched_mib=%.0f punch_took_s=%.3f first_rise_s=%.2f "
		       "half_back_s=%.2f ninety_pct_back_s=%.2f first_write_ok_s=%.2f "
		       "max_gain_mib=%.1f ok_writes=%d failed_writes=%d\n",
		       tag, punched / (double)MIB, tpe - tp, first_rise, half, ninety, first_ok,
		       max_gain / (double)MIB, ok_writes, fail_writes);
		fflush(stdout);
	}
	free(buf);
}

/* ---------------------------------------------------------------- steady */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct keyspace sks = {.pfx = "s-", .len = MIB};
static volatile int stop_flag;
static uint64_t target_live;
static uint64_t w_ok, w_fail, p_ok, p_fail;
static double w_lat_sum, w_fail_lat_sum;

static void *writer(void *arg)
{
	void *buf = arg;
	char name[64];
	uint64_t idx = 0;
	pthread_mutex_lock(&mu);
	idx = sks.hi;
	pthread_mutex_unlock(&mu);
	while (!stop_flag) {
		keyname(name, sizeof(name), sks.pfx, idx);
		double s = now();
		int rc = put_key(name, buf, sks.len);
		double l = now() - s;
		pthread_mutex_lock(&mu);
		if (rc == 0) {
			/* keys are appended in order; a failed key is retried under the same name */
			sks.hi = idx + 1;
			sks.written += sks.len;
			w_ok++;
			w_lat_sum += l;
			idx++;
		} else {
			w_fail++;
			w_fail_lat_sum += l;
			if (w_fail <= 5 || w_fail % 100 == 0)
				printf("ST-WFAIL t=%.3f rc=%d ms=%.2f n=%llu\n", rel(), rc, l * 1e3,
				       (unsigned long long)w_fail);
		}
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static void *puncher(void *arg)
{
	(void)arg;
	char name[64];
	while (!stop_flag) {
		pthread_mutex_lock(&mu);
		uint64_t live = sks.hi - sks.lo, lo = sks.lo;
		pthread_mutex_unlock(&mu);
		if (live <= target_live) {
			usleep(1000);
			continue;
		}
		keyname(name, sizeof(name), sks.pfx, lo);
		int rc = punch(name);
		pthread_mutex_lock(&mu);
		sks.lo++;
		if (rc == 0)
			p_ok++;
		else
			p_fail++;
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static void cmd_steady(int secs, int pct)
{
	void *buf = mkbuf(sks.len, 3);
	phase("ST-FILL");
	fill(&sks, buf, "ST-FILL");
	uint64_t full = sks.hi - sks.lo;
	target_live = full * (uint64_t)pct / 100;
	phase("ST");
	printf("ST-START full_keys=%llu target_live=%llu (%d%%) secs=%d\n",
	       (unsigned long long)full, (unsigned long long)target_live, pct, secs);
	fflush(stdout);
	pthread_t tw, tpn;
	pthread_create(&tpn, NULL, puncher, NULL);
	pthread_create(&tw, NULL, writer, buf);
	double s = now();
	uint64_t lw = 0, lf = 0, lp = 0;
	for (int sec = 1; sec <= secs; sec++) {
		double d = s + sec - now();
		if (d > 0)
			usleep((useconds_t)(d * 1e6));
		uint64_t f0 = 0, f1 = 0;
		space(&f0, &f1, NULL, NULL);
		pthread_mutex_lock(&mu);
		uint64_t cw = w_ok, cf = w_fail, cp = p_ok, live = sks.hi - sks.lo;
		pthread_mutex_unlock(&mu);
		printf("ST-SEC s=%d ok=%llu fail=%llu punched=%llu live=%llu free0=%llu free1=%llu "
		       "tgt_free_min0=%llu\n",
		       sec, (unsigned long long)(cw - lw), (unsigned long long)(cf - lf),
		       (unsigned long long)(cp - lp), (unsigned long long)live,
		       (unsigned long long)f0, (unsigned long long)f1,
		       (unsigned long long)last_min0);
		fflush(stdout);
		lw = cw;
		lf = cf;
		lp = cp;
	}
	stop_flag = 1;
	pthread_join(tw, NULL);
	pthread_join(tpn, NULL);
	double el = now() - s;
	printf("ST-SUMMARY secs=%.1f writes_ok=%llu writes_failed=%llu write_MiB_per_s=%.1f "
	       "fail_pct=%.2f mean_ok_ms=%.2f mean_fail_ms=%.2f punches_ok=%llu punches_failed=%llu\n",
	       el, (unsigned long long)w_ok, (unsigned long long)w_fail, w_ok * 1.0 / el,
	       100.0 * w_fail / (double)(w_ok + w_fail ? w_ok + w_fail : 1),
	       w_ok ? w_lat_sum * 1e3 / w_ok : 0, w_fail ? w_fail_lat_sum * 1e3 / w_fail : 0,
	       (unsigned long long)p_ok, (unsigned long long)p_fail);
	phase("ST-END");
	free(buf);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	t0 = now();
	if (argc >= 2 && strcmp(argv[1], "layout") == 0) {
		cmd_layout();
		return 0;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: %s layout | <pool> <cont> qlat|sem|fill MIB|reclaim ROUNDS|"
				"steady SECS PCT\n",
			argv[0]);
		return 2;
	}
	open_all(argv[1], argv[2]);
	const char *cmd = argv[3];
	if (strcmp(cmd, "qlat") == 0)
		cmd_qlat();
	else if (strcmp(cmd, "sem") == 0)
		cmd_sem();
	else if (strcmp(cmd, "fill") == 0)
		cmd_fill(argc > 4 ? (size_t)atoi(argv[4]) : 1);
	else if (strcmp(cmd, "reclaim") == 0)
		cmd_reclaim(argc > 4 ? atoi(argv[4]) : 2);
	else if (strcmp(cmd, "steady") == 0)
		cmd_steady(argc > 4 ? atoi(argv[4]) : 60, argc > 5 ? atoi(argv[5]) : 90);
	else {
		fprintf(stderr, "unknown command %s\n", cmd);
		return 2;
	}
	phase("end");
	close_all();
	return 0;
}
