// The sweep worker: a child process that measures jobs sent by the supervisor over a pipe.
//
// Protocol, one JSON object per line.
//   supervisor -> worker: {"problem": "<canonical problem>", "items": ["<config or pseudo item>", ...]}
//   worker -> supervisor: {"type":"ready","device":{...}}        once, after start-up
//                         {"type":"beat"}                        still working (resets the timeout)
//                         {"type":"start","index":i}             measuring items[i] now
//                         {"type":"result","index":i,"records":[...]}
//                         {"type":"done"}                        job finished
// A worker that dies or stops beating is killed and restarted by the supervisor, which records the
// item it was on as crash / timeout.
#pragma once
#include "sweep/backend.hpp"

namespace tilepick::sweep {

// Runs until stdin closes. Returns the process exit code (0, or 3 when the backend needs a restart).
int run_worker(const BackendOptions& opt);

}  // namespace tilepick::sweep
