//! Cluster, model and training specs in TOML, and the cost model.
