//! The C ABI, protocol and export macro for pipeweave schedule plugins.
