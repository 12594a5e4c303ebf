/*
 * libhdf5's side of `cargo xtask bench`: the same operations as
 * benches/src/bin/h5chunk-bench.rs, through the HDF5 C API, printing the same CURVE and
 * RESULT lines (impl=libhdf5). Scenario geometry: see the table in benches/src/lib.rs.
 *
 *   append_bench SCENARIO INDEX N CHUNK_BYTES DIR [STOP_AFTER]
 *
 * STOP_AFTER (`append` or `lookup`) ends the run after that phase, printing an APPEND or
 * LOOKUP line; the phases are the functions bench_append_phase and bench_lookup_phase, which
 * `cargo xtask bench --instructions` counts under callgrind (--toggle-collect).
 *
 * Per append: H5Dset_extent by one chunk, then H5Dwrite of the new chunk through a
 * hyperslab; H5Fclose is inside the timed region. Then reopen, read one element from each of
 * K distinct random chunks (the sequence of benches/src/lib.rs `sample`), read everything,
 * and report the file size and the chunk index's bytes (H5O meta_size.obj.index_size).
 * libhdf5 exposes no metadata-read counter, so reads_per_lookup is `na`.
 */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CURVE_POINTS 50
#define LOOKUPS 20000
#define COLD_LOOKUPS 200
#define DATASET "/data"
#define SLAB_CHUNKS 16384

static const char *scenario, *index_name;

