// Sample batches as the agent sends them.

#ifndef TLBFLEET_AGENT_RUNNER_SAMPLE_BATCH_H_
#define TLBFLEET_AGENT_RUNNER_SAMPLE_BATCH_H_

#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

// Moves each provenance field (host, boot id, kernel release and command line,
// microarchitecture, peer, boot entry, a built kernel's commit and build id) that every sample
// of `batch` has with the same non-empty value into batch.shared_origin, clearing it in the
// samples: a job's samples share all of them, about 200 bytes a sample that the controller
// would otherwise parse and free for each one. Only for a controller that accepts it
// (Welcome.accepts_shared_origin).
void ShareOrigin(v1::SampleBatch& batch);

}  // namespace tlbfleet::agent

#endif  // TLBFLEET_AGENT_RUNNER_SAMPLE_BATCH_H_
