#pragma once
// This process's CPU time (user + system, every thread), for the node's cpu_util samples.
namespace dtlab::remote {

double processCpuSeconds();

}  // namespace dtlab::remote
