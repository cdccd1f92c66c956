// SparkTrace CPU emulator: CUDA runtime header shim; the prelude already declares the device API.
#pragma once
#include "cuda_emu.h"
