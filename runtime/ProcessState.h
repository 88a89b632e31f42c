// What /proc says about a process: the fields of its stat file and the scheduling state of each of its threads.
// The harness reads them to wait for spinning thread pools (benchmarks/Rounds.cpp, quiesce) and the bridges to
// see that a worker they stopped has stopped (vendor_bridge/PythonWorker.cpp, park).
#pragma once
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace friction {

// What follows "pid (comm) " in a /proc stat file: "S ppid ..." (comm may hold spaces and parentheses); empty
// when the file cannot be read (the process is gone).
std::string statAfterComm(const std::filesystem::path& stat);

// The state letter of every thread of `pid` but `except` (R runnable, S/D sleeping, T/t stopped, Z zombie):
// empty when the process is gone.
std::vector<char> threadStates(pid_t pid, pid_t except = 0);

}  // namespace friction
