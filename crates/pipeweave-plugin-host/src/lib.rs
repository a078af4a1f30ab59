//! Finding and loading pipeweave schedule plugins.
