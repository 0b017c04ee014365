// Manifest: JSON-lines record of finished items, resume validation and stale temporary cleanup.
#include "manifest.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>

#include "file_crc32.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/io/written_text.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
constexpr int kManifestVersion = 1;
// Error texts can quote bytes of a corrupt file; file names need not be UTF-8.
constexpr auto kReplace = nlohmann::json::error_handler_t::replace;

std::string hex32(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}
}  // namespace

nlohmann::json Fingerprint::to_json() const {
  nlohmann::json json = {{"size", size}, {"mtime_ns", mtime_ns}};
  if (has_crc) {
    json["crc32"] = hex32(crc32);
  } else {
    json["ctime_ns"] = ctime_ns;
    json["inode"] = inode;
  }
  for (const Fingerprint& data : data_files) json["data_files"].push_back(data.to_json());
  return json;
}

Fingerprint Fingerprint::from_json(const nlohmann::json& json) {
  Fingerprint f;
  f.size = json.at("size").get<uint64_t>();
  f.mtime_ns = json.value("mtime_ns", int64_t{0});
  f.ctime_ns = json.value("ctime_ns", int64_t{0});
  f.inode = json.value("inode", uint64_t{0});
  f.has_crc = json.contains("crc32");
  if (f.has_crc) f.crc32 = static_cast<uint32_t>(std::stoul(json.at("crc32").get<std::string>(), nullptr, 16));
  if (const auto data = json.find("data_files"); data != json.end()) {
    for (const auto& file : *data) f.data_files.push_back(from_json(file));
  }
  return f;
}

bool Fingerprint::same_content(const Fingerprint& other) const {
  const bool same = has_crc && other.has_crc ? size == other.size && crc32 == other.crc32
                                             : size == other.size && mtime_ns == other.mtime_ns &&
                                                   ctime_ns == other.ctime_ns && inode == other.inode;
  if (!same || data_files.size() != other.data_files.size()) return false;
  for (size_t i = 0; i < data_files.size(); ++i) {
    if (!data_files[i].same_content(other.data_files[i])) return false;
  }
  return true;
}

Fingerprint stat_fingerprint(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error(path.string() + ": cannot stat: " + std::strerror(errno));
  Fingerprint f;
  f.size = static_cast<uint64_t>(st.st_size);
  f.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  f.ctime_ns = int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
  f.inode = static_cast<uint64_t>(st.st_ino);
  return f;
}

Fingerprint fingerprint_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int saved = errno;
    ::close(fd);
    throw std::runtime_error(path.string() + ": cannot stat: " + std::strerror(saved));
  }
  Fingerprint f;
  f.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  try {
    const FileCrc crc = crc32_of_file(fd, static_cast<uint64_t>(st.st_size), path);
    f.size = crc.size;
    f.crc32 = crc.crc32;
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  f.has_crc = true;
  return f;
}

namespace {
// An output's fingerprint without its mtime: from the text this thread just wrote to it, or the
// CRC its writer computed, when noted (written_text.hpp), else from the file.
Fingerprint output_fingerprint(const fs::path& path) {
  Fingerprint f;
  if (const std::string_view* text = written_text(path)) {
    f.size = text->size();
    f.crc32 = crc32_update(0, *text);
  } else if (const std::optional<WrittenCrc> noted = take_written_crc(path)) {
    f.size = noted->size;
    f.crc32 = noted->crc32;
  } else {
    return fingerprint_file(path);
  }
  f.has_crc = true;
  return f;
}
}  // namespace

Manifest::Key Manifest::key_of(const ItemRef& ref) { return {ref.relative.generic_string(), ref.hdu, ref.plane}; }

std::vector<nlohmann::json> Manifest::load(const fs::path& file) {
  std::vector<nlohmann::json> entries;
  std::ifstream in(file);
  std::string line;
  size_t torn = 0;
  while (std::getline(in, line)) {
    nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
    if (entry.is_discarded() || !entry.is_object()) {  // a torn (partly written) line
      ++torn;
      continue;
    }
    if (entry.contains("imflow_manifest")) {
      if (entry.value("config", "") != config_key_) {
        throw std::runtime_error(file.string() + ": written by a different pipeline (its steps, output formats, "
                                 "input.nifti_axis or companion images changed); run without --resume to start over");
      }
      continue;
    }
    try {
      Key key{entry.at("file").get<std::string>(), entry.at("hdu").get<int>(), entry.at("plane").get<int64_t>()};
      if (entry.at("status").get<std::string>() == "ok") {
        previous_[key] = entry;
        entries.push_back(std::move(entry));
      } else {
        previous_.erase(key);  // failed items are retried
      }
    } catch (const std::exception&) {
      ++torn;
    }
  }
  if (torn > 0) spdlog::warn("{}: ignored {} unreadable line(s) (torn by a crash)", file.string(), torn);
  return entries;
}

