// min-max: amax = max |x|, which is the histogram's range T by construction.
#include "ptq/calibrators.h"

namespace ptq::calib {

double minmax_amax(const HistogramView& hist, const MethodConfig& /*config*/) { return hist.range; }

}  // namespace ptq::calib
