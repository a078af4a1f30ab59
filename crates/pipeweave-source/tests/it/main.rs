//! Integration tests of pipeweave-source: resolution order, what sources declare, building plans
//! with their usage errors and places, specs, and failures as data, on an in-memory host.

mod host;
mod resolve;
mod twins;

pub use host::MemoryHost;
