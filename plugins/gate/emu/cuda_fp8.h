// SparkTrace CPU emulator: cuda_fp8.h; the types and conversions live in emu_lowp.h (exact to the bit).
#pragma once
#include "emu_lowp.h"
