// A progress line on stderr: done/total, rate, ETA and a status text. Redrawn in place on a
// terminal (at most 5 times a second), printed as plain lines every 15 s otherwise (logs).
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace tilepick::sweep {

class Progress {
 public:
  Progress(std::string label, std::size_t total, bool enabled)
      : label_(std::move(label)), total_(total), enabled_(enabled), tty_(::isatty(STDERR_FILENO)),
        start_(Clock::now()), last_(start_) {}

  void update(std::size_t done, const std::string& status) {
    auto now = Clock::now();
    if (!enabled_ || now - last_ < (tty_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(15000))) return;
    last_ = now;
    print(done, status, false);
  }
  void finish(std::size_t done, const std::string& status) {
    if (enabled_) print(done, status, true);
  }

 private:
  using Clock = std::chrono::steady_clock;

  static std::string duration(double s) {
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", int(s / 3600), int(s / 60) % 60);
    else std::snprintf(buf, sizeof buf, "%dm%02ds", int(s / 60), int(s) % 60);
    return buf;
  }

  void print(std::size_t done, const std::string& status, bool final) {
    double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    double rate = elapsed > 0 ? done / elapsed : 0;
    double pct = total_ ? 100.0 * done / total_ : 100.0;
    int filled = static_cast<int>(pct / 5);
    std::string bar = std::string(filled, '#') + std::string(20 - filled, '.');
    std::string eta = rate > 0 && done < total_ ? duration((total_ - done) / rate) : "-";
    std::fprintf(stderr, "%s%s [%s] %zu/%zu %5.1f%% %.1f/s elapsed %s ETA %s | %s%s", tty_ ? "\r" : "",
                 label_.c_str(), bar.c_str(), done, total_, pct, rate, duration(elapsed).c_str(), eta.c_str(),
                 status.c_str(), tty_ && !final ? "   " : "\n");
    std::fflush(stderr);
  }

  std::string label_;
  std::size_t total_;
  bool enabled_, tty_;
  Clock::time_point start_, last_;
};

}  // namespace tilepick::sweep
