#include "sweep/records.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <tuple>

#include "tilepick/error.hpp"

namespace tilepick::sweep {
namespace {

std::string num(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "0";
}

std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// RFC-4180 fields of one line (quotes double inside quoted fields).
std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> out(1);
  bool in_quotes = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
      else if (c == '"') in_quotes = false;
      else out.back() += c;
    } else if (c == '"') {
      in_quotes = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

double to_double(const std::string& s, const char* column) {
  if (s.empty()) return 0;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    throw ParseError(s, std::string("record column '") + column + "' is not a number");
  return v;
}

void write_all(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(Status::io_error, "cannot write " + what + ": " + std::strerror(errno));
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string read_whole(const std::string& path, bool* exists) {
  std::ifstream in(path, std::ios::binary);
  *exists = static_cast<bool>(in);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every complete member in order. A member that does not inflate is skipped up to the next gzip
// header (1f 8b 08) from which a member inflates; *damaged counts such skipped stretches, and
// *good_bytes ends at the last complete member (what follows it is a truncated tail).
std::string inflate_members(const std::string& data, std::uint64_t* good_bytes, std::size_t* damaged) {
  std::string out;
  std::size_t pos = 0;
  bool in_damage = false;
  *good_bytes = 0;
  *damaged = 0;
  while (pos < data.size()) {
    z_stream zs{};
    if (inflateInit2(&zs, 15 + 16) != Z_OK) throw Error(Status::internal, "zlib inflateInit2 failed");
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + pos));
    zs.avail_in = static_cast<uInt>(data.size() - pos);
    std::string member;
    char buf[1 << 16];
    int rc;
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof buf;
      rc = inflate(&zs, Z_NO_FLUSH);
      member.append(buf, sizeof buf - zs.avail_out);
    } while (rc == Z_OK);
    std::size_t used = (data.size() - pos) - zs.avail_in;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) {  // corrupt or cut: look for the next member
      const std::size_t next = data.find("\x1f\x8b\x08", pos + 1);
      if (next == std::string::npos) break;  // a truncated or corrupt tail
      in_damage = true;
      pos = next;
      continue;
    }
    if (in_damage) ++*damaged, in_damage = false;
    out += member;
    pos += used;
    *good_bytes = pos;
  }
  return out;
}

}  // namespace

const std::vector<std::string>& record_columns() {
  static const std::vector<std::string> cols = {
      "problem", "config",    "status",    "median_us", "iqr_us", "reps", "tflops", "gbps",      "max_err",
      "rel_err", "tol",       "compile_s", "registers", "spills", "cached", "gpu",  "time_unix", "detail"};
  return cols;
}

std::string sanitize_field(std::string_view s, std::size_t max_len) {
  std::string out;
  for (char c : s) {
    if (out.size() >= max_len) break;
    if (c == '#') out += "no.";
    else if (c == '\n' || c == '\r' || c == '\t') out += ' ';
    else if (static_cast<unsigned char>(c) < 0x20) continue;
    else out += c;
  }
  return out;
}

std::string to_csv_row(const Record& r) {
  std::string s;
  for (const std::string& f : {quoted(sanitize_field(r.problem)), quoted(sanitize_field(r.config)),
                               quoted(sanitize_field(r.status)), num(r.median_us), num(r.iqr_us),
                               std::to_string(r.reps), num(r.tflops), num(r.gbps), num(r.max_err), num(r.rel_err),
                               num(r.tol), num(r.compile_s), std::to_string(r.registers), std::to_string(r.spills),
                               std::string(r.cached ? "1" : "0"), std::to_string(r.gpu), num(r.time_unix),
                               quoted(sanitize_field(r.detail))}) {
    s += f;
    s += ',';
  }
  s.pop_back();
  return s;
}

