//! Placeholder: being written (storage issue #5).
