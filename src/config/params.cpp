// ParamReader: typed, range-checked access to YAML parameters with located errors.
#include "imflow/params.hpp"

#include <cmath>
#include <sstream>

#include "imflow/errors.hpp"

namespace imflow {

std::string yaml_location(const std::string& file, const YAML::Node& node) {
  std::ostringstream out;
  out << file;
  if (node.IsDefined() && node.Mark().line >= 0) {
    out << ':' << node.Mark().line + 1 << ':' << node.Mark().column + 1;
  }
  out << ": ";
  return out.str();
}

ParamReader::ParamReader(YAML::Node node, std::string where, std::string file, YAML::Node located_at)
    : node_(std::move(node)), located_at_(std::move(located_at)), where_(std::move(where)), file_(std::move(file)) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
    fail(node_, "", "expected a map of parameters");
  }
  if (node_.IsMap()) {
    for (const auto& entry : node_) {
      if (entry.first.IsScalar() && entry.first.Mark().line >= 0) key_marks_.emplace(entry.first.Scalar(), entry.first.Mark());
    }
  }
}

void ParamReader::fail(const YAML::Node& node, const std::string& key, const std::string& why) const {
  const auto positioned = [](const YAML::Node& candidate) { return candidate.IsDefined() && candidate.Mark().line >= 0; };
  std::string name = where_;
  if (!key.empty()) name += (name.empty() ? "" : ".") + key;
  const auto key_mark = key_marks_.find(key);
  if (!positioned(node) && key_mark != key_marks_.end()) {  // a key without a value: at the key
    throw ConfigError(file_ + ":" + std::to_string(key_mark->second.line + 1) + ":" +
                      std::to_string(key_mark->second.column + 1) + ": " + name + ": " + why);
  }
  const YAML::Node& at = positioned(node) ? node : positioned(node_) ? node_ : located_at_;
  throw ConfigError(yaml_location(file_, at) + name + ": " + why);
}

bool ParamReader::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined() && !node_[key].IsNull();
}

YAML::Node ParamReader::lookup(const std::string& key) {
  used_.insert(key);
  if (!node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node value = node_[key];
  if (value.IsDefined() && value.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return value;
}

double ParamReader::number(const std::string& key, double fallback, double min, double max) {
  YAML::Node value = lookup(key);
  if (!value.IsDefined()) {
    resolved_[key] = fallback;
    return fallback;
  }
  double result = 0.0;
  if (!value.IsScalar() || !YAML::convert<double>::decode(value, result) || std::isnan(result)) {
    fail(value, key, "expected a number, got '" + (value.IsScalar() ? value.Scalar() : "a collection") + "'");
  }
  if (result < min || result > max) {
    std::ostringstream why;
    why << "value " << result << " is out of range [" << min << ", " << max << "]";
    fail(value, key, why.str());
  }
  resolved_[key] = result;
  return result;
}

int64_t ParamReader::integer(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  YAML::Node value = lookup(key);
  if (!value.IsDefined()) {
    resolved_[key] = fallback;
    return fallback;
  }
  int64_t result = 0;
  if (!value.IsScalar() || !YAML::convert<int64_t>::decode(value, result)) {
    fail(value, key, "expected an integer, got '" + (value.IsScalar() ? value.Scalar() : "a collection") + "'");
  }
  if (result < min || result > max) {
    fail(value, key, "value " + std::to_string(result) + " is out of range [" + std::to_string(min) + ", " +
                         std::to_string(max) + "]");
  }
  resolved_[key] = result;
  return result;
}

bool ParamReader::boolean(const std::string& key, bool fallback) {
  YAML::Node value = lookup(key);
  bool result = fallback;
  if (value.IsDefined() && (!value.IsScalar() || !YAML::convert<bool>::decode(value, result))) {
    fail(value, key, "expected true or false");
  }
  resolved_[key] = result;
  return result;
}

std::string ParamReader::text(const std::string& key, const std::string& fallback) {
  YAML::Node value = lookup(key);
  if (value.IsDefined() && !value.IsScalar()) fail(value, key, "expected a string");
  std::string result = value.IsDefined() ? value.Scalar() : fallback;
  resolved_[key] = result;
  return result;
}

std::string ParamReader::choice(const std::string& key, const std::string& fallback,
                                std::initializer_list<const char*> allowed) {
  YAML::Node value = lookup(key);
  std::string result = text(key, fallback);
  std::string options;
  for (const char* option : allowed) {
    if (result == option) return result;
    options += std::string(options.empty() ? "" : ", ") + option;
  }
  fail(value, key, "'" + result + "' is not one of: " + options);
}

std::vector<std::string> ParamReader::text_list(const std::string& key, std::vector<std::string> fallback) {
  YAML::Node value = lookup(key);
  std::vector<std::string> result = std::move(fallback);
  if (value.IsDefined()) {
    if (value.IsScalar()) {
      result = {value.Scalar()};
    } else if (value.IsSequence()) {
      result.clear();
      for (const auto& element : value) {
        if (!element.IsScalar()) fail(element, key, "expected a list of strings");
        result.push_back(element.Scalar());
      }
    } else {
      fail(value, key, "expected a string or a list of strings");
    }
  }
  resolved_[key] = result;
  return result;
}

std::vector<double> ParamReader::number_list(const std::string& key, std::vector<double> fallback) {
  YAML::Node value = lookup(key);
  std::vector<double> result = std::move(fallback);
  if (value.IsDefined()) {
    if (!value.IsSequence()) fail(value, key, "expected a list of numbers");
    result.clear();
    for (const auto& element : value) {
      double number = 0.0;
      if (!element.IsScalar() || !YAML::convert<double>::decode(element, number)) {
        fail(element, key, "expected a list of numbers");
      }
      result.push_back(number);
    }
  }
  resolved_[key] = result;
  return result;
}

YAML::Node ParamReader::child(const std::string& key) {
  YAML::Node value = lookup(key);
  if (value.IsDefined()) resolved_[key] = value;
  return value;
}

void ParamReader::finish() const {
  if (!node_.IsMap()) return;
  for (const auto& entry : node_) {
    const std::string key = entry.first.Scalar();
    if (!used_.count(key)) {
      std::string known;
      for (const auto& name : used_) known += (known.empty() ? "" : ", ") + name;
      fail(entry.first, key, "unknown key (known keys: " + (known.empty() ? "none" : known) + ")");
    }
  }
}

}  // namespace imflow
