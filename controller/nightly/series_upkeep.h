#pragma once
// From a finished run to the points it adds to the history (pure). One point per (arm, CPU
// microarchitecture, sweep value, metric) of the run's aggregate samples, keyed by its series:
// host class (microarchitecture + the arm's boot entry), benchmark, the arm's configuration
// (its parameters and ceiling, sorted: two runs that measure different things never share a
// series), sweep value and metric. The point is the mean of boot means with its 95 %
// t-interval (over boot means with two boots or more, else over the one boot's iterations; a
// single sample gives a zero-width interval) and where it came from.
//
// An arm that measures a kernel built from source boots an entry the controller names per run
// ("kernel-3f9a…"), which would start a new series every night: its host class is the kernel's
// name instead, "kernel:<source>/<branch>" for a schedule following a branch (every night one
// series, whatever commit the head was) or "kernel:<source>@<rev>" otherwise, its config
// gaining "kernel_config=" (and "revert="). The commit and build id are the point's provenance.

#include <string>
#include <vector>

#include "controller/store/nightly_store.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::nightly {

// The arm's configuration as a series key part: "ceiling=33 loops=20000 mmap=always".
std::string ArmConfig(const v1::RunSpec& spec, const v1::ArmSpec& arm);

// The series' host-class part for an arm measuring a kernel built from source.
std::string KernelSeriesEntry(const v1::KernelRevision& kernel);

// `schedule_id`: the schedule that started the run, or "".
std::vector<store::NewPoint> PointsFromRun(const v1::Run& run,
                                           const std::vector<v1::Sample>& samples,
                                           const std::string& schedule_id);

}  // namespace tlbfleet::nightly
