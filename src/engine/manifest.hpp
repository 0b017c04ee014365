// OUT/manifest.jsonl: one JSON line per finished item (appended, flushed), so `imflow run --resume`
// can skip items whose input is unchanged and whose outputs are intact, and redo the rest.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "imflow/io/companion.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

// What identifies a file's content. Outputs (written by us, usually small): size and the CRC-32
// (zlib) of every byte. Inputs (possibly GB, read at full speed): size, inode, mtime and ctime,
// which reading nothing still catches any rewrite (ctime cannot be set back by cp -p or rsync -t;
// a false "changed" only costs a redo).
struct Fingerprint {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t inode = 0;
  bool has_crc = false;
  uint32_t crc32 = 0;
  // An input's other files (InputFormat::data_files: the .img of a .hdr), each stat'ed.
  std::vector<Fingerprint> data_files;
  nlohmann::json to_json() const;
  static Fingerprint from_json(const nlohmann::json& json);
  bool same_content(const Fingerprint& other) const;
};
// Size and CRC-32 of the whole file. Throws std::runtime_error when the file cannot be read.
Fingerprint fingerprint_file(const std::filesystem::path& path);
// Size, inode, mtime and ctime only (no read). Throws std::runtime_error when stat fails.
Fingerprint stat_fingerprint(const std::filesystem::path& path);

class Manifest {
 public:
  // `config_key` identifies the processing (steps, formats): a manifest written with another is not
  // resumed from. With `resume`, reads OUT/manifest.jsonl (a torn last line is ignored), keeps the
  // valid-looking entries and rewrites the file compactly; otherwise starts a new one.
  // `file_name`: this process's manifest; MPI ranks each write their own ("manifest.rank3.jsonl")
  // and, on resume, read every OUT/manifest*.jsonl, since another rank may have done an item.
  // `companions`: the input's companions (InputConfig::companions()); the files they name for an
  // item are fingerprinted beside its input (an EXTNAME names the input's own file).
  Manifest(std::filesystem::path output_dir, std::string config_key, bool resume, bool sync,
           const std::string& file_name = "manifest.jsonl", std::vector<CompanionSpec> companions = {});
  ~Manifest();
  Manifest(const Manifest&) = delete;
  Manifest& operator=(const Manifest&) = delete;

  const std::filesystem::path& path() const { return path_; }
  size_t previous_entries() const { return previous_.size(); }

  // The previous summary record of `ref` when the item finished ok before, its input and its
  // companion files are unchanged (stat fingerprints) and every output still has its recorded
  // size and CRC-32; else null.
  nlohmann::json done_before(const ItemRef& ref);
  // Append the line of a finished item (thread-safe); `record` is its summary record.
  // Throws OutputError when the line cannot be written.
  void append(const ItemRef& ref, const std::vector<std::filesystem::path>& outputs, const nlohmann::json& record);

 private:
  using Key = std::tuple<std::string, int, int64_t>;  // relative file, hdu, plane
  static Key key_of(const ItemRef& ref);
  Fingerprint input_fingerprint(const std::filesystem::path& path);
  // The companion files of `ref` with their fingerprints: [{role, path, size, ...}], in the order
  // of companions_. Throws std::runtime_error when one cannot be stat'ed.
  nlohmann::json companion_fingerprints(const ItemRef& ref);
  void write_line(const std::string& line);
  // Read one manifest file into previous_; returns the entries of that file (for rewriting).
  std::vector<nlohmann::json> load(const std::filesystem::path& file);

  std::filesystem::path dir_, path_;
  std::string config_key_;
  std::vector<CompanionSpec> companions_;  // those that name files of their own
  bool sync_ = false;
  int fd_ = -1;
  std::mutex mutex_;  // the file and the maps
  std::map<Key, nlohmann::json> previous_;
  std::unordered_map<std::string, std::shared_ptr<Fingerprint>> inputs_;  // computed once per input file
};

// Remove temporary outputs ('.NAME.tmp-PID-N') left under `dir` by processes that no longer run
// (a SIGKILL or a second Ctrl-C); returns how many were removed.
int remove_stale_temporaries(const std::filesystem::path& dir);

}  // namespace imflow
