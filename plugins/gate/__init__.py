"""Stage 2, gate: every candidate against the reference on fresh inputs (GPU, or the CPU emulator)."""
