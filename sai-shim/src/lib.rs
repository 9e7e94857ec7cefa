//! The SAI-like object API that every control plane programs, and its backends.
