/*
 * libhdf5's side of `cargo xtask bench --bulk`: the same operations as
 * benches/src/bin/h5chunk-bulk.rs through the HDF5 C API, printing the same RESULT line
 * (impl=libhdf5). libhdf5 serialises every call under its global lock, so it runs on one thread.
 *
 *   bulk_bench DIR MIB FILTER        (FILTER: none | deflate)
 *
 * A 2-D float32 dataset of MIB MiB in 1 MiB chunks (256 rows of 1,024 values); with deflate,
 * shuffle then deflate level 4. Write: create, one H5Dwrite per chunk row slab, H5Fclose, timed
 * together. Read: open, one H5Dread per slab, each checked against the values written.
 */
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COLS 1024
#define ROWS_PER_CHUNK 256

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if ((expr) < 0) {                                                                          \
            fprintf(stderr, "bulk_bench: %s failed\n", #expr);                                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static float wave[COLS];

/* Row r's values: the same floats as benches/src/lib.rs `bulk::row_values`. */
static void row_values(uint64_t r, float *out) {
    float drift = (float)(r % 4096) * 0.125f;
    for (int c = 0; c < COLS; c++)
        out[c] = wave[c] + drift;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long peak_rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            v = strtol(line + 6, NULL, 10);
    fclose(f);
    return v;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: bulk_bench DIR MIB none|deflate\n");
        return 2;
    }
    const char *dir = argv[1];
    uint64_t chunks = strtoull(argv[2], NULL, 10);
    int deflate = strcmp(argv[3], "deflate") == 0;
    uint64_t rows = chunks * ROWS_PER_CHUNK;
    for (int c = 0; c < COLS; c++)
        wave[c] = sinf((float)c * 0.01f) * 100.0f;
    char path[4096];
    snprintf(path, sizeof path, "%s/bulk_libhdf5_%s.h5", dir, argv[3]);
    float *buf = malloc(sizeof(float) * COLS * ROWS_PER_CHUNK);
    float *want = malloc(sizeof(float) * COLS * ROWS_PER_CHUNK);
    if (!buf || !want)
        return 1;

    double t0 = now();
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(file);
    hsize_t dims[2] = {rows, COLS}, chunk[2] = {ROWS_PER_CHUNK, COLS};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    CHECK(H5Pset_chunk(dcpl, 2, chunk));
    if (deflate) {
        CHECK(H5Pset_shuffle(dcpl));
        CHECK(H5Pset_deflate(dcpl, 4));
    }
    hid_t ds = H5Dcreate2(file, "data", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(ds);
    hid_t mem = H5Screate_simple(2, chunk, NULL);
    for (uint64_t s = 0; s < chunks; s++) {
        for (uint64_t r = 0; r < ROWS_PER_CHUNK; r++)
            row_values(s * ROWS_PER_CHUNK + r, buf + r * COLS);
        hsize_t start[2] = {s * ROWS_PER_CHUNK, 0};
        CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, chunk, NULL));
        CHECK(H5Dwrite(ds, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, buf));
    }
    CHECK(H5Dclose(ds));
    CHECK(H5Pclose(dcpl));
    CHECK(H5Fclose(file));
    double write_s = now() - t0;
    long rss_write = peak_rss_kib();

    double t1 = now();
    file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(file);
    ds = H5Dopen2(file, "data", H5P_DEFAULT);
    CHECK(ds);
    hid_t fspace = H5Dget_space(ds);
    for (uint64_t s = 0; s < chunks; s++) {
        hsize_t start[2] = {s * ROWS_PER_CHUNK, 0};
        CHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, chunk, NULL));
        CHECK(H5Dread(ds, H5T_NATIVE_FLOAT, mem, fspace, H5P_DEFAULT, buf));
        for (uint64_t r = 0; r < ROWS_PER_CHUNK; r++)
            row_values(s * ROWS_PER_CHUNK + r, want + r * COLS);
        if (memcmp(buf, want, sizeof(float) * COLS * ROWS_PER_CHUNK) != 0) {
            fprintf(stderr, "bulk_bench: slab %llu reads back different values\n",
                    (unsigned long long)s);
            return 1;
        }
    }
    CHECK(H5Sclose(fspace));
    CHECK(H5Dclose(ds));
    CHECK(H5Fclose(file));
    double read_s = now() - t1;
    FILE *f = fopen(path, "rb");
    long long file_bytes = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        file_bytes = ftell(f);
        fclose(f);
    }
    remove(path);
    printf("RESULT impl=libhdf5 filter=%s threads=1 mib=%llu write_s=%.6f read_s=%.6f "
           "file_bytes=%lld peak_rss_write_kib=%ld peak_rss_kib=%ld\n",
           argv[3], (unsigned long long)chunks, write_s, read_s, file_bytes, rss_write,
           peak_rss_kib());
    free(buf);
    free(want);
    return 0;
}
