//! Plan validation and deadlock analysis.