Manifest::Manifest(fs::path output_dir, std::string config_key, bool resume, bool sync, const std::string& file_name,
                   std::vector<CompanionSpec> companions)
    : dir_(std::move(output_dir)), path_(dir_ / file_name), config_key_(std::move(config_key)), sync_(sync) {
  for (CompanionSpec& spec : companions) {
    if (spec.present() && !spec.names_extension()) companions_.push_back(std::move(spec));
  }
  const nlohmann::json header = {{"imflow_manifest", kManifestVersion}, {"config", config_key_}};
  std::string kept = header.dump(-1, ' ', false, kReplace) + "\n";
  if (resume) {
    // Other processes' manifests (MPI ranks) first, this one's last, so its own lines win.
    std::vector<fs::path> others;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(dir_, error)) {
      const std::string name = entry.path().filename().string();
      if (name != file_name && name.rfind("manifest", 0) == 0 && name.size() > 6 &&
          name.compare(name.size() - 6, 6, ".jsonl") == 0) {
        others.push_back(entry.path());
      }
    }
    std::sort(others.begin(), others.end());
    for (const auto& other : others) load(other);
    if (!fs::exists(path_) && others.empty()) {
      spdlog::warn("{}: no manifest to resume from; processing every item", path_.string());
    }
    for (const auto& entry : load(path_)) kept += entry.dump(-1, ' ', false, kReplace) + "\n";
    spdlog::info("{}: {} finished item(s) recorded; they are checked and skipped when still valid", dir_.string(),
                 previous_.size());
    // Temporaries of dead processes can only be told apart on this machine: not under MPI.
    if (file_name == "manifest.jsonl") {
      const int removed = remove_stale_temporaries(dir_);
      if (removed > 0) spdlog::info("{}: removed {} stale temporary file(s)", dir_.string(), removed);
    }
  }
  // A compact copy (header + kept entries) replaces the old file atomically, then lines are appended.
  write_text_atomic(path_, kept);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) throw OutputError(path_.string() + ": cannot open for appending: " + std::strerror(errno));
}

Manifest::~Manifest() {
  if (fd_ >= 0) {
    ::fdatasync(fd_);
    ::close(fd_);
  }
}

Fingerprint Manifest::input_fingerprint(const fs::path& path) {
  std::shared_ptr<Fingerprint> cached;
  {
    std::lock_guard lock(mutex_);
    auto found = inputs_.find(path.string());
    if (found != inputs_.end()) return *found->second;
  }
  // Taken outside the lock; two planes of one file racing here just stat it twice.
  cached = std::make_shared<Fingerprint>(stat_fingerprint(path));
  if (const InputFormat* format = input_format_for(path); format != nullptr && format->data_files != nullptr) {
    for (const fs::path& data : format->data_files(path)) cached->data_files.push_back(stat_fingerprint(data));
  }
  std::lock_guard lock(mutex_);
  inputs_.emplace(path.string(), cached);
  return *cached;
}

nlohmann::json Manifest::companion_fingerprints(const ItemRef& ref) {
  nlohmann::json files = nlohmann::json::array();
  for (const CompanionSpec& spec : companions_) {
    const fs::path path = companion_path(ref, spec);
    nlohmann::json described = input_fingerprint(path).to_json();
    described["role"] = spec.role;
    described["path"] = path.generic_string();
    files.push_back(std::move(described));
  }
  return files;
}

