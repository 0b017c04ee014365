// Page cache -> GPU for FITS-sized files, on N threads: is a CPU copy needed at all?
//  pread:    pread in 256 KiB chunks into the thread's pinned buffer (as imflow's reader), then
//            cudaMemcpyAsync to the device (the engine's upload);
//  register: mmap the file read-only, cudaHostRegister(ReadOnly) its pages, cudaMemcpyAsync
//            straight from the page cache, unregister, munmap (no CPU copy of the pixels);
//  pageable: mmap + cudaMemcpyAsync from pageable memory (the driver's own staging copies).
// Each thread has its own stream and device buffer and goes through all files in turn.
// Prints JSON: ms per file and aggregate GB/s per method and thread count.
// Usage: zero_copy_upload DIR [FILES] [MIB]  (DIR gets FILES files of MIB MiB after a 2880-byte header)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "check.cuh"

namespace {
constexpr size_t kHeaderBytes = 2880;
constexpr size_t kChunkBytes = size_t{256} << 10;
size_t g_data_bytes = 0;

void fail(const char* what) {
  std::perror(what);
  std::exit(1);
}

struct ThreadState {
  cudaStream_t stream{};
  void* device = nullptr;
  char* pinned = nullptr;
  double register_ms = 0, unregister_ms = 0;
};

void upload_pread(const std::string& path, ThreadState& s) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) fail("open");
  for (size_t done = 0; done < g_data_bytes;) {
    const size_t want = std::min(kChunkBytes, g_data_bytes - done);
    const ssize_t got = pread(fd, s.pinned + done, want, static_cast<off_t>(kHeaderBytes + done));
    if (got <= 0) fail("pread");
    done += static_cast<size_t>(got);
  }
  close(fd);
  CHECK(cudaMemcpyAsync(s.device, s.pinned, g_data_bytes, cudaMemcpyHostToDevice, s.stream));
  CHECK(cudaStreamSynchronize(s.stream));
}

void upload_mapped(const std::string& path, ThreadState& s, bool registered) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) fail("open");
  const size_t bytes = kHeaderBytes + g_data_bytes;
  void* map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) fail("mmap");
  close(fd);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t mapped = (bytes + page - 1) / page * page;
  const auto t0 = std::chrono::steady_clock::now();
  if (registered) CHECK(cudaHostRegister(map, mapped, cudaHostRegisterReadOnly));
  const auto t1 = std::chrono::steady_clock::now();
  CHECK(cudaMemcpyAsync(s.device, static_cast<char*>(map) + kHeaderBytes, g_data_bytes, cudaMemcpyHostToDevice, s.stream));
  CHECK(cudaStreamSynchronize(s.stream));
  const auto t2 = std::chrono::steady_clock::now();
  if (registered) CHECK(cudaHostUnregister(map));
  const auto t3 = std::chrono::steady_clock::now();
  munmap(map, bytes);
  s.register_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
  s.unregister_ms += std::chrono::duration<double, std::milli>(t3 - t2).count();
}

void make_files(const std::string& dir, int files) {
  std::vector<char> data(kHeaderBytes + g_data_bytes);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 2654435761u >> 24);
  for (int f = 0; f < files; ++f) {
    const std::string path = dir + "/f" + std::to_string(f) + ".fits";
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && static_cast<size_t>(st.st_size) == data.size()) continue;
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) fail("write");
    close(fd);
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string dir = argv[1];
  const int files = argc > 2 ? std::atoi(argv[2]) : 64;
  g_data_bytes = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 16) << 20;
  make_files(dir, files);
  int read_only_supported = 0;
  CHECK(cudaDeviceGetAttribute(&read_only_supported, cudaDevAttrHostRegisterReadOnlySupported, 0));
  std::printf("{\"files\": %d, \"mib_per_file\": %zu, \"host_register_read_only_supported\": %d, \"results\": [\n", files,
              g_data_bytes >> 20, read_only_supported);
  std::vector<std::string> paths;
  for (int f = 0; f < files; ++f) paths.push_back(dir + "/f" + std::to_string(f) + ".fits");
  const char* names[] = {"pread+pinned+H2D", "mmap+register+H2D", "mmap+pageable H2D"};
  bool first = true;
  for (int threads : {1, 4, 8, 16})
    for (int method = 0; method < 3; ++method) {
      if (method == 1 && !read_only_supported) continue;
      std::vector<ThreadState> states(threads);
      for (auto& s : states) {
        CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
        CHECK(cudaMalloc(&s.device, g_data_bytes));
        CHECK(cudaHostAlloc(reinterpret_cast<void**>(&s.pinned), g_data_bytes, cudaHostAllocPortable));
      }
      auto one = [&](int file, ThreadState& s) {
        method == 0 ? upload_pread(paths[file], s) : upload_mapped(paths[file], s, method == 1);
      };
      for (int f = 0; f < files; ++f) one(f, states[f % threads]);  // warm: page cache, first calls
      for (auto& s : states) s.register_ms = s.unregister_ms = 0;
      const int rounds = 2;
      std::atomic<int> next{0};
      const int total = rounds * files;
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          for (int i; (i = next.fetch_add(1)) < total;) one(i % files, states[t]);
        });
      for (auto& th : pool) th.join();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double reg = 0, unreg = 0;
      for (auto& s : states) reg += s.register_ms, unreg += s.unregister_ms;
      std::printf("%s {\"method\": \"%s\", \"threads\": %d, \"ms_per_file_per_thread\": %.2f, \"aggregate_gb_per_s\": %.2f, "
                  "\"register_ms\": %.2f, \"unregister_ms\": %.2f}",
                  first ? "" : ",\n", names[method], threads, 1e3 * seconds * threads / total,
                  static_cast<double>(g_data_bytes) * total / seconds / 1e9, reg / total, unreg / total);
      std::fflush(stdout);
      first = false;
      for (auto& s : states) {
        CHECK(cudaStreamDestroy(s.stream));
        CHECK(cudaFree(s.device));
        CHECK(cudaFreeHost(s.pinned));
      }
    }
  std::printf("\n]}\n");
}
