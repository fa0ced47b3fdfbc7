#include "sweep/supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <iostream>
#include <optional>

#include "sweep/progress.hpp"
#include "tilepick/error.hpp"

namespace tilepick::sweep {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_stop = 0;
void on_stop_signal(int) { g_stop = 1; }

enum class Phase { starting, idle, setup, item };

struct Slot {
  int gpu = 0;
  pid_t pid = -1;
  int in_fd = -1, out_fd = -1, err_fd = -1;
  std::string out_buf, err_buf;
  std::deque<std::string> err_tail;  // last stderr lines, for crash reports
  Phase phase = Phase::starting;
  Clock::time_point last_activity = Clock::now();
  std::optional<SweepJob> job;       // items not yet answered
  int current = -1;                  // item being measured (start seen, no result yet)
  std::size_t answered = 0;          // items of job answered so far
  int startup_failures = 0, setup_failures = 0;
  bool dead = false;                 // gave up on this GPU
  nlohmann::json device;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void spawn(Slot& s, const SupervisorOptions& opt) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC))
    throw Error(Status::io_error, std::string("sweep: pipe: ") + std::strerror(errno));
  std::vector<std::string> args = {opt.worker_exe, "sweep-worker", "--gpu", std::to_string(s.gpu)};
  args.insert(args.end(), opt.worker_args.begin(), opt.worker_args.end());
  pid_t pid = ::fork();
  if (pid < 0) throw Error(Status::io_error, std::string("sweep: fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the supervisor
    ::dup2(in[0], 0), ::dup2(out[1], 1), ::dup2(err[1], 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(opt.worker_exe.c_str(), argv.data());
    std::fprintf(stderr, "sweep: cannot exec %s: %s\n", opt.worker_exe.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(in[0]), ::close(out[1]), ::close(err[1]);
  s.pid = pid, s.in_fd = in[1], s.out_fd = out[0], s.err_fd = err[0];
  ::fcntl(s.out_fd, F_SETFL, O_NONBLOCK), ::fcntl(s.err_fd, F_SETFL, O_NONBLOCK);
  s.out_buf.clear(), s.err_buf.clear();
  s.phase = Phase::starting;
  s.current = -1;
  s.last_activity = Clock::now();
}

// Reaps the worker and describes how it ended.
std::string reap(Slot& s, bool killed) {
  if (killed) ::kill(s.pid, SIGKILL);
  int status = 0;
  while (::waitpid(s.pid, &status, 0) < 0 && errno == EINTR) {
  }
  close_fd(s.in_fd), close_fd(s.out_fd), close_fd(s.err_fd);
  s.pid = -1;
  std::string how = killed                ? "killed after the timeout"
                    : WIFSIGNALED(status) ? "worker died: signal " + std::to_string(WTERMSIG(status)) + " (" +
                                                strsignal(WTERMSIG(status)) + ")"
                    : WIFEXITED(status)   ? "worker exited with code " + std::to_string(WEXITSTATUS(status))
                                          : "worker ended";
  if (!s.err_tail.empty()) how += "; last stderr: " + s.err_tail.back();
  return how;
}

class Supervisor {
 public:
  Supervisor(const std::vector<SweepJob>& jobs, const SupervisorOptions& opt)
      : opt_(opt), queue_(jobs.begin(), jobs.end()) {
    for (const auto& j : jobs) total_pairs_ += j.items.size();
    for (int g : opt.gpus) {
      slots_.emplace_back();
      slots_.back().gpu = g;
    }
  }

  SweepSummary run() {
    auto t0 = Clock::now();
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    ::sigaction(SIGINT, &sa, nullptr), ::sigaction(SIGTERM, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    g_stop = 0;
    for (auto& s : slots_) spawn(s, opt_);
    progress_.emplace("sweep", total_pairs_, opt_.progress);
    auto last_flush = Clock::now();
    while (!g_stop) {
      if (opt_.time_limit_s > 0 && std::chrono::duration<double>(Clock::now() - t0).count() > opt_.time_limit_s) {
        summary_.interrupted = true;
        break;
      }
      if (!writer_ && all_started()) open_writer();
      if (writer_) dispatch();
      if (finished()) break;
      if (std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.dead; }))
        throw Error(Status::cuda_error, "sweep: every worker failed to start; last: " + last_failure_);
      wait_and_handle();
      check_timeouts();
      if (writer_ && Clock::now() - last_flush > std::chrono::seconds(5)) writer_->flush(), last_flush = Clock::now();
      progress_->update(summary_.pairs, status_line());
    }
    summary_.interrupted = summary_.interrupted || g_stop != 0;
    for (auto& s : slots_)
      if (s.pid > 0) reap(s, true);
    if (writer_) writer_->flush();
    summary_.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    progress_->finish(summary_.pairs, status_line());
    return summary_;
  }

 private:
  bool all_started() const {
    return std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.dead || s.phase != Phase::starting; });
  }

  bool finished() const {
    return queue_.empty() && std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.dead || !s.job; });
  }

  void open_writer() {
    nlohmann::json header = opt_.header;
    header["format"] = kRecordFormat;
    header["devices"] = nlohmann::json::array();
    for (const auto& s : slots_)
      if (!s.dead) header["devices"].push_back(s.device);
    std::string live = header["devices"].empty() ? "" : header["devices"][0].value("name", "");
    struct stat st {};
    if (::stat(opt_.output.c_str(), &st) == 0 && st.st_size > 0) {
      auto existing = read_record_file(opt_.output).header;
      std::string recorded = existing.contains("devices") && !existing["devices"].empty()
                                 ? existing["devices"][0].value("name", "")
                                 : "";
      if (recorded != live)
        throw Error(Status::invalid_problem, "sweep: " + opt_.output + " holds records from '" + recorded +
                                                 "', this run measures on '" + live + "': use another --output");
    }
    writer_.emplace(opt_.output, header);
  }

  void dispatch() {
    for (auto& s : slots_) {
      if (s.dead || s.phase != Phase::idle) continue;
      if (!s.job) {
        if (queue_.empty()) continue;
        s.job = std::move(queue_.front());
        queue_.pop_front();
        s.answered = 0, s.setup_failures = 0;
      }
      if (s.job->items.empty()) {
        s.job.reset();
        continue;
      }
      nlohmann::json msg = {{"problem", s.job->problem}, {"items", s.job->items}};
      std::string line = msg.dump() + "\n";
      if (::write(s.in_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        // A dead worker: its EOF is handled by the read loop.
      }
      s.phase = Phase::setup, s.current = -1, s.answered = 0;
      s.last_activity = Clock::now();
    }
  }

  void record(const Record& r) {
    writer_->append(r);
    ++summary_.records;
    if (r.status == "ok") ++summary_.ok;
    else if (r.status == "wrong") ++summary_.wrong;
    else if (r.status == "crash") ++summary_.crash;
    else if (r.status == "timeout") ++summary_.timeout;
    else if (r.status == "unsupported") ++summary_.unsupported;
    else ++summary_.error;
  }

  void fail_item(Slot& s, std::size_t index, const std::string& status, const std::string& why) {
    Record r;
    r.problem = s.job->problem, r.config = s.job->items[index], r.status = status, r.gpu = s.gpu;
    r.time_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    r.detail = sanitize_field(why);
    record(r);
    ++summary_.pairs;
  }

  void on_message(Slot& s, const nlohmann::json& m) {
    s.last_activity = Clock::now();
    const std::string type = m.value("type", "");
    if (type == "ready") {
      s.device = m.value("device", nlohmann::json::object());
      s.phase = Phase::idle, s.startup_failures = 0;
    } else if (type == "start") {
      s.current = m.at("index").get<int>();
      s.phase = Phase::item;
    } else if (type == "result") {
      for (const auto& j : m.at("records")) record(record_from_json(j));
      ++summary_.pairs;
      s.answered = m.at("index").get<std::size_t>() + 1;
      s.current = -1;
    } else if (type == "done") {
      s.job.reset();
      s.phase = Phase::idle;
      writer_->flush();
    }
  }

  // The worker ended (crash, exit, or killed after a timeout): record the item, restart it.
  void on_worker_end(Slot& s, bool timed_out) {
    std::string how = reap(s, timed_out);
    ++summary_.restarts;
    if (s.phase == Phase::starting) {
      last_failure_ = how;
      if (++s.startup_failures >= 3) {
        std::cerr << "sweep: gpu " << s.gpu << ": worker failed to start 3 times (" << how << "); not using it\n";
        s.dead = true;
        if (s.job) queue_.push_front(std::move(*s.job)), s.job.reset();
        return;
      }
    } else if (s.job) {
      std::size_t resume_at = s.answered;
      if (s.phase == Phase::item && s.current >= 0) {
        fail_item(s, static_cast<std::size_t>(s.current), timed_out ? "timeout" : "crash", how);
        resume_at = static_cast<std::size_t>(s.current) + 1;
      } else if (s.phase == Phase::setup && s.answered == 0 && ++s.setup_failures >= 2) {
        for (std::size_t i = 0; i < s.job->items.size(); ++i)
          fail_item(s, i, timed_out ? "timeout" : "crash", "problem setup failed twice: " + how);
        resume_at = s.job->items.size();
      }
      s.job->items.erase(s.job->items.begin(), s.job->items.begin() + std::min(resume_at, s.job->items.size()));
      if (s.job->items.empty()) s.job.reset();
    }
    spawn(s, opt_);
  }

  void drain(Slot& s, int fd, std::string& buf, bool is_out) {
    char tmp[65536];
    for (;;) {
      ssize_t n = ::read(fd, tmp, sizeof tmp);
      if (n > 0) {
        buf.append(tmp, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0 && is_out) eof_ = true;
      break;
    }
    for (std::size_t nl; (nl = buf.find('\n')) != std::string::npos;) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (is_out) {
        nlohmann::json m;
        try {
          m = nlohmann::json::parse(line);
        } catch (const std::exception&) {
          std::cerr << "sweep: gpu " << s.gpu << ": bad worker message: " << line.substr(0, 200) << "\n";
          continue;
        }
        on_message(s, m);
      } else {
        if (opt_.verbose) std::cerr << "[gpu " << s.gpu << "] " << line << "\n";
        s.err_tail.push_back(line);
        if (s.err_tail.size() > 20) s.err_tail.pop_front();
      }
    }
  }

  void wait_and_handle() {
    std::vector<pollfd> fds;
    std::vector<std::pair<std::size_t, bool>> owner;  // slot, is stdout
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].pid <= 0) continue;
      fds.push_back({slots_[i].out_fd, POLLIN, 0}), owner.emplace_back(i, true);
      fds.push_back({slots_[i].err_fd, POLLIN, 0}), owner.emplace_back(i, false);
    }
    int rc = ::poll(fds.data(), fds.size(), 200);
    if (rc <= 0) return;  // timeout or EINTR (a stop signal)
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Slot& s = slots_[owner[k].first];
      if (s.pid <= 0) continue;
      eof_ = false;
      if (owner[k].second) drain(s, s.out_fd, s.out_buf, true);
      else drain(s, s.err_fd, s.err_buf, false);
      if (eof_) {
        drain(s, s.err_fd, s.err_buf, false);  // keep its last words
        on_worker_end(s, false);
      }
    }
  }

  void check_timeouts() {
    auto now = Clock::now();
    for (auto& s : slots_) {
      if (s.pid <= 0 || s.phase == Phase::idle) continue;
      double limit = s.phase == Phase::item && s.current >= 0 ? opt_.launch_timeout_s : opt_.setup_timeout_s;
      if (std::chrono::duration<double>(now - s.last_activity).count() > limit) on_worker_end(s, true);
    }
  }

  std::string status_line() const {
    std::string s = "ok " + std::to_string(summary_.ok);
    std::size_t bad = summary_.wrong + summary_.crash + summary_.timeout + summary_.error;
    if (bad) s += " failed " + std::to_string(bad);
    if (summary_.restarts) s += " restarts " + std::to_string(summary_.restarts);
    return s;
  }

  SupervisorOptions opt_;
  std::deque<SweepJob> queue_;
  std::vector<Slot> slots_;
  std::optional<RecordWriter> writer_;
  std::optional<Progress> progress_;
  SweepSummary summary_;
  std::size_t total_pairs_ = 0;
  std::string last_failure_;
  bool eof_ = false;
};

}  // namespace

SweepSummary run_supervisor(const std::vector<SweepJob>& jobs, const SupervisorOptions& opt) {
  return Supervisor(jobs, opt).run();
}

}  // namespace tilepick::sweep
