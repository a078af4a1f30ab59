//! The schedule language: pest grammar, syntax tree, compiler to step plans.
