// How FITS reading scales with threads on this machine (the streaming engine's read stage):
// N threads each read a 4096^2 float32 FITS image (page cache) K times, through CFITSIO
// (fits_read_pixll TFLOAT, as imflow does) and through pread + byte swap, into malloc'd or pinned
// (cudaHostAlloc, as imflow's work items) memory. Prints JSON: ms per read and aggregate GB/s.
// Usage: read_scaling FILE.fits   (FILE is made first, 4096^2 BITPIX -32, when it does not exist)
#include <cuda_runtime.h>
#include <fcntl.h>
#include <fitsio.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {
long long g_pixels = 0, g_data_start = 0;

void read_cfitsio(const char* path, float* out) {
  int status = 0;
  fitsfile* file = nullptr;
  fits_open_diskfile(&file, path, READONLY, &status);
  long long first[2] = {1, 1};
  int any_null = 0;
  fits_read_pixll(file, TFLOAT, first, g_pixels, nullptr, out, &any_null, &status);
  fits_close_file(file, &status);
  if (status != 0) std::fprintf(stderr, "CFITSIO error %d\n", status), std::exit(1);
}

void read_pread(const char* path, float* out) {
  const int fd = open(path, O_RDONLY);
  const size_t bytes = static_cast<size_t>(g_pixels) * 4;
  char* p = reinterpret_cast<char*>(out);
  for (size_t got = 0; got < bytes;) {
    const ssize_t r = pread(fd, p + got, bytes - got, g_data_start + static_cast<off_t>(got));
    if (r <= 0) std::fprintf(stderr, "pread failed\n"), std::exit(1);
    got += static_cast<size_t>(r);
  }
  close(fd);
  auto* u = reinterpret_cast<uint32_t*>(out);
  for (long long i = 0; i < g_pixels; ++i) u[i] = __builtin_bswap32(u[i]);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int status = 0;
  fitsfile* file = nullptr;
  if (access(argv[1], R_OK) != 0) {
    std::vector<float> sky(4096 * 4096);
    for (size_t i = 0; i < sky.size(); ++i) sky[i] = 100.0f + static_cast<float>(i % 977) * 0.01f;
    long axes[2] = {4096, 4096};
    fits_create_file(&file, argv[1], &status);
    fits_create_img(file, FLOAT_IMG, 2, axes, &status);
    fits_write_img(file, TFLOAT, 1, static_cast<long long>(sky.size()), sky.data(), &status);
    fits_close_file(file, &status);
    if (status != 0) return 1;
  }
  fits_open_diskfile(&file, argv[1], READONLY, &status);
  long long naxes[2] = {0, 0}, header = 0, end = 0;
  int bitpix = 0, naxis = 0;
  fits_get_img_paramll(file, 2, &bitpix, &naxis, naxes, &status);
  fits_get_hduaddrll(file, &header, &g_data_start, &end, &status);
  fits_close_file(file, &status);
  g_pixels = naxes[0] * naxes[1];
  std::printf("{\"file\": \"%s\", \"bitpix\": %d, \"pixels\": %lld, \"results\": [\n", argv[1], bitpix, g_pixels);
  const int reads = 6;
  bool first = true;
  for (int method = 0; method < 2; ++method)
    for (int pinned = 0; pinned < 2; ++pinned)
      for (int threads : {1, 2, 4, 8, 16}) {
        std::vector<float*> buffers(threads);
        for (auto& b : buffers) {
          if (pinned) cudaHostAlloc(reinterpret_cast<void**>(&b), g_pixels * 4, cudaHostAllocPortable | cudaHostAllocMapped);
          else b = static_cast<float*>(std::malloc(g_pixels * 4));
          method == 0 ? read_cfitsio(argv[1], b) : read_pread(argv[1], b);  // warm: faults, page cache
        }
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
          pool.emplace_back([&, t] {
            for (int r = 0; r < reads; ++r) method == 0 ? read_cfitsio(argv[1], buffers[t]) : read_pread(argv[1], buffers[t]);
          });
        for (auto& th : pool) th.join();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%s {\"method\": \"%s\", \"destination\": \"%s\", \"threads\": %d, \"ms_per_read\": %.2f, \"aggregate_gb_per_s\": %.2f}",
                    first ? "" : ",\n", method == 0 ? "cfitsio" : "pread+bswap", pinned ? "pinned" : "malloc", threads,
                    1e3 * s / reads, static_cast<double>(g_pixels) * 4 * threads * reads / s / 1e9);
        std::fflush(stdout);
        first = false;
        for (auto& b : buffers) pinned ? (void)cudaFreeHost(b) : std::free(b);
      }
  std::printf("\n]}\n");
}
