// The graph IR module (ptq_ir): dtypes, tensors, graphs and models.
#pragma once

#include "ptq/ir/dtype.h"
#include "ptq/ir/graph.h"
#include "ptq/ir/tensor.h"
