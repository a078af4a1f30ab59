//! Shared helpers for the workspace-level integration tests (see `it/`).
