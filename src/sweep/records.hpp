// Sweep records: one row per measured (problem, config) pair, appended to a gzip-compressed CSV
// file (format in docs/sweep.md). Finished rows first go to an uncompressed journal beside the file
// (one write per row), then are compressed into a new gzip member; a killed sweep loses nothing and
// the next open folds the journal in.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tilepick::sweep {

inline constexpr const char* kRecordFormat = "tilepick-sweep/1";

struct Record {
  std::string problem, config, status;  // status: ok wrong crash timeout error unsupported
  double median_us = 0, iqr_us = 0;
  int reps = 0;
  double tflops = 0, gbps = 0;
  double max_err = 0, rel_err = 0, tol = 0;
  double compile_s = 0;
  int registers = -1, spills = -1;
  bool cached = false;
  int gpu = -1;
  double time_unix = 0;
  std::string detail;  // failure reason, vendor algorithm, ...
};

// The CSV column names, in file order.
const std::vector<std::string>& record_columns();
std::string to_csv_row(const Record& r);  // no newline
Record parse_csv_row(std::string_view line);  // throws ParseError naming the column
nlohmann::json to_json(const Record& r);
Record record_from_json(const nlohmann::json& j);

// Makes free text safe for a record field: no '#', newline, or control characters; bounded length.
std::string sanitize_field(std::string_view s, std::size_t max_len = 400);

struct RecordFile {
  nlohmann::json header;
  std::vector<Record> records;
  std::uint64_t good_bytes = 0;   // end of the last complete gzip member
  bool truncated_tail = false;    // bytes after the last complete member (a killed writer)
  std::size_t damaged_members = 0;  // corrupt stretches skipped between complete members (their rows are lost)
  std::size_t journal_rows = 0;   // rows read from the journal (not yet compressed)
};

std::string journal_path(const std::string& path);
// Reads every complete member, also those after a corrupt stretch (the next gzip header is searched
// for), and the journal's complete lines. Throws NotFound / ParseError.
RecordFile read_record_file(const std::string& path);

// Appends records to a file: creates it with `header` if absent, otherwise repairs it (cuts a
// truncated tail; rewrites it without corrupt members, whose rows are then measured again), folds in
// a leftover journal and appends after it.
class RecordWriter {
 public:
  RecordWriter(const std::string& path, const nlohmann::json& header);
  ~RecordWriter();  // flush()es; errors are logged, not thrown
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void append(const Record& r);  // durable against a process kill once it returns
  void flush();                  // journal -> one gzip member (fsync), journal truncated
  const std::string& path() const { return path_; }
  std::size_t appended() const { return appended_; }

 private:
  std::string path_;
  int journal_fd_ = -1;
  std::size_t pending_ = 0, appended_ = 0;
  std::string pending_text_;
};

// One gzip member holding `text` (exposed for tests).
std::string gzip_member(std::string_view text);

}  // namespace tilepick::sweep
