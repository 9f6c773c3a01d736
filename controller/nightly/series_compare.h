#pragma once
// The production CalibratedComparison (regression.h): the raw samples of the runs behind the
// points on either side of a change, compared by the controller's comparison
// (bisect/calibrated.h), never the points' estimates alone.

#include "controller/bisect/calibrated.h"
#include "controller/nightly/regression.h"

namespace tlbfleet::nightly {

CalibratedComparison MakeSeriesComparison(bisect::SampleLoader load);

}  // namespace tlbfleet::nightly
