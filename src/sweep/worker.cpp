#include "sweep/worker.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "tilepick/error.hpp"

namespace tilepick::sweep {
namespace {

// The protocol owns the original stdout; everything else printed (libraries, logs) goes to stderr.
class Channel {
 public:
  Channel() {
    int fd = ::dup(STDOUT_FILENO);
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    out_ = ::fdopen(fd, "w");
  }
  void send(const nlohmann::json& j) {
    std::string line = j.dump() + "\n";
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
  }

 private:
  std::FILE* out_ = nullptr;
};

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int run_worker(const BackendOptions& opt) {
  Channel ch;
  std::unique_ptr<Backend> backend;
  try {
    backend = make_backend(opt);
    ch.send({{"type", "ready"}, {"device", backend->device()}});
  } catch (const std::exception& e) {
    std::cerr << "sweep worker: cannot start: " << e.what() << "\n";
    return 2;
  }
  auto last_beat = std::chrono::steady_clock::now();
  Beat beat = [&] {
    auto t = std::chrono::steady_clock::now();
    if (t - last_beat > std::chrono::milliseconds(100)) ch.send({{"type", "beat"}}), last_beat = t;
  };
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    nlohmann::json job = nlohmann::json::parse(line);
    const std::string problem_text = job.at("problem").get<std::string>();
    const auto items = job.at("items").get<std::vector<std::string>>();
    std::string setup_error;
    Problem problem;
    try {
      problem = parse_problem(problem_text);
      backend->begin_problem(problem, beat);
    } catch (const std::exception& e) {
      setup_error = e.what();
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      ch.send({{"type", "start"}, {"index", i}});
      std::vector<Record> recs;
      if (!setup_error.empty()) {
        Record r;
        r.config = items[i], r.status = "error", r.detail = "problem setup failed: " + setup_error;
        recs.push_back(r);
      } else {
        try {
          recs = backend->measure(items[i], beat);
        } catch (const std::exception& e) {
          Record r;
          r.config = items[i], r.status = "error", r.detail = e.what();
          recs = {r};
        }
      }
      nlohmann::json arr = nlohmann::json::array();
      for (auto& r : recs) {
        r.problem = problem_text, r.gpu = opt.gpu, r.time_unix = now_unix();
        r.detail = sanitize_field(r.detail);
        arr.push_back(to_json(r));
      }
      ch.send({{"type", "result"}, {"index", i}, {"records", arr}});
      last_beat = std::chrono::steady_clock::now();
      if (backend->must_restart()) return 3;  // the supervisor restarts us for the remaining items
    }
    if (setup_error.empty()) backend->end_problem();
    ch.send({{"type", "done"}});
    if (backend->must_restart()) return 3;
  }
  return 0;
}

}  // namespace tilepick::sweep