nlohmann::json Manifest::done_before(const ItemRef& ref) {
  nlohmann::json entry;
  {
    std::lock_guard lock(mutex_);
    auto found = previous_.find(key_of(ref));
    if (found == previous_.end()) return nullptr;
    entry = found->second;
  }
  try {
    if (!input_fingerprint(ref.path).same_content(Fingerprint::from_json(entry.at("input")))) {
      spdlog::info("{}: input changed since the previous run; processing it again", ref.path.string());
      return nullptr;
    }
    // Compared by role and content: the same files reached by another path are unchanged.
    const nlohmann::json companions = companion_fingerprints(ref);
    const nlohmann::json recorded = entry.value("companions", nlohmann::json::array());
    for (size_t i = 0; i < companions.size(); ++i) {
      const nlohmann::json& now = companions[i];
      if (i >= recorded.size() || recorded[i].value("role", "") != now.at("role").get<std::string>() ||
          !Fingerprint::from_json(now).same_content(Fingerprint::from_json(recorded[i]))) {
        spdlog::info("{}: its {} {} changed since the previous run; processing it again", ref.path.string(),
                     now.at("role").get<std::string>(), now.at("path").get<std::string>());
        return nullptr;
      }
    }
    for (const auto& output : entry.at("outputs")) {
      const fs::path file = dir_ / output.at("path").get<std::string>();
      std::error_code error;
      const Fingerprint expected = Fingerprint::from_json(output);
      if (fs::file_size(file, error) != expected.size || error || !fingerprint_file(file).same_content(expected)) {
        spdlog::info("{}: output {} missing or changed; processing the item again", ref.path.string(),
                     file.string());
        return nullptr;
      }
    }
  } catch (const std::exception& error) {
    spdlog::info("{}: cannot check the previous result ({}); processing it again", ref.path.string(), error.what());
    return nullptr;
  }
  return entry.value("record", nlohmann::json::object());
}

void Manifest::write_line(const std::string& line) {
  std::lock_guard lock(mutex_);
  if (const int failure = write_all(fd_, line); failure != 0) {
    throw OutputError(path_.string() + ": cannot append: " + std::strerror(failure));
  }
  if (sync_ && ::fdatasync(fd_) != 0) throw OutputError(path_.string() + ": fdatasync failed: " + std::strerror(errno));
}

void Manifest::append(const ItemRef& ref, const std::vector<fs::path>& outputs, const nlohmann::json& record) {
  const auto [file, hdu, plane] = key_of(ref);
  nlohmann::json entry = {{"file", file}, {"hdu", hdu}, {"plane", plane}, {"status", record.value("status", "failed")}};
  if (entry["status"] == "ok") {
    entry["input"] = input_fingerprint(ref.path).to_json();
    if (!companions_.empty()) entry["companions"] = companion_fingerprints(ref);
    nlohmann::json files = nlohmann::json::array();
    for (const fs::path& output : outputs) {
      nlohmann::json described = output_fingerprint(output).to_json();
      described.erase("mtime_ns");
      described["path"] = output.lexically_relative(dir_).generic_string();
      files.push_back(std::move(described));
    }
    entry["outputs"] = std::move(files);
  }
  // The record goes last, spliced in as text: a copy of it into `entry` would cost as much as its dump.
  std::string line = entry.dump(-1, ' ', false, kReplace);
  line.pop_back();  // the entry's closing brace
  line += ",\"record\":";
  line += record.dump(-1, ' ', false, kReplace);
  line += "}\n";
  write_line(line);
}

namespace {
// ".NAME.tmp-PID-N" (AtomicOutput's temporary names) -> PID, else -1.
long temporary_owner(const std::string& name) {
  const size_t at = name.rfind(".tmp-");
  if (name.empty() || name[0] != '.' || at == std::string::npos || at == 0) return -1;
  const size_t dash = name.find('-', at + 5);
  const auto digits = [](const std::string& text) {
    return !text.empty() && text.size() < 12 && text.find_first_not_of("0123456789") == std::string::npos;
  };
  if (dash == std::string::npos || !digits(name.substr(at + 5, dash - at - 5)) || !digits(name.substr(dash + 1))) {
    return -1;
  }
  return std::stol(name.substr(at + 5, dash - at - 5));
}
}  // namespace

int remove_stale_temporaries(const fs::path& dir) {
  int removed = 0;
  std::error_code error;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, error), end;
       !error && it != end; it.increment(error)) {
    const long pid = temporary_owner(it->path().filename().string());
    if (pid <= 0 || !it->is_regular_file(error)) continue;
    if (pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running
    std::error_code ignored;
    if (fs::remove(it->path(), ignored)) ++removed;
  }
  return removed;
}

}  // namespace imflow