Record parse_csv_row(std::string_view line) {
  auto f = split_csv(line);
  const auto& cols = record_columns();
  if (f.size() != cols.size())
    throw ParseError(std::string(line.substr(0, 80)), "record row has " + std::to_string(f.size()) + " fields, expected " +
                                                          std::to_string(cols.size()));
  Record r;
  r.problem = f[0], r.config = f[1], r.status = f[2];
  r.median_us = to_double(f[3], "median_us"), r.iqr_us = to_double(f[4], "iqr_us");
  r.reps = static_cast<int>(to_double(f[5], "reps"));
  r.tflops = to_double(f[6], "tflops"), r.gbps = to_double(f[7], "gbps");
  r.max_err = to_double(f[8], "max_err"), r.rel_err = to_double(f[9], "rel_err"), r.tol = to_double(f[10], "tol");
  r.compile_s = to_double(f[11], "compile_s");
  r.registers = static_cast<int>(to_double(f[12], "registers"));
  r.spills = static_cast<int>(to_double(f[13], "spills"));
  r.cached = f[14] == "1";
  r.gpu = static_cast<int>(to_double(f[15], "gpu"));
  r.time_unix = to_double(f[16], "time_unix");
  r.detail = f[17];
  static const char* const kStatuses[] = {"ok", "wrong", "crash", "timeout", "error", "unsupported"};
  if (std::find(std::begin(kStatuses), std::end(kStatuses), r.status) == std::end(kStatuses))
    throw ParseError(r.status, "record status '" + r.status + "' is not one of ok, wrong, crash, timeout, error, unsupported");
  if (r.status == "ok" && !(std::isfinite(r.median_us) && r.median_us > 0))
    throw ParseError(std::string(f[3]), "record with status ok has median_us " + std::string(f[3]) +
                                            " (a time must be finite and positive)");
  return r;
}

nlohmann::json to_json(const Record& r) {
  return {{"problem", r.problem},   {"config", r.config},   {"status", r.status},     {"median_us", r.median_us},
          {"iqr_us", r.iqr_us},     {"reps", r.reps},       {"tflops", r.tflops},     {"gbps", r.gbps},
          {"max_err", r.max_err},   {"rel_err", r.rel_err}, {"tol", r.tol},           {"compile_s", r.compile_s},
          {"registers", r.registers}, {"spills", r.spills}, {"cached", r.cached},     {"gpu", r.gpu},
          {"time_unix", r.time_unix}, {"detail", r.detail}};
}

Record record_from_json(const nlohmann::json& j) {
  Record r;
  r.problem = j.value("problem", ""), r.config = j.value("config", ""), r.status = j.value("status", "error");
  r.median_us = j.value("median_us", 0.0), r.iqr_us = j.value("iqr_us", 0.0), r.reps = j.value("reps", 0);
  r.tflops = j.value("tflops", 0.0), r.gbps = j.value("gbps", 0.0);
  r.max_err = j.value("max_err", 0.0), r.rel_err = j.value("rel_err", 0.0), r.tol = j.value("tol", 0.0);
  r.compile_s = j.value("compile_s", 0.0), r.registers = j.value("registers", -1), r.spills = j.value("spills", -1);
  r.cached = j.value("cached", false), r.gpu = j.value("gpu", -1), r.time_unix = j.value("time_unix", 0.0);
  r.detail = j.value("detail", "");
  return r;
}

std::string journal_path(const std::string& path) { return path + ".journal"; }

