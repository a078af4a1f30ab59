//! Plan formats in and out: actions, PyTorch CSV, JSON plan, Chrome trace.
