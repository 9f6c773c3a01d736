#include "agent/runner/sample_batch.h"

#include <string>

namespace tlbfleet::agent {
namespace {

// One provenance field: where it is in a Sample and in a SampleOrigin.
struct OriginField {
  std::string* (v1::Sample::*in_sample)();
  std::string* (v1::SampleOrigin::*in_origin)();
};

constexpr OriginField kOriginFields[] = {
    {&v1::Sample::mutable_host, &v1::SampleOrigin::mutable_host},
    {&v1::Sample::mutable_boot_id, &v1::SampleOrigin::mutable_boot_id},
    {&v1::Sample::mutable_kernel_release, &v1::SampleOrigin::mutable_kernel_release},
    {&v1::Sample::mutable_kernel_cmdline, &v1::SampleOrigin::mutable_kernel_cmdline},
    {&v1::Sample::mutable_microarch, &v1::SampleOrigin::mutable_microarch},
    {&v1::Sample::mutable_peer_host, &v1::SampleOrigin::mutable_peer_host},
    {&v1::Sample::mutable_boot_entry, &v1::SampleOrigin::mutable_boot_entry},
    {&v1::Sample::mutable_commit, &v1::SampleOrigin::mutable_commit},
    {&v1::Sample::mutable_build_id, &v1::SampleOrigin::mutable_build_id},
};

}  // namespace

void ShareOrigin(v1::SampleBatch& batch) {
  if (batch.samples_size() == 0) return;
  for (const OriginField& field : kOriginFields) {
    const std::string& first = *(batch.mutable_samples(0)->*field.in_sample)();
    if (first.empty()) continue;
    bool shared = true;
    for (v1::Sample& sample : *batch.mutable_samples()) {
      if (*(sample.*field.in_sample)() != first) {
        shared = false;
        break;
      }
    }
    if (!shared) continue;
    *(batch.mutable_shared_origin()->*field.in_origin)() = first;
    for (v1::Sample& sample : *batch.mutable_samples()) (sample.*field.in_sample)()->clear();
  }
}

}  // namespace tlbfleet::agent
