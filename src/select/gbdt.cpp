// LightGBM text model: loading (plain or gzip), parsing with errors that name line and token,
// structural checks, and the exact raw-score prediction.
//
// Layout of the text: a header of key=value lines up to the first "Tree=<i>" line; then one block
// of key=value lines per tree; then "end of trees" and sections (importances, parameters) that the
// prediction does not need.
#include "tilepick/gbdt.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include "core/text_file.hpp"
#include "select/gbdt_internal.hpp"
#include "tilepick/features.hpp"

namespace tilepick {
namespace {

// Decision-type bits of LightGBM's tree nodes.
constexpr std::uint8_t kCategoricalMask = 1, kDefaultLeftMask = 2;
enum MissingType : std::uint8_t { kMissingNone = 0, kMissingZero = 1, kMissingNaN = 2 };

struct Line {
  std::string_view text;
  int number;  // 1-based
};

struct Cursor {
  std::string source;
  std::vector<Line> lines;
  std::size_t pos = 0;

  [[noreturn]] void fail(const Line& l, const std::string& token, const std::string& msg) const {
    throw ParseError(token, source + ":" + std::to_string(l.number) + ": " + msg);
  }
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::vector<std::string_view> split_spaces(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

template <class T>
T parse_number(const Cursor& cur, const Line& l, std::string_view key, std::string_view tok) {
  T v{};
  auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec != std::errc() || end != tok.data() + tok.size())
    cur.fail(l, std::string(tok), "'" + std::string(key) + "': '" + std::string(tok) + "' is not a number");
  return v;
}

// One block of key=value lines, keyed by name, with the line each came from.
using Block = std::map<std::string_view, Line, std::less<>>;

const Line& require(const Cursor& cur, const Block& b, std::string_view key, const Line& where) {
  auto it = b.find(key);
  if (it == b.end()) cur.fail(where, std::string(key), "missing '" + std::string(key) + "='");
  return it->second;
}

std::string_view value_of(const Line& l) { return l.text.substr(l.text.find('=') + 1); }

template <class T>
std::vector<T> parse_list(const Cursor& cur, const Line& l, std::string_view key, std::size_t expect) {
  std::vector<T> out;
  for (auto tok : split_spaces(value_of(l))) out.push_back(parse_number<T>(cur, l, key, tok));
  if (expect != std::size_t(-1) && out.size() != expect)
    cur.fail(l, std::string(key), "'" + std::string(key) + "' has " + std::to_string(out.size()) +
                                      " values, expected " + std::to_string(expect));
  return out;
}

// Key=value lines until a blank line, "Tree=" or "end of trees" (not consumed).
Block read_block(Cursor& cur) {
  Block b;
  while (cur.pos < cur.lines.size()) {
    const Line& l = cur.lines[cur.pos];
    if (l.text.empty() || l.text.starts_with("Tree=") || l.text == "end of trees") break;
    auto eq = l.text.find('=');
    if (eq == std::string_view::npos) {
      if (b.empty()) {  // the first header line names the model type ("tree")
        ++cur.pos;
        continue;
      }
      cur.fail(l, std::string(l.text), "expected key=value, got '" + std::string(l.text) + "'");
    }
    std::string_view key = l.text.substr(0, eq);
    if (!b.emplace(key, l).second) cur.fail(l, std::string(key), "'" + std::string(key) + "' given twice");
    ++cur.pos;
  }
  return b;
}

GbdtModel::Tree parse_tree(const Cursor& cur, const Block& b, const Line& head, int num_features) {
  GbdtModel::Tree t;
  const int leaves = parse_number<int>(cur, require(cur, b, "num_leaves", head), "num_leaves",
                                       value_of(require(cur, b, "num_leaves", head)));
  if (leaves < 1) cur.fail(require(cur, b, "num_leaves", head), "num_leaves", "num_leaves must be at least 1");
  if (auto it = b.find("is_linear"); it != b.end() && value_of(it->second) != "0")
    throw Unsupported(cur.source + ":" + std::to_string(it->second.number) + ": linear trees are not supported");
  t.leaves = parse_list<double>(cur, require(cur, b, "leaf_value", head), "leaf_value", leaves);
  for (double v : t.leaves)
    if (!std::isfinite(v))
      cur.fail(require(cur, b, "leaf_value", head), "leaf_value", "leaf_value holds a non-finite value");
  if (leaves == 1) return t;
  const std::size_t inner = static_cast<std::size_t>(leaves - 1);
  auto feat = parse_list<int>(cur, require(cur, b, "split_feature", head), "split_feature", inner);
  auto thr = parse_list<double>(cur, require(cur, b, "threshold", head), "threshold", inner);
  auto dec = parse_list<int>(cur, require(cur, b, "decision_type", head), "decision_type", inner);
  auto left = parse_list<int>(cur, require(cur, b, "left_child", head), "left_child", inner);
  auto right = parse_list<int>(cur, require(cur, b, "right_child", head), "right_child", inner);
  int num_cat = 0;
  if (auto it = b.find("num_cat"); it != b.end()) num_cat = parse_number<int>(cur, it->second, "num_cat", value_of(it->second));
  if (num_cat > 0) {
    t.cat_bounds = parse_list<std::uint32_t>(cur, require(cur, b, "cat_boundaries", head), "cat_boundaries", num_cat + 1);
    t.cat_bits = parse_list<std::uint32_t>(cur, require(cur, b, "cat_threshold", head), "cat_threshold", std::size_t(-1));
    for (std::size_t i = 0; i + 1 < t.cat_bounds.size(); ++i)
      if (t.cat_bounds[i] > t.cat_bounds[i + 1] || t.cat_bounds.back() != t.cat_bits.size())
        cur.fail(require(cur, b, "cat_boundaries", head), "cat_boundaries",
                 "cat_boundaries must rise to the " + std::to_string(t.cat_bits.size()) + " words of cat_threshold");
  }
  // Every node but the root and every leaf is reached exactly once: the arrays form one tree.
  std::vector<int> node_refs(inner, 0), leaf_refs(static_cast<std::size_t>(leaves), 0);
  node_refs[0] = 1;
  const Line& child_line = require(cur, b, "left_child", head);
  t.nodes.resize(inner);
  for (std::size_t i = 0; i < inner; ++i) {
    GbdtModel::Node& n = t.nodes[i];
    if (feat[i] < 0 || feat[i] >= num_features)
      cur.fail(require(cur, b, "split_feature", head), std::to_string(feat[i]),
               "split_feature " + std::to_string(feat[i]) + " of node " + std::to_string(i) + " is not a feature index (" +
                   std::to_string(num_features) + " features)");
    if (dec[i] < 0 || dec[i] > 15)
      cur.fail(require(cur, b, "decision_type", head), std::to_string(dec[i]), "decision_type out of range");
    n.feature = feat[i], n.threshold = thr[i], n.decision = static_cast<std::uint8_t>(dec[i]);
    n.left = left[i], n.right = right[i];
    if ((n.decision & kCategoricalMask) &&
        !(thr[i] >= 0 && thr[i] < num_cat && thr[i] == std::floor(thr[i])))
      cur.fail(require(cur, b, "threshold", head), std::to_string(thr[i]),
               "categorical node " + std::to_string(i) + " has threshold " + std::to_string(thr[i]) +
                   ", not a category-set index below num_cat " + std::to_string(num_cat));
    for (int child : {n.left, n.right}) {
      bool ok = child >= 0 ? std::size_t(child) < inner && ++node_refs[std::size_t(child)] == 1
                           : std::size_t(~child) < leaf_refs.size() && ++leaf_refs[std::size_t(~child)] == 1;
      if (!ok || child == 0)
        cur.fail(child_line, std::to_string(child),
                 "child " + std::to_string(child) + " of node " + std::to_string(i) + " is out of range or reached twice");
    }
  }
  for (std::size_t i = 0; i < inner; ++i)
    if (node_refs[i] != 1) cur.fail(child_line, std::to_string(i), "node " + std::to_string(i) + " is unreachable");
  for (std::size_t i = 0; i < leaf_refs.size(); ++i)
    if (leaf_refs[i] != 1) cur.fail(child_line, std::to_string(~int(i)), "leaf " + std::to_string(i) + " is unreachable");
  return t;
}

bool in_bitset(const std::uint32_t* bits, std::uint32_t words, int pos) {
  const std::uint32_t word = static_cast<std::uint32_t>(pos) / 32;
  return word < words && ((bits[word] >> (pos % 32)) & 1u);
}

}  // namespace

// LightGBM's node decision for one feature value; returns the child.
int gbdt_decide(const GbdtModel::Tree& t, const GbdtModel::Node& n, double v) {
  if (n.decision & kCategoricalMask) {
    if (std::isnan(v) || v < 0 || v >= 2147483648.0) return n.right;
    const int cat = static_cast<int>(v);
    const auto set = static_cast<std::size_t>(n.threshold);
    return in_bitset(t.cat_bits.data() + t.cat_bounds[set], t.cat_bounds[set + 1] - t.cat_bounds[set], cat) ? n.left
                                                                                                             : n.right;
  }
  const auto missing = static_cast<MissingType>((n.decision >> 2) & 3);
  if (std::isnan(v) && missing != kMissingNaN) v = 0.0;
  if ((missing == kMissingZero && v >= -kZeroThreshold && v <= kZeroThreshold) ||
      (missing == kMissingNaN && std::isnan(v)))
    return (n.decision & kDefaultLeftMask) ? n.left : n.right;
  return v <= n.threshold ? n.left : n.right;
}


namespace {

double tree_value(const GbdtModel::Tree& t, const double* row) {
  if (t.nodes.empty()) return t.leaves[0];
  int node = 0;
  while (node >= 0) {
    const GbdtModel::Node& n = t.nodes[static_cast<std::size_t>(node)];
    node = gbdt_decide(t, n, row[n.feature]);
  }
  return t.leaves[static_cast<std::size_t>(~node)];
}

const char* const kRawObjectives[] = {"regression", "regression_l2", "regression_l1", "huber", "fair",
                                      "quantile", "mape", "lambdarank", "rank_xendcg"};

}  // namespace

GbdtModel GbdtModel::load(const std::string& path) { return parse(read_text_file(path, "model"), path); }

GbdtModel GbdtModel::parse(std::string_view text, const std::string& source) {
  Cursor cur{source, {}, 0};
  int number = 1;
  for (std::size_t i = 0; i <= text.size();) {
    std::size_t j = text.find('\n', i);
    if (j == std::string_view::npos) j = text.size();
    cur.lines.push_back({trim(text.substr(i, j - i)), number++});
    i = j + 1;
  }
  const Line top = cur.lines.empty() ? Line{"", 1} : cur.lines.front();
  if (top.text != "tree") cur.fail(top, std::string(top.text), "not a LightGBM text model: the first line must be 'tree'");
  Block header = read_block(cur);
  auto int_of = [&](std::string_view key) {
    const Line& l = require(cur, header, key, top);
    return parse_number<int>(cur, l, key, value_of(l));
  };
  const int num_class = int_of("num_class"), per_iter = int_of("num_tree_per_iteration");
  if (num_class != 1 || per_iter != 1)
    throw Unsupported(source + ": num_class=" + std::to_string(num_class) + " num_tree_per_iteration=" +
                      std::to_string(per_iter) + "; only single-output models are evaluated");
  if (header.count("average_output"))
    throw Unsupported(source + ":" + std::to_string(header.at("average_output").number) +
                      ": averaged (random-forest) models are not supported");
  GbdtModel m;
  const int num_features = int_of("max_feature_idx") + 1;
  const Line& names = require(cur, header, "feature_names", top);
  for (auto tok : split_spaces(value_of(names))) m.feature_names_.emplace_back(tok);
  if (m.feature_names_.size() != static_cast<std::size_t>(num_features))
    cur.fail(names, "feature_names", std::to_string(m.feature_names_.size()) + " feature names but max_feature_idx=" +
                                         std::to_string(num_features - 1));
  if (auto it = header.find("objective"); it != header.end()) {
    auto words = split_spaces(value_of(it->second));
    m.objective_ = words.empty() ? "" : std::string(words[0]);
    bool raw = true;  // "regression sqrt" squares its predictions
    for (std::size_t i = 1; i < words.size(); ++i) raw &= words[i] != "sqrt";
    bool known = false;
    for (const char* o : kRawObjectives) known |= m.objective_ == o;
    if (!known || !raw)
      throw Unsupported(source + ":" + std::to_string(it->second.number) + ": objective '" +
                        std::string(value_of(it->second)) + "' transforms the raw score; only " +
                        "regression-type and ranking objectives are evaluated");
  }
  // Tree blocks.
  while (cur.pos < cur.lines.size()) {
    const Line& l = cur.lines[cur.pos];
    if (l.text.empty()) {
      ++cur.pos;
      continue;
    }
    if (l.text == "end of trees") break;
    if (!l.text.starts_with("Tree="))
      cur.fail(l, std::string(l.text), "expected 'Tree=<index>' or 'end of trees', got '" + std::string(l.text) + "'");
    const int index = parse_number<int>(cur, l, "Tree", l.text.substr(5));
    if (index != static_cast<int>(m.trees_.size()))
      cur.fail(l, std::string(l.text), "tree " + std::to_string(index) + " out of order (expected " +
                                           std::to_string(m.trees_.size()) + ")");
    const Line head = l;
    ++cur.pos;
    Block b = read_block(cur);
    m.trees_.push_back(parse_tree(cur, b, head, num_features));
  }
  if (cur.pos >= cur.lines.size())
    cur.fail(cur.lines.back(), "", "missing 'end of trees' (truncated model?)");
  std::vector<bool> used(m.feature_names_.size(), false);
  for (const Tree& t : m.trees_)
    for (const Node& n : t.nodes) used[static_cast<std::size_t>(n.feature)] = true;
  for (std::size_t f = 0; f < used.size(); ++f)
    if (used[f]) m.used_features_.push_back(static_cast<int>(f));
  m.forest_ = gbdt_build_forest(m.trees_, m.used_features_, m.feature_names_.size());
  return m;
}

void GbdtModel::check_feature_names(std::span<const std::string> names) const {
  const std::size_t n = std::min(names.size(), feature_names_.size());
  for (std::size_t i = 0; i < n; ++i)
    if (names[i] != feature_names_[i])
      throw ModelMismatch("model feature " + std::to_string(i) + " is '" + feature_names_[i] + "' but the caller's is '" +
                          names[i] + "'");
  if (names.size() != feature_names_.size())
    throw ModelMismatch("the model has " + std::to_string(feature_names_.size()) + " features, the caller " +
                        std::to_string(names.size()));
}

void GbdtModel::check_schema(const FeatureSchema& schema) const {
  try {
    check_feature_names(schema.names);
  } catch (const ModelMismatch& e) {
    throw ModelMismatch(std::string(e.what()) + " (feature schema " + schema.hash + ", version " +
                        std::to_string(schema.version) + ")");
  }
}

double GbdtModel::predict_row(const double* row) const {
  // LightGBM reads a dense row as sparse pairs: values inside the zero band become exact zeros.
  std::vector<double> x(row, row + feature_names_.size());
  for (double& v : x) v = gbdt_zero_band(v);
  double sum = 0.0;
  for (const Tree& t : trees_) sum += tree_value(t, x.data());
  return sum;
}

}  // namespace tilepick
