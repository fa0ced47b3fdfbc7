// tilepick report: runs `python3 -m tilepick.report ARGS...` from the source tree's python/ folder.
// Every argument after `report` (--help included) is forwarded unchanged to the Python tool.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tilepick/env.hpp"

extern char** environ;

namespace tilepick::cli {
namespace {

constexpr const char* kPython = "python3";
constexpr const char* kInstallHint =
    "put a python3 that has them first on PATH (`source .venv/bin/activate` after scripts/setup.sh) or install "
    "them with `python3 -m pip install -r requirements.txt`";

// The current environment with PYTHONPATH led by the source tree's python/ folder and
// TILEPICK_DATA_DIR set to the data folder the C++ side uses (so both read the same arch specs).
std::vector<std::string> child_environment() {
  std::vector<std::string> env;
  std::string pythonpath = TILEPICK_SOURCE_PYTHON_DIR;
  for (char** e = environ; *e; ++e) {
    std::string var(*e);
    if (var.rfind("PYTHONPATH=", 0) == 0) {
      std::string old = var.substr(std::strlen("PYTHONPATH="));
      if (!old.empty()) pythonpath += ":" + old;
    } else if (var.rfind("TILEPICK_DATA_DIR=", 0) != 0) {
      env.push_back(std::move(var));
    }
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("TILEPICK_DATA_DIR=" + env::data_dir());
  return env;
}

}  // namespace

// Runs python3 with `args` and waits; throws NotFound when python3 is not on PATH.
ChildResult run_python(const std::vector<std::string>& args, bool capture_stdout) {
  std::vector<std::string> argv_text{kPython};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = child_environment();
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  int pipe_fd[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (capture_stdout) {
    if (pipe(pipe_fd) != 0) throw Error(Status::io_error, std::string("report: pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fd[0]);
    posix_spawn_file_actions_addclose(&actions, pipe_fd[1]);
  }
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, kPython, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ChildResult result;
  if (capture_stdout) {
    close(pipe_fd[1]);
    if (rc == 0) {
      char buf[4096];
      ssize_t n;
      while ((n = read(pipe_fd[0], buf, sizeof buf)) > 0) result.out.append(buf, static_cast<std::size_t>(n));
    }
    close(pipe_fd[0]);
  }
  if (rc == ENOENT)
    throw NotFound(std::string("report: python3 is not on PATH; tilepick report needs python3 with numpy, pandas "
                               "and matplotlib (") + kInstallHint + ")");
  if (rc != 0) throw Error(Status::io_error, std::string("report: cannot start python3: ") + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(Status::io_error, std::string("report: waitpid: ") + std::strerror(errno));
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return result;
}

namespace {

// Names of the Python packages the report needs that python3 cannot find (without importing them).
std::string missing_packages() {
  auto r = run_python({"-c",
                       "import importlib.util as u\n"
                       "print(' '.join(m for m in ('numpy', 'pandas', 'matplotlib') if u.find_spec(m) is None))"},
                      true);
  if (r.exit_code != 0) throw Error(Status::io_error, "report: python3 failed to check for its packages");
  while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == ' ')) r.out.pop_back();
  return r.out;
}

}  // namespace

void add_report_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "sweep records -> per-problem and per-family CSVs and plots (python3 -m tilepick.report; "
                "`tilepick report --help` for its options)");
  cmd->set_help_flag();  // --help goes to the Python tool
  cmd->allow_extras();
  cmd->prefix_command();  // everything after `report` is forwarded in order
  cmd->callback([cmd] {
    std::string missing = missing_packages();
    if (!missing.empty())
      throw NotFound("report: python3 lacks the package(s) " + missing + "; " + kInstallHint);
    std::vector<std::string> args{"-m", "tilepick.report"};
    for (const auto& a : cmd->remaining()) args.push_back(a);
    int rc = run_python(args, false).exit_code;
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tilepick::cli
