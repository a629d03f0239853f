//! (placeholder: being written)
pub mod config;
