/*
 * libhdf5's side of `cargo xtask bench --workloads` (see benches/src/bin/h5chunk-workloads.rs):
 * the same operations on the same values through the HDF5 C API with default property lists,
 * printing `RESULT impl=libhdf5 workload=W durability=default seconds=S check=C`.
 *
 *   workloads_bench WORKLOAD DIR DURABILITY N...   (DURABILITY ignored: libhdf5 never fsyncs)
 */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define LOGGER_CHUNK 1024
#define LOGGER_FLUSH 100
#define WINDOW 64

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if ((expr) < 0) {                                                                          \
            fprintf(stderr, "workloads_bench: %s failed\n", #expr);                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static float bulk_value(uint64_t r, uint64_t c, uint64_t side) {
    return (float)((r * side + c) % 1000003ULL);
}

static uint64_t arg(int argc, char **argv, int i) {
    if (i >= argc) {
        fprintf(stderr, "workloads_bench: missing number %d\n", i);
        exit(2);
    }
    return strtoull(argv[i], NULL, 10);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: workloads_bench WORKLOAD DIR DURABILITY N...\n");
        return 2;
    }
    const char *w = argv[1], *dir = argv[2];
    char path[4096], bulk[4096];
    snprintf(bulk, sizeof bulk, "%s/workloads_libhdf5_bulk.h5", dir);
    double s = 0, check = 0;
    if (strcmp(w, "logger") == 0) {
        uint64_t n = arg(argc, argv, 4);
        snprintf(path, sizeof path, "%s/workloads_libhdf5_logger.h5", dir);
        double t0 = now();
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        CHECK(f);
        hsize_t dims[2] = {0, 8}, max[2] = {H5S_UNLIMITED, 8}, chunk[2] = {LOGGER_CHUNK, 8};
        hid_t space = H5Screate_simple(2, dims, max);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        CHECK(H5Pset_chunk(dcpl, 2, chunk));
        hid_t d = H5Dcreate2(f, "log", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        CHECK(d);
        hsize_t one[2] = {1, 8};
        hid_t mem = H5Screate_simple(2, one, NULL);
        double row[8];
        for (uint64_t i = 0; i < n; i++) {
            for (int k = 0; k < 8; k++)
                row[k] = (double)i + (double)k;
            hsize_t size[2] = {i + 1, 8}, start[2] = {i, 0};
            CHECK(H5Dset_extent(d, size));
            hid_t fs = H5Dget_space(d);
            CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, one, NULL));
            CHECK(H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, fs, H5P_DEFAULT, row));
            H5Sclose(fs);
            if ((i + 1) % LOGGER_FLUSH == 0)
                CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL));
        }
        H5Sclose(mem);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(space);
        CHECK(H5Fclose(f));
        s = now() - t0;
        check = 0;
        for (int k = 0; k < 8; k++)
            check += (double)(n - 1) + (double)k;
        remove(path);
    } else if (strcmp(w, "frames") == 0) {
        uint64_t frames = arg(argc, argv, 4), side = arg(argc, argv, 5);
        snprintf(path, sizeof path, "%s/workloads_libhdf5_frames.h5", dir);
        uint16_t *frame = malloc(sizeof(uint16_t) * side * side);
        double t0 = now();
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        CHECK(f);
        hsize_t dims[3] = {0, side, side}, max[3] = {H5S_UNLIMITED, side, side},
                chunk[3] = {1, side, side};
        hid_t space = H5Screate_simple(3, dims, max);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        CHECK(H5Pset_chunk(dcpl, 3, chunk));
        CHECK(H5Pset_shuffle(dcpl));
        CHECK(H5Pset_deflate(dcpl, 4));
        hid_t d = H5Dcreate2(f, "frames", H5T_STD_U16LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        CHECK(d);
        hid_t mem = H5Screate_simple(3, chunk, NULL);
        for (uint64_t i = 0; i < frames; i++) {
            for (uint64_t y = 0; y < side; y++)
                for (uint64_t x = 0; x < side; x++)
                    frame[y * side + x] = (uint16_t)((i * 7 + y * 3 + x) & 0x0fff);
            hsize_t size[3] = {i + 1, side, side}, start[3] = {i, 0, 0};
            CHECK(H5Dset_extent(d, size));
            hid_t fs = H5Dget_space(d);
            CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, chunk, NULL));
            CHECK(H5Dwrite(d, H5T_NATIVE_UINT16, mem, fs, H5P_DEFAULT, frame));
            H5Sclose(fs);
        }
        H5Sclose(mem);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(space);
        CHECK(H5Fclose(f));
        s = now() - t0;
        /* The last frame as written, summed (the read-back check is h5chunk's and h5py's). */
        for (uint64_t k = 0; k < side * side; k++)
            check += frame[k];
        free(frame);
        remove(path);
    } else if (strcmp(w, "bulk") == 0) {
        uint64_t side = arg(argc, argv, 4), c = arg(argc, argv, 5);
        float *data = malloc(sizeof(float) * side * side);
        if (!data)
            return 1;
        for (uint64_t r = 0; r < side; r++)
            for (uint64_t k = 0; k < side; k++)
                data[r * side + k] = bulk_value(r, k, side);
        double t0 = now();
        hid_t f = H5Fcreate(bulk, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        CHECK(f);
        hsize_t dims[2] = {side, side}, chunk[2] = {c, c};
        hid_t space = H5Screate_simple(2, dims, NULL);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        CHECK(H5Pset_chunk(dcpl, 2, chunk));
        hid_t d = H5Dcreate2(f, "data", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        CHECK(d);
        CHECK(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(space);
        CHECK(H5Fclose(f));
        s = now() - t0;
        free(data);
        struct stat st;
        if (stat(bulk, &st) == 0)
            check = (double)((uint64_t)st.st_size >> 20);
    } else if (strcmp(w, "read") == 0) {
        uint64_t side = arg(argc, argv, 4);
        float *buf = malloc(sizeof(float) * side * side);
        if (!buf)
            return 1;
        double t0 = now();
        hid_t f = H5Fopen(bulk, H5F_ACC_RDONLY, H5P_DEFAULT);
        CHECK(f);
        hid_t d = H5Dopen2(f, "data", H5P_DEFAULT);
        CHECK(d);
        CHECK(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
        H5Dclose(d);
        H5Fclose(f);
        s = now() - t0;
        for (uint64_t r = 0; r < side; r++)
            for (uint64_t k = 0; k < side; k++) {
                if (buf[r * side + k] != bulk_value(r, k, side)) {
                    fprintf(stderr, "workloads_bench: the bulk file reads back different values\n");
                    return 1;
                }
                check += buf[r * side + k];
            }
        free(buf);
    } else if (strcmp(w, "windows") == 0) {
        uint64_t count = arg(argc, argv, 4), side = arg(argc, argv, 5);
        float buf[WINDOW * WINDOW];
        uint64_t state = 42;
        double t0 = now();
        hid_t f = H5Fopen(bulk, H5F_ACC_RDONLY, H5P_DEFAULT);
        CHECK(f);
        hid_t d = H5Dopen2(f, "data", H5P_DEFAULT);
        CHECK(d);
        hid_t fs = H5Dget_space(d);
        hsize_t win[2] = {WINDOW, WINDOW};
        hid_t mem = H5Screate_simple(2, win, NULL);
        for (uint64_t i = 0; i < count; i++) {
            hsize_t start[2];
            start[0] = lcg(&state) % (side - WINDOW + 1);
            start[1] = lcg(&state) % (side - WINDOW + 1);
            CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, win, NULL));
            CHECK(H5Dread(d, H5T_NATIVE_FLOAT, mem, fs, H5P_DEFAULT, buf));
            check += (double)buf[0] + (double)buf[WINDOW * WINDOW - 1];
        }
        H5Sclose(mem);
        H5Sclose(fs);
        H5Dclose(d);
        H5Fclose(f);
        s = now() - t0;
    } else if (strcmp(w, "clean") == 0) {
        remove(bulk);
    } else {
        fprintf(stderr, "workloads_bench: unknown workload %s\n", w);
        return 2;
    }
    printf("RESULT impl=libhdf5 workload=%s durability=default seconds=%.6f check=%.17g\n", w, s,
           check);
    return 0;
}
