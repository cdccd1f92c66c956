// SparkTrace CPU emulator: cuda_bf16.h; the types and conversions live in emu_lowp.h (exact to the bit).
#pragma once
#include "emu_lowp.h"
