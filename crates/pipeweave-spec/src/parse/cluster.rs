//! `[cluster]`: the GPU and the network by their ids in the tables, the nodes, and
//! `[cluster.override]`, where a spec replaces a documented figure with one of its own and says
//! where it comes from.

use super::Cx;
use super::table::{Bound, Table, shown};
use super::text::shown_text;
use crate::hardware::{GPUS, Hardware, Key, NETWORKS, nearest_id};
use crate::spec::Cluster;
use pipeweave_diagnostics::{Diagnostic, visible};
use toml::de::DeValue;

/// Keys of `[cluster]` that older specs carried: the tables give them now.
const REMOVED: &[&str] = &[
    "peak_tflops",
    "memory_gib",
    "intra_node_gbps",
    "inter_node_gbps",
    "intra_node_latency_us",
    "inter_node_latency_us",
];

pub(super) fn read_cluster(cx: &mut Cx, mut t: Table<'_, '_>) -> Option<Cluster> {
    let mut ok = true;
    for &key in REMOVED {
        if let Some(v) = t.retired(key) {
            ok = false;
            let d = Diagnostic::error(format!(
                "`cluster.{key}` was removed: the GPU and network tables give every figure"
            ))
            .with_span_label(cx.span(&v.span()), "no longer a spec key")
            .with_help(
                "name the GPU in `cluster.gpu` (and the network in `cluster.network`); to replace a documented figure, give it under `[cluster.override]` with its source, e.g. `hbm_gbps = { value = 3000, source = \"my measurement\" }`",
            );
            cx.diags.push(d);
        }
    }
    let gpu = read_id(cx, &mut t, "gpu", true);
    let network = read_id(cx, &mut t, "network", false);
    let gpn = t.u32_int(cx, "gpus_per_node", 1, "GPUs in one node");
    let nodes = t.u32_int(cx, "nodes", 1, "number of nodes");
    let buffers = t
        .opt_num(cx, "comm_buffers_gib", Bound::Within(0.0, 1000.0))
        .ok();
    let overrides = match t.sub(cx, "override") {
        Ok(Some(o)) => Some(read_overrides(cx, o)),
        Ok(None) => Some(Vec::new()),
        Err(()) => None,
    };
    t.finish(cx);
    let (gpu, network, nodes) = (gpu??, network?, nodes?);
    if network.is_none() && nodes > 1 {
        let span = cx.spans.get("cluster.nodes").cloned().unwrap_or(0..0);
        let names: Vec<String> = NETWORKS
            .iter()
            .filter(|e| e.real)
            .map(|e| format!("`{}`", e.id))
            .collect();
        let d = Diagnostic::error(format!(
            "a cluster of {nodes} nodes needs `cluster.network`"
        ))
        .with_span_label(cx.span(&span), "more than one node")
        .with_help(format!(
            "name the network between the nodes: {}",
            names.join(", ")
        ));
        cx.diags.push(d);
        return None;
    }
    let mut hardware = Hardware::lookup(&gpu, network.as_deref())?;
    for (key, value, source) in overrides? {
        hardware.set(key, value, source);
    }
    if !ok {
        return None;
    }
    Some(Cluster {
        hardware,
        gpus_per_node: gpn?,
        nodes,
        comm_buffers_gib: buffers?,
    })
}

/// `cluster.gpu` or `cluster.network`: an id of its table (`None` inside when absent and not
/// required; `None` outside on an error).
fn read_id(
    cx: &mut Cx,
    t: &mut Table<'_, '_>,
    key: &'static str,
    required: bool,
) -> Option<Option<String>> {
    let table = if key == "gpu" { GPUS } else { NETWORKS };
    let (id, span) = match t.opt_string(cx, key) {
        Ok(Some(x)) => x,
        Ok(None) if required => {
            t.missing(cx, key, "an id of the GPU table, e.g. `h100-sxm5-80gb`");
            return None;
        }
        Ok(None) => return Some(None),
        Err(()) => return None,
    };
    if table.iter().any(|e| e.id == id) {
        return Some(Some(id));
    }
    let what = if key == "gpu" { "GPU" } else { "network" };
    let mut d = Diagnostic::error(format!(
        "unknown {what} `{}` in `cluster.{key}`",
        visible(&id)
    ))
    .with_span_label(cx.span(&span), format!("not in the {what} table"));
    d = match nearest_id(&id, table) {
        Some(near) => d.with_help(format!("did you mean `{near}`?")),
        None => {
            let ids: Vec<String> = table
                .iter()
                .filter(|e| e.real)
                .map(|e| format!("`{}`", e.id))
                .collect();
            d.with_help(format!(
                "the {what}s are {} (docs/cost-model.md lists their figures)",
                ids.join(", ")
            ))
        }
    };
    cx.diags.push(d);
    None
}

/// `[cluster.override]`: `KEY = { value = X, source = "..." }` for any key of the tables.
fn read_overrides(cx: &mut Cx, mut t: Table<'_, '_>) -> Vec<(Key, f64, String)> {
    let mut out = Vec::new();
    for key in Key::ALL {
        let Some(v) = t.lookup(cx, key.name()) else {
            continue;
        };
        let path = t.key_path(key.name());
        let DeValue::Table(inner) = v.get_ref() else {
            cx.error(
                &v.span(),
                format!("`{path}` must be a table with a value and its source"),
                "expected `{ value = ..., source = \"...\" }`",
            );
            continue;
        };
        let mut inner = Table::new(path.clone(), inner, v.span());
        let value = inner.num(cx, "value", Bound::Within(0.0, f64::MAX), key.what());
        let source = inner.string(cx, "source", "where the value comes from");
        inner.finish(cx);
        let (Some(value), Some(source)) = (value, source) else {
            continue;
        };
        let span = cx
            .spans
            .get(&format!("{path}.value"))
            .cloned()
            .unwrap_or(0..0);
        if let Some(why) = key.range().violated(value) {
            cx.error(
                &span,
                format!("`{path}.value` must be {why}, found {}", shown(value)),
                "out of range",
            );
            continue;
        }
        if key == Key::Sms && value.fract() != 0.0 {
            cx.error(
                &span,
                format!("`{path}.value` must be a whole number of SMs"),
                "not whole",
            );
            continue;
        }
        let span = cx
            .spans
            .get(&format!("{path}.source"))
            .cloned()
            .unwrap_or(0..0);
        if !shown_text(cx, &format!("`{path}.source`"), &source, &span) {
            continue;
        }
        if source.trim().is_empty() {
            cx.error(
                &span,
                format!("`{path}.source` is empty: say where the value comes from"),
                "no source",
            );
            continue;
        }
        out.push((key, value, source));
    }
    t.finish(cx);
    out
}
