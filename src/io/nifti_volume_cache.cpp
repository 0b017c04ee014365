// Byte-bounded LRU of whole NIfTI voxel data and the parsed headers, shared by the reader threads
// (nifti_volume_cache.hpp).
#include "nifti_volume_cache.hpp"

#include "imflow/io/nifti.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <future>
#include <list>
#include <map>
#include <mutex>

namespace imflow {

namespace {
struct FileKey {
  std::string path;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  // The file's last 8 bytes (a gzip stream's CRC-32 and length of the data): a file rewritten in
  // place within the file system's timestamp granularity is told apart too.
  uint64_t tail = 0;
  bool operator==(const FileKey&) const = default;
};

FileKey key_of(const std::filesystem::path& path) {
  FileKey key{path.string()};
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    key.device = info.st_dev;
    key.inode = info.st_ino;
    key.size = info.st_size;
    key.mtime_ns = int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec;
    key.ctime_ns = int64_t{info.st_ctim.tv_sec} * 1000000000 + info.st_ctim.tv_nsec;
  }
  if (const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    if (key.size >= 8 && ::pread(fd, &key.tail, sizeof key.tail, key.size - 8) != sizeof key.tail) key.tail = 0;
    ::close(fd);
  }
  return key;
}

using Volume = std::shared_ptr<const NiftiVolumeBytes>;

struct Entry {
  FileKey key;
  uint64_t bytes = 0;
  std::shared_future<Volume> data;
  bool read_from = false;  // false: prefetched and not asked for yet
};

struct Cache {
  std::mutex mutex;
  std::list<Entry> entries;  // most recently used first
  uint64_t used = 0;
  uint64_t budget = uint64_t{1} << 30;
};

Cache& cache() {
  static Cache instance;
  return instance;
}
}  // namespace

void set_nifti_cache_bytes(uint64_t bytes) {
  Cache& c = cache();
  const std::lock_guard lock(c.mutex);
  c.budget = bytes;
  c.entries.clear();
  c.used = 0;
}

uint64_t nifti_cache_bytes() {
  Cache& c = cache();
  const std::lock_guard lock(c.mutex);
  return c.budget;
}

namespace {
enum class Claim { no_room, found, claimed };

// Under the cache's lock: `data` becomes the entry of `key`, moved to the front when present
// (found); otherwise a new entry fed by `promise` (claimed: the caller loads it) after least
// recently used entries are dropped to make room. A read drops any; a prefetch only entries that
// have been read from (never another prefetch's work), and claims nothing when that is not enough.
Claim find_or_claim(Cache& c, const FileKey& key, uint64_t data_bytes, bool prefetch, std::promise<Volume>& promise,
                    std::shared_future<Volume>& data) {
  const std::lock_guard lock(c.mutex);
  for (auto it = c.entries.begin(); it != c.entries.end(); ++it) {
    if (it->key == key) {
      c.entries.splice(c.entries.begin(), c.entries, it);
      data = c.entries.front().data;
      if (!prefetch) c.entries.front().read_from = true;
      return Claim::found;
    }
  }
  if (data_bytes > c.budget) return Claim::no_room;
  auto droppable = [&](const Entry& entry) { return !prefetch || entry.read_from; };
  uint64_t can_free = 0;
  for (const Entry& entry : c.entries) can_free += droppable(entry) ? entry.bytes : 0;
  if (c.used - can_free + data_bytes > c.budget) return Claim::no_room;
  for (auto it = c.entries.end(); c.used + data_bytes > c.budget && it != c.entries.begin();) {
    --it;
    if (droppable(*it)) {
      c.used -= it->bytes;
      it = c.entries.erase(it);
    }
  }
  data = promise.get_future().share();
  c.entries.push_front(Entry{key, data_bytes, data, !prefetch});
  c.used += data_bytes;
  return Claim::claimed;
}

// The entry of `path` (found or claimed and loaded here); an invalid future when there is no room.
std::shared_future<Volume> entry_of(const std::filesystem::path& path, uint64_t data_bytes, bool prefetch,
                                    const std::function<NiftiVolumeBytes()>& load) {
  std::promise<Volume> promise;
  std::shared_future<Volume> data;
  if (find_or_claim(cache(), key_of(path), data_bytes, prefetch, promise, data) == Claim::claimed) {
    try {  // other threads asking meanwhile wait in data.get()
      promise.set_value(std::make_shared<const NiftiVolumeBytes>(load()));
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  }
  return data;
}
}  // namespace

Volume cached_nifti_volume(const std::filesystem::path& path, uint64_t data_bytes,
                           const std::function<NiftiVolumeBytes()>& load) {
  const std::shared_future<Volume> data = entry_of(path, data_bytes, false, load);
  return data.valid() ? data.get() : nullptr;
}

std::shared_ptr<const NiftiHeader> cached_nifti_header(const std::filesystem::path& path,
                                                       const std::function<NiftiHeader()>& parse) {
  struct Headers {
    std::mutex mutex;
    std::map<std::string, std::pair<FileKey, std::shared_ptr<const NiftiHeader>>> entries;
  };
  static Headers headers;
  const FileKey key = key_of(path);
  {
    const std::lock_guard lock(headers.mutex);
    const auto found = headers.entries.find(key.path);
    if (found != headers.entries.end() && found->second.first == key) return found->second.second;
  }
  auto header = std::make_shared<const NiftiHeader>(parse());  // a file changed meanwhile has a new key next time
  const std::lock_guard lock(headers.mutex);
  if (headers.entries.size() >= 4096) headers.entries.clear();  // a bound; headers are a few hundred bytes
  headers.entries[key.path] = {key, header};
  return header;
}

bool prefetch_nifti_volume(const std::filesystem::path& path, uint64_t data_bytes,
                           const std::function<NiftiVolumeBytes()>& load) {
  return entry_of(path, data_bytes, true, load).valid();
}

}  // namespace imflow
