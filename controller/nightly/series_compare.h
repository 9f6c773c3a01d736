#pragma once
// The production CalibratedComparison (regression.h): the raw samples of the runs behind the
// points on either side of a change, compared by the controller's comparison
// (bisect/calibrated.h), never the points' estimates alone.

#include <cstddef>

#include "controller/bisect/calibrated.h"
#include "controller/nightly/regression.h"

namespace tlbfleet::nightly {

// The confidence the comparison of a change's two sides runs at (without correlation 0.95):
// its runs are the units, and when consecutive nights are correlated (AR(1), `phi` from the
// detector) the difference of the two sides' means varies by
// stats::Ar1DifferenceOfMeansFactor more than independent runs would, so the interval is
// widened by its square root — the level whose normal quantile is that much larger.
inline constexpr double kConfirmationLevel = 0.95;
double ConfirmationLevel(size_t before, size_t gap, size_t after, double phi);

CalibratedComparison MakeSeriesComparison(bisect::SampleLoader load);

}  // namespace tlbfleet::nightly