std::string gzip_member(std::string_view text) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw Error(Status::internal, "zlib deflateInit2 failed");
  std::string out(deflateBound(&zs, static_cast<uLong>(text.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(out.size() - zs.avail_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw Error(Status::internal, "zlib deflate failed");
  return out;
}

RecordFile read_record_file(const std::string& path) {
  bool exists = false;
  std::string data = read_whole(path, &exists);
  if (!exists) throw NotFound("no sweep record file at " + path);
  RecordFile f;
  std::string text = inflate_members(data, &f.good_bytes, &f.damaged_members);
  f.truncated_tail = f.good_bytes < data.size();
  std::istringstream lines(text);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line_no == 1) {
      if (line.rfind("# ", 0) != 0) throw ParseError(line.substr(0, 40), path + ": first line is not a sweep header");
      try {
        f.header = nlohmann::json::parse(line.substr(2));
      } catch (const std::exception& e) {
        throw ParseError(line.substr(0, 40), path + ": header is not JSON: " + e.what());
      }
      if (f.header.value("format", "") != kRecordFormat)
        throw ParseError(f.header.value("format", "?"), path + ": unknown record format (expected " +
                                                           std::string(kRecordFormat) + ")");
      continue;
    }
    if (line_no == 2) {
      if (split_csv(line) != record_columns()) throw ParseError(line.substr(0, 60), path + ": unexpected columns row");
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    try {
      f.records.push_back(parse_csv_row(line));
    } catch (const ParseError& e) {
      throw ParseError(e.token(), path + ":" + std::to_string(line_no) + ": " + e.what());
    }
  }
  // Rows still in the journal: complete lines only (a row cut by a kill is dropped and re-measured).
  bool jexists = false;
  std::string journal = read_whole(journal_path(path), &jexists);
  std::set<std::tuple<std::string, std::string, double>> seen;
  for (const auto& r : f.records) seen.emplace(r.problem, r.config, r.time_unix);
  std::size_t start = 0;
  for (std::size_t nl; (nl = journal.find('\n', start)) != std::string::npos; start = nl + 1) {
    Record r = parse_csv_row(std::string_view(journal).substr(start, nl - start));
    if (seen.emplace(r.problem, r.config, r.time_unix).second) {
      f.records.push_back(std::move(r));
      ++f.journal_rows;
    }
  }
  return f;
}

namespace {

// The first two lines of a record file: the JSON header and the column names.
std::string file_head(const nlohmann::json& header) {
  std::string head = "# " + header.dump() + "\n";
  for (const auto& c : record_columns()) head += c + ",";
  head.back() = '\n';
  return head;
}

}  // namespace

RecordWriter::RecordWriter(const std::string& path, const nlohmann::json& header) : path_(path) {
  struct stat st {};
  bool have = ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
  std::string fold;  // journal rows to fold in as one member
  if (have) {
    RecordFile f = read_record_file(path);
    if (f.damaged_members > 0) {
      // Rewrite without the corrupt stretches: header, columns and every row of the intact members,
      // through a temporary file renamed over the original. The lost rows are measured again.
      std::string text = file_head(f.header);
      for (std::size_t i = 0; i + f.journal_rows < f.records.size(); ++i) text += to_csv_row(f.records[i]) + "\n";
      const std::string tmp = path + ".repair.tmp";
      int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) throw Error(Status::io_error, "cannot repair " + path + ": " + tmp + ": " + std::strerror(errno));
      write_all(fd, gzip_member(text), tmp);
      ::fsync(fd);
      ::close(fd);
      if (::rename(tmp.c_str(), path.c_str()) != 0)
        throw Error(Status::io_error, "cannot repair " + path + ": " + std::strerror(errno));
      std::cerr << "tilepick: " << path << ": dropped " << f.damaged_members
                << " corrupt compressed member(s); their rows will be measured again\n";
    } else if (f.truncated_tail) {
      if (::truncate(path.c_str(), static_cast<off_t>(f.good_bytes)) != 0)
        throw Error(Status::io_error, "cannot repair " + path + ": " + std::strerror(errno));
      std::cerr << "tilepick: " << path << ": dropped an incomplete compressed tail (a killed writer)\n";
    }
    for (std::size_t i = f.records.size() - f.journal_rows; i < f.records.size(); ++i)
      fold += to_csv_row(f.records[i]) + "\n";
  } else {
    fold = file_head(header);
  }
  if (!fold.empty()) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(Status::io_error, "cannot open " + path + ": " + std::strerror(errno));
    write_all(fd, gzip_member(fold), path);
    ::fsync(fd);
    ::close(fd);
  }
  journal_fd_ = ::open(journal_path(path).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (journal_fd_ < 0) throw Error(Status::io_error, "cannot open " + journal_path(path) + ": " + std::strerror(errno));
}

RecordWriter::~RecordWriter() {
  try {
    flush();
  } catch (const std::exception& e) {
    std::cerr << "tilepick: " << e.what() << "\n";
  }
  if (journal_fd_ >= 0) ::close(journal_fd_);
  if (pending_ == 0) ::unlink(journal_path(path_).c_str());
}

void RecordWriter::append(const Record& r) {
  std::string row = to_csv_row(r) + "\n";
  write_all(journal_fd_, row, journal_path(path_));
  pending_text_ += row;
  ++pending_, ++appended_;
  if (pending_ >= 2000) flush();
}

void RecordWriter::flush() {
  if (pending_ == 0) return;
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw Error(Status::io_error, "cannot open " + path_ + ": " + std::strerror(errno));
  write_all(fd, gzip_member(pending_text_), path_);
  ::fsync(fd);
  ::close(fd);
  if (::ftruncate(journal_fd_, 0) != 0)
    throw Error(Status::io_error, "cannot truncate " + journal_path(path_) + ": " + std::strerror(errno));
  pending_ = 0;
  pending_text_.clear();
}

}  // namespace tilepick::sweep
