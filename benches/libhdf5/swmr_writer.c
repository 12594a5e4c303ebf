/*
 * libhdf5's SWMR writer for `h5chunk-swmr soak --writer c` and `cargo xtask bench --swmr`:
 * the scenarios of benches/src/bin/h5chunk-swmr.rs through the HDF5 C API (Debian's
 * libhdf5 1.10 here), with the same values (a function of the coordinates) and the same
 * protocol: the extent about to be flushed goes to BOUND before each H5Dflush, the final
 * extent to DONE at the end.
 *
 *   swmr_writer PATH SCENARIO N CHUNK_ELEMS DEFLATE PER_FLUSH BOUND DONE MODE [ROWS]
 *
 * ROWS (default 1): rows appended along dimension 0 per append (and per fill step); the
 * benchmark appends a chunk's rows at a time, the chunk-index paper's unit.
 *
 * MODE `swmr` starts SWMR writing (H5Fstart_swmr_write) after creating the dataset, prints
 * `ready` and waits for a line on stdin before appending; MODE `plain` appends at once
 * without SWMR (the benchmark's control). Prints
 * `RESULT appends=ELEMENTS calls=APPENDS flushes=.. seconds=..` (the appends and flushes
 * timed, the close included).
 */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if ((expr) < 0) {                                                                          \
            fprintf(stderr, "swmr_writer: HDF5 call failed: %s\n", #expr);                         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t oracle(int rank, const hsize_t *c) {
    if (rank == 1)
        return (int64_t)(c[0] * 1000003ULL);
    if (rank == 2)
        return (int64_t)(c[0] * 1000003ULL + c[1]);
    return (int64_t)(c[0] * 1000003ULL + c[1] * 1009ULL + c[2]);
}

static void announce(const char *path, int rank, const hsize_t *dims) {
    if (strcmp(path, "-") == 0)
        return; /* the benchmark: no checking readers */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        perror(tmp);
        exit(1);
    }
    for (int i = 0; i < rank; i++)
        fprintf(f, i ? " %llu" : "%llu", (unsigned long long)dims[i]);
    fclose(f);
    if (rename(tmp, path) != 0) {
        perror(path);
        exit(1);
    }
}

/* Write the box start/count of the dataset with its oracle values. */
static void write_box(hid_t d, int rank, const hsize_t *start, const hsize_t *count) {
    hsize_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= count[i];
    int64_t *buf = malloc(n * sizeof *buf);
    hsize_t c[3] = {start[0], rank > 1 ? start[1] : 0, rank > 2 ? start[2] : 0};
    for (hsize_t k = 0; k < n; k++) {
        buf[k] = oracle(rank, c);
        for (int j = rank - 1; j >= 0; j--) {
            if (++c[j] < start[j] + count[j])
                break;
            c[j] = start[j];
        }
    }
    hid_t fs = H5Dget_space(d);
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    hid_t ms = H5Screate_simple(rank, count, NULL);
    CHECK(H5Dwrite(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, buf));
    H5Sclose(ms);
    H5Sclose(fs);
    free(buf);
}

