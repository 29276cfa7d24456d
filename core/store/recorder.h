#pragma once
// Which process records a run, so that a run left "running" by a process that is gone (killed,
// its machine rebooted) can be told from one still being recorded: the host, the kernel's boot
// id, the pid and the process's start time (which a reused pid does not share).
#include <string>

namespace dtlab::core {

// This process, as the text stored with the runs it begins.
std::string thisRecorder();

enum class RecorderState {
  kAlive,    // this machine, this boot: the process still runs
  kGone,     // this machine: the process ended (or the machine rebooted since); or no
             // recorder stored (a run begun by an older DTLab)
  kUnknown,  // another machine (a project on a shared disk)
};

// `recorder` as thisRecorder() wrote it (empty: a run begun before recorders were stored).
RecorderState recorderState(const std::string& recorder);
// "pid 4242 on host lab1", for messages.
std::string describeRecorder(const std::string& recorder);

}  // namespace dtlab::core
