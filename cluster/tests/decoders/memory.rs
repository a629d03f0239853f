//! The in-memory `DurableStorage` the storage formats decode through their boot paths
//! with: the seam's own (`get`, `put` and `fork` read, plant and copy files).

pub(crate) type Memory = cluster::seam::MemStorage;
