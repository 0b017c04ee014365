// Reads a step's (or section's) YAML parameters with type and range checks. Every error names
// the key with its line and column; keys nobody asked for are reported by finish().
#pragma once
#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace imflow {

class ParamReader {
 public:
  // `where` is the context for messages, e.g. "steps[2].background"; `file` the YAML file name;
  // `located_at` the node messages point to when `node` has no position (a step given by name only).
  ParamReader(YAML::Node node, std::string where, std::string file, YAML::Node located_at = {});

  double number(const std::string& key, double fallback,
                double min = -std::numeric_limits<double>::infinity(),
                double max = std::numeric_limits<double>::infinity());
  int64_t integer(const std::string& key, int64_t fallback,
                  int64_t min = std::numeric_limits<int64_t>::min(),
                  int64_t max = std::numeric_limits<int64_t>::max());
  bool boolean(const std::string& key, bool fallback);
  std::string text(const std::string& key, const std::string& fallback);
  std::string choice(const std::string& key, const std::string& fallback,
                     std::initializer_list<const char*> allowed);
  std::vector<std::string> text_list(const std::string& key, std::vector<std::string> fallback);
  std::vector<double> number_list(const std::string& key, std::vector<double> fallback);
  bool has(const std::string& key) const;
  // A sub-map (empty node when absent); the key counts as used.
  YAML::Node child(const std::string& key);

  // Throws ConfigError for any key that was present but never read.
  void finish() const;

  // Throws ConfigError located at `node` (or, when it has no position, such as a key with no value,
  // at the key, else at this section).
  [[noreturn]] void fail(const YAML::Node& node, const std::string& key, const std::string& why) const;

  // Every parameter read so far with its value or default: what `imflow validate` prints.
  const YAML::Node& resolved() const { return resolved_; }

  const std::string& where() const { return where_; }
  const std::string& file() const { return file_; }

 private:
  YAML::Node lookup(const std::string& key);
  YAML::Node node_;
  YAML::Node located_at_;
  // Each key's position, taken when the reader is made: iterating node_ after lookups (yaml-cpp's
  // operator[] adds pending entries) reads freed memory.
  std::map<std::string, YAML::Mark> key_marks_;
  std::string where_;
  std::string file_;
  std::set<std::string> used_;
  YAML::Node resolved_{YAML::NodeType::Map};
};

// "FILE:LINE:COL: " for a node (1-based line and column), or "FILE: " when the node has no mark.
std::string yaml_location(const std::string& file, const YAML::Node& node);

}  // namespace imflow