int main(int argc, char **argv) {
    if (argc != 10 && argc != 11) {
        fprintf(stderr, "usage: swmr_writer PATH SCENARIO N CHUNK_ELEMS DEFLATE PER_FLUSH BOUND "
                        "DONE swmr|plain\n");
        return 2;
    }
    const char *path = argv[1], *sc = argv[2], *bound = argv[7], *done = argv[8];
    uint64_t n = strtoull(argv[3], NULL, 10);
    uint64_t e = strtoull(argv[4], NULL, 10);
    int deflate = strcmp(argv[5], "1") == 0;
    uint64_t per_flush = strtoull(argv[6], NULL, 10);
    int swmr = strcmp(argv[9], "swmr") == 0;
    uint64_t rows = argc == 11 ? strtoull(argv[10], NULL, 10) : 1;
    if (rows == 0)
        rows = 1;
    if (e == 0)
        e = 1;
    if (per_flush == 0)
        per_flush = 1;
    uint64_t s = 1;
    while ((s + 1) * (s + 1) <= e)
        s++;
    uint64_t e4 = e / 4 ? e / 4 : 1, e_min4 = e < 4 ? e : 4;

    int rank;
    hsize_t dims[3], max[3], chunk[3];
    enum { DIM0, DIM1, ALT, FILL } grow;
    if (!strcmp(sc, "earray")) {
        rank = 1, grow = DIM0;
        dims[0] = 0, max[0] = H5S_UNLIMITED, chunk[0] = e;
    } else if (!strcmp(sc, "earray2d")) {
        rank = 2, grow = DIM0;
        dims[0] = 0, dims[1] = 8, max[0] = H5S_UNLIMITED, max[1] = 8;
        chunk[0] = e4, chunk[1] = e_min4;
    } else if (!strcmp(sc, "btree2-x")) {
        rank = 2, grow = DIM0;
        dims[0] = 0, dims[1] = 8, max[0] = max[1] = H5S_UNLIMITED;
        chunk[0] = e4, chunk[1] = e_min4;
    } else if (!strcmp(sc, "btree2-y")) {
        rank = 2, grow = DIM1;
        dims[0] = 8, dims[1] = 0, max[0] = max[1] = H5S_UNLIMITED;
        chunk[0] = e_min4, chunk[1] = e4;
    } else if (!strcmp(sc, "btree2-alt")) {
        rank = 2, grow = ALT;
        dims[0] = dims[1] = 1, max[0] = max[1] = H5S_UNLIMITED;
        chunk[0] = chunk[1] = s;
    } else if (!strcmp(sc, "btree2-3d")) {
        rank = 3, grow = DIM0;
        dims[0] = 0, dims[1] = dims[2] = 4, max[0] = max[1] = max[2] = H5S_UNLIMITED;
        chunk[0] = e4, chunk[1] = e < 2 ? e : 2;
        chunk[2] = e / 2 < 1 ? 1 : (e / 2 > 2 ? 2 : e / 2);
    } else if (!strcmp(sc, "farray")) {
        rank = 2, grow = FILL;
        dims[0] = max[0] = (n + 7) / 8, dims[1] = max[1] = 8;
        chunk[0] = e4, chunk[1] = e_min4;
    } else {
        fprintf(stderr, "swmr_writer: unknown scenario %s\n", sc);
        return 2;
    }

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(f);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    CHECK(H5Pset_chunk(dcpl, rank, chunk));
    int64_t fill = -1;
    CHECK(H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &fill));
    if (deflate) {
        CHECK(H5Pset_shuffle(dcpl));
        CHECK(H5Pset_deflate(dcpl, 4));
    }
    hid_t space = H5Screate_simple(rank, dims, max);
    hid_t d = H5Dcreate2(f, "x", H5T_STD_I64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(d);
    H5Sclose(space);
    if (grow != FILL && dims[0] > 0 && dims[1] > 0) {
        hsize_t zero[3] = {0, 0, 0};
        write_box(d, rank, zero, dims);
    }
    CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL));
    hsize_t filled = 0, total_rows = dims[0];
    uint64_t ahead_rows = (per_flush + 7) / 8 + 1;
    hsize_t shown[3];
    if (swmr) {
        CHECK(H5Fstart_swmr_write(f));
        if (grow == FILL) {
            shown[0] = ahead_rows < total_rows ? ahead_rows : total_rows, shown[1] = 8;
            announce(bound, 2, shown);
        } else {
            announce(bound, rank, dims);
        }
        printf("ready\n");
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin))
            return 1;
    }
    double t0 = now();
    uint64_t elements = 0, since = 0, flushes = 0, calls = 0;
    while (elements < n) {
        hsize_t start[3] = {0, 0, 0}, count[3];
        memcpy(count, dims, sizeof dims);
        if (grow == DIM0) {
            start[0] = dims[0];
            count[0] = rows;
            dims[0] += rows;
        } else if (grow == DIM1) {
            start[1] = dims[1];
            count[1] = 1;
            dims[1]++;
        } else if (grow == ALT) {
            if (dims[0] <= dims[1]) {
                start[0] = dims[0], count[0] = 1, dims[0]++;
            } else {
                start[1] = dims[1], count[1] = 1, dims[1]++;
            }
        } else {
            if (filled >= total_rows)
                break;
            hsize_t k = rows < total_rows - filled ? rows : total_rows - filled;
            start[0] = filled, count[0] = k, count[1] = 8;
            filled += k;
        }
        if (grow != FILL)
            CHECK(H5Dset_extent(d, dims));
        write_box(d, rank, start, count);
        hsize_t k = 1;
        for (int i = 0; i < rank; i++)
            k *= count[i];
        elements += k;
        since += k;
        calls++;
        if (since >= per_flush) {
            since = 0;
            if (swmr) {
                if (grow == FILL) {
                    shown[0] = filled + ahead_rows < total_rows ? filled + ahead_rows : total_rows;
                    shown[1] = 8;
                    announce(bound, 2, shown);
                } else {
                    announce(bound, rank, dims);
                }
            }
            CHECK(H5Dflush(d));
            flushes++;
        }
    }
    if (grow == FILL)
        shown[0] = filled, shown[1] = 8;
    else
        memcpy(shown, dims, sizeof dims);
    if (swmr)
        announce(bound, grow == FILL ? 2 : rank, shown);
    CHECK(H5Dflush(d));
    flushes++;
    if (swmr)
        announce(done, grow == FILL ? 2 : rank, shown);
    H5Dclose(d);
    H5Pclose(dcpl);
    CHECK(H5Fclose(f));
    H5Pclose(fapl);
    double secs = now() - t0;
    printf("RESULT appends=%llu calls=%llu flushes=%llu seconds=%.6f\n",
           (unsigned long long)elements, (unsigned long long)calls, (unsigned long long)flushes,
           secs);
    return 0;
}