static void unavailable(const char *why) {
    printf("UNAVAILABLE impl=libhdf5 reason=%s\n", why);
    fprintf(stderr, "append_bench %s %s: %s\n", scenario, index_name, why);
    exit(1);
}

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if ((expr) < 0)                                                                            \
            unavailable("HDF5 call failed: " #expr);                                               \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_state;
static uint64_t splitmix(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int is(const char *a, const char *b) { return strcmp(a, b) == 0; }

static int rank;
static hsize_t chunk[2];

/* Scaled coordinates of the chunk append i writes, as element offsets. */
static void start_of(uint64_t i, hsize_t *start) {
    uint64_t s[2];
    if (is(scenario, "s1") || is(scenario, "fixed")) {
        s[0] = i;
    } else if (is(scenario, "s2x") || is(scenario, "s3x")) {
        s[0] = i, s[1] = 0;
    } else if (is(scenario, "s2y") || is(scenario, "s3y")) {
        s[0] = 0, s[1] = i;
    } else { /* s3alt: the staircase */
        s[0] = i / 2, s[1] = (i + 1) / 2;
    }
    for (int d = 0; d < rank; d++)
        start[d] = s[d] * chunk[d];
}

/* The dimension append i extends, or -1 for the fixed scenario. */
static int grows(uint64_t i) {
    if (is(scenario, "fixed"))
        return -1;
    if (is(scenario, "s2y") || is(scenario, "s3y"))
        return 1;
    if (is(scenario, "s3alt"))
        return (int)(i % 2);
    return 0;
}

static unsigned char marker(uint64_t i) { return (unsigned char)(i % 251 + 1); }

static hid_t elem_type(size_t elem) {
    switch (elem) {
    case 1: return H5T_STD_U8LE;
    case 2: return H5T_STD_U16LE;
    case 4: return H5T_STD_U32LE;
    default: return H5T_STD_U64LE;
    }
}

static void read_one(hid_t dset, hid_t type, uint64_t i, size_t elem) {
    hsize_t start[2], count[2] = {1, 1};
    unsigned char buf[8] = {0};
    start_of(i, start);
    hid_t fs = H5Dget_space(dset);
    hid_t ms = H5Screate_simple(1, count, NULL);
    CHECK(fs);
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    CHECK(H5Dread(dset, type, ms, fs, H5P_DEFAULT, buf));
    H5Sclose(ms);
    H5Sclose(fs);
    (void)elem;
    if (buf[0] != marker(i)) {
        char why[128];
        snprintf(why, sizeof why, "chunk %llu reads back 0x%x, wrote 0x%x",
                 (unsigned long long)i, buf[0], marker(i));
        unavailable(why);
    }
}

/* 1. Append n chunks, then close the file: the timed region, and what
 * `xtask bench --instructions` counts per append. */
static __attribute__((noinline)) double bench_append_phase(hid_t file, hid_t dset, hid_t type,
                                                           uint64_t n, uint64_t chunk_bytes,
                                                           hsize_t *dims, uint64_t *curve_i,
                                                           double *curve_t, int *points) {
    unsigned char *data = malloc(chunk_bytes);
    hsize_t count[2] = {chunk[0], chunk[1]};
    hid_t mem = H5Screate_simple(rank, count, NULL);
    uint64_t every = n / CURVE_POINTS ? n / CURVE_POINTS : 1;
    double t0 = now();
    for (uint64_t i = 0; i < n; i++) {
        int d = grows(i);
        if (d >= 0) {
            dims[d] += chunk[d];
            CHECK(H5Dset_extent(dset, dims));
        }
        hsize_t start[2];
        start_of(i, start);
        hid_t fs = H5Dget_space(dset);
        CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
        memset(data, marker(i), chunk_bytes);
        CHECK(H5Dwrite(dset, type, mem, fs, H5P_DEFAULT, data));
        H5Sclose(fs);
        if ((i + 1) % every == 0 && i + 1 < n && *points < CURVE_POINTS + 1) {
            curve_i[*points] = i + 1;
            curve_t[(*points)++] = now() - t0;
        }
    }
    H5Sclose(mem);
    H5Dclose(dset);
    CHECK(H5Fclose(file));
    free(data);
    return now() - t0;
}

/* 2. Warm lookups: one element of each of k chunks, what `--instructions` counts per lookup. */
static __attribute__((noinline)) double bench_lookup_phase(hid_t dset, hid_t type,
                                                           const uint64_t *order, uint64_t k,
                                                           size_t elem) {
    double t1 = now();
    for (uint64_t j = 0; j < k; j++)
        read_one(dset, type, order[j], elem);
    return now() - t1;
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: append_bench SCENARIO INDEX N CHUNK_BYTES DIR [append|lookup]\n");
        return 2;
    }
    const char *stop_after = argc == 7 ? argv[6] : "";
    scenario = argv[1];
    index_name = argv[2];
    uint64_t n = strtoull(argv[3], NULL, 10);
    uint64_t chunk_bytes = strtoull(argv[4], NULL, 10);
    const char *dir = argv[5];
    if (n == 0 || chunk_bytes == 0)
        unavailable("N and CHUNK_BYTES must be at least 1");
    if (is(index_name, "skiplist"))
        unavailable("the skip list is h5chunk's own index; libhdf5 has none");
    if (!(is(scenario, "s1") || is(scenario, "s2x") || is(scenario, "s2y") ||
          is(scenario, "s3x") || is(scenario, "s3y") || is(scenario, "s3alt") ||
          is(scenario, "fixed")))
        unavailable("unknown scenario");

    /* Chunk geometry: as benches/src/lib.rs Geometry::new. */
    size_t elem = chunk_bytes % 8 == 0 ? 8 : chunk_bytes % 4 == 0 ? 4 : chunk_bytes % 2 == 0 ? 2 : 1;
    rank = (is(scenario, "s1") || is(scenario, "fixed")) ? 1 : 2;
    chunk[0] = chunk_bytes / elem;
    chunk[1] = 1;
    hsize_t dims[2], maxd[2];
    if (is(scenario, "s1")) {
        dims[0] = 0, maxd[0] = H5S_UNLIMITED;
    } else if (is(scenario, "fixed")) {
        dims[0] = maxd[0] = n * chunk[0];
    } else if (is(scenario, "s2x")) {
        dims[0] = 0, dims[1] = chunk[1], maxd[0] = H5S_UNLIMITED, maxd[1] = chunk[1];
    } else if (is(scenario, "s2y")) {
        dims[0] = chunk[0], dims[1] = 0, maxd[0] = chunk[0], maxd[1] = H5S_UNLIMITED;
    } else if (is(scenario, "s3y")) {
        dims[0] = chunk[0], dims[1] = 0, maxd[0] = maxd[1] = H5S_UNLIMITED;
    } else { /* s3x, s3alt */
        dims[0] = 0, dims[1] = chunk[1], maxd[0] = maxd[1] = H5S_UNLIMITED;
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/libhdf5-%s-%s.h5", dir, scenario, index_name);

    /* Bounds that give the index, as libhdf5 chooses (H5D__layout_set_latest_indexing). */
    H5F_libver_t low = is(index_name, "btree1") ? H5F_LIBVER_EARLIEST : H5F_LIBVER_LATEST;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_libver_bounds(fapl, low, H5F_LIBVER_LATEST));
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    CHECK(H5Pset_chunk(dcpl, rank, chunk));
    if (is(index_name, "implicit"))
        CHECK(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
    hid_t type = elem_type(elem);

    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(file);
    hid_t space = H5Screate_simple(rank, dims, maxd);
    hid_t dset = H5Dcreate2(file, DATASET, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(dset);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Pclose(fapl);

    H5D_chunk_index_t kind;
    CHECK(H5Dget_chunk_index_type(dset, &kind));
    const char *got = kind == H5D_CHUNK_IDX_BTREE ? "btree1"
                      : kind == H5D_CHUNK_IDX_EARRAY ? "earray"
                      : kind == H5D_CHUNK_IDX_FARRAY ? "farray"
                      : kind == H5D_CHUNK_IDX_BT2    ? "btree2"
                      : kind == H5D_CHUNK_IDX_NONE   ? "implicit"
                      : kind == H5D_CHUNK_IDX_SINGLE ? "single"
                                                     : "other";
    if (!is(got, index_name)) {
        char why[128];
        snprintf(why, sizeof why, "asked for a %s index, libhdf5 chose %s", index_name, got);
        unavailable(why);
    }

    /* 1. Append, close included. */
    uint64_t *curve_i = malloc(sizeof(uint64_t) * (CURVE_POINTS + 2));
    double *curve_t = malloc(sizeof(double) * (CURVE_POINTS + 2));
    int points = 0;
    double append_s =
        bench_append_phase(file, dset, type, n, chunk_bytes, dims, curve_i, curve_t, &points);
    curve_i[points] = n;
    curve_t[points++] = append_s;
    if (is(stop_after, "append")) {
        printf("APPEND impl=libhdf5 scenario=%s index=%s n=%llu append_s=%.6f\n", scenario,
               index_name, (unsigned long long)n, append_s);
        remove(path);
        return 0;
    }

    FILE *fp = fopen(path, "rb");
    if (!fp)
        unavailable("cannot stat the file");
    fseek(fp, 0, SEEK_END);
    long file_bytes = ftell(fp);
    fclose(fp);

    /* 2. Lookups on distinct random chunks (the cold phase of h5chunk has no libhdf5 twin). */
    uint64_t cold = COLD_LOOKUPS < n / 2 ? COLD_LOOKUPS : n / 2;
    uint64_t k = LOOKUPS < n - cold ? LOOKUPS : n - cold;
    uint64_t *order = malloc(sizeof(uint64_t) * n);
    for (uint64_t j = 0; j < n; j++)
        order[j] = j;
    rng_state = 42;
    for (uint64_t j = 0; j < k + cold; j++) {
        uint64_t r = j + splitmix() % (n - j);
        uint64_t t = order[j];
        order[j] = order[r];
        order[r] = t;
    }
    file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(file);
    dset = H5Dopen2(file, DATASET, H5P_DEFAULT);
    CHECK(dset);
    double lookup_s = bench_lookup_phase(dset, type, order, k, elem);
    if (is(stop_after, "lookup")) {
        printf("LOOKUP impl=libhdf5 scenario=%s index=%s n=%llu k=%llu lookup_s=%.6f\n",
               scenario, index_name, (unsigned long long)n, (unsigned long long)k, lookup_s);
        H5Dclose(dset);
        H5Fclose(file);
        remove(path);
        return 0;
    }

    H5O_info_t info;
    CHECK(H5Oget_info2(dset, &info, H5O_INFO_META_SIZE));
    hsize_t meta = info.meta_size.obj.index_size;
    H5Dclose(dset);
    H5Fclose(file);

    /* 4. Sequential read on a fresh handle. */
    file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(file);
    dset = H5Dopen2(file, DATASET, H5P_DEFAULT);
    CHECK(dset);
    double t2 = now();
    if (is(scenario, "s3alt")) {
        for (uint64_t i = 0; i < n; i++)
            read_one(dset, type, i, elem);
    } else {
        /* In slabs of SLAB_CHUNKS chunks along the growing dimension, as h5chunk-bench: one
         * H5Dread of millions of chunks makes libhdf5 build a per-chunk map of gigabytes. */
        int d = grows(0) < 0 ? 0 : grows(0);
        unsigned char *slab = malloc(SLAB_CHUNKS * chunk_bytes);
        for (uint64_t first = 0; first < n; first += SLAB_CHUNKS) {
            uint64_t c = n - first < SLAB_CHUNKS ? n - first : SLAB_CHUNKS;
            hsize_t start[2] = {0, 0}, cnt[2] = {chunk[0], chunk[1]};
            start[d] = first * chunk[d];
            cnt[d] = c * chunk[d];
            hsize_t nelem = c * (chunk_bytes / elem);
            hid_t fs = H5Dget_space(dset);
            hid_t ms = H5Screate_simple(1, &nelem, NULL);
            CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL));
            CHECK(H5Dread(dset, type, ms, fs, H5P_DEFAULT, slab));
            H5Sclose(ms);
            H5Sclose(fs);
            if (slab[0] != marker(first) || slab[c * chunk_bytes - 1] != marker(first + c - 1))
                unavailable("sequential read returned other bytes than were written");
        }
        free(slab);
    }
    double seq_s = now() - t2;
    H5Dclose(dset);
    H5Fclose(file);

    printf("CURVE impl=libhdf5 scenario=%s index=%s n=%llu chunk_bytes=%llu points=", scenario,
           index_name, (unsigned long long)n, (unsigned long long)chunk_bytes);
    for (int p = 0; p < points; p++)
        printf("%s%llu:%.6f", p ? "," : "", (unsigned long long)curve_i[p], curve_t[p]);
    printf("\n");
    printf("RESULT impl=libhdf5 scenario=%s index=%s n=%llu chunk_bytes=%llu append_s=%.6f "
           "appends_per_s=%.1f lookup_per_s=%.1f reads_per_lookup=na seq_read_s=%.6f "
           "file_bytes=%ld meta_bytes_per_chunk=%.2f\n",
           scenario, index_name, (unsigned long long)n, (unsigned long long)chunk_bytes,
           append_s, (double)n / append_s, (double)k / lookup_s, seq_s, file_bytes,
           (double)meta / (double)n);
    remove(path);
    free(order);
    free(curve_i);
    free(curve_t);
    return 0;
}
