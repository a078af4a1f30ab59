//! Workspace-level integration tests.
