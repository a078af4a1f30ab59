//! Communication times: ring collectives within and across nodes, point-to-point transfers and
//! the expert all-to-all, from the GPU and network tables.
//!
//! Bandwidths are the achievable ones: the table's line rate per GPU and direction times its
//! efficiency (NCCL's bus bandwidth for collectives and transfers, a separate share for the
//! all-to-all).
//!
//! **Ring collectives** (NCCL's ring algorithm; NCCL-tests `doc/PERFORMANCE.md`: the bus bandwidth
//! of a reduce-scatter or all-gather is its algorithm bandwidth × (D−1)/D, of an all-reduce × 2(D−1)/D).
//! A reduce-scatter or all-gather of N bytes over D GPUs on one link moves (D−1)/D · N per GPU:
//! `(D−1)/D · N / B + (D−1)·α`; an all-reduce is a reduce-scatter and an all-gather, twice that.
//! A group of n nodes with g members each: within the nodes every GPU moves (g−1)/g · N over the
//! intra-node link; across them each node moves (n−1)/n · N over the g network cards its members
//! own, (n−1)/n · N/g per card. NCCL pipelines the two (its rings cross both kinds of link chunk
//! by chunk), so the time is the slower of the two plus the latency of every hop:
//! `max((g−1)/g · N/B_intra, (n−1)/n · N/(g·B_net)) + (g−1)·α_intra + (n−1)·α_net`. With g = 8
//! and n large an all-reduce's bus bandwidth is 8 × the network card's, as NCCL reaches on nodes
//! of eight GPUs with eight cards (24 GB/s per HDR card, S. Jeaugey in NVIDIA/nccl#412).

use pipeweave_spec::hardware::Key;
use pipeweave_spec::{PlacementOrder, Spec};

mod spread;

/// One kind of link: achievable bytes per second and the latency of a message in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Achievable bytes per second, one direction, per GPU.
    pub bandwidth: f64,
    /// Latency of one message, in seconds.
    pub latency: f64,
}

/// The links of a cluster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Links {
    /// Inside a node, for collectives and transfers.
    pub intra: Link,
    /// Between nodes, for collectives and transfers.
    pub inter: Link,
    /// The all-to-all's achievable bytes per second inside a node.
    pub intra_a2a: f64,
    /// The all-to-all's achievable bytes per second between nodes, per GPU.
    pub inter_a2a: f64,
}

impl Links {
    /// The links of `spec`'s cluster (a single node without a network gets the intra-node link
    /// for both).
    pub fn of(spec: &Spec) -> Links {
        let c = &spec.cluster;
        let gbps = |k: Key| c.figure(k) * 1e9;
        let intra = Link {
            bandwidth: gbps(Key::IntraGbps) * c.figure(Key::IntraEfficiency),
            latency: c.figure(Key::IntraLatencyUs) * 1e-6,
        };
        let intra_a2a = gbps(Key::IntraGbps) * c.figure(Key::IntraAllToAllEfficiency);
        if c.hardware.network_id.is_none() {
            return Links {
                intra,
                inter: intra,
                intra_a2a,
                inter_a2a: intra_a2a,
            };
        }
        Links {
            intra,
            inter: Link {
                bandwidth: gbps(Key::NetGbps) * c.figure(Key::NetEfficiency),
                latency: c.figure(Key::NetLatencyUs) * 1e-6,
            },
            intra_a2a,
            inter_a2a: gbps(Key::NetGbps) * c.figure(Key::NetAllToAllEfficiency),
        }
    }
}

/// How a group of GPUs spreads over the cluster: `nodes` nodes with `per_node` members each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Nodes the group spans.
    pub nodes: f64,
    /// Members of the group on each of them.
    pub per_node: f64,
}

impl Spread {
    /// A group of one GPU.
    pub const ONE: Spread = Spread {
        nodes: 1.0,
        per_node: 1.0,
    };

    /// The spread of the GPUs `members` (indices) over nodes of `gpn` GPUs: the nodes they touch
    /// and the most members one of them holds.
    pub fn of(members: &[u64], gpn: u64) -> Spread {
        let mut nodes: Vec<u64> = members.iter().map(|g| g / gpn.max(1)).collect();
        nodes.sort_unstable();
        let mut per_node = 0usize;
        let mut distinct = 0usize;
        let mut i = 0;
        while i < nodes.len() {
            let j = nodes[i..].iter().take_while(|&&n| n == nodes[i]).count();
            per_node = per_node.max(j);
            distinct += 1;
            i += j;
        }
        Spread {
            nodes: distinct.max(1) as f64,
            per_node: per_node.max(1) as f64,
        }
    }

    /// Members of the group.
    pub fn members(&self) -> f64 {
        self.nodes * self.per_node
    }
}

/// Seconds of a ring reduce-scatter (or all-gather) of `bytes` over the group `spread`.
pub fn reduce_scatter(links: &Links, bytes: f64, spread: Spread) -> f64 {
    let (n, g) = (spread.nodes, spread.per_node);
    if n * g <= 1.0 || bytes <= 0.0 {
        return 0.0;
    }
    let intra = (g - 1.0) / g * bytes / links.intra.bandwidth;
    let inter = (n - 1.0) / n * bytes / (g * links.inter.bandwidth);
    intra.max(inter) + (g - 1.0) * links.intra.latency + (n - 1.0) * links.inter.latency
}

/// Seconds of a ring all-reduce of `bytes` over the group `spread`: a reduce-scatter and an
/// all-gather.
pub fn all_reduce(links: &Links, bytes: f64, spread: Spread) -> f64 {
    2.0 * reduce_scatter(links, bytes, spread)
}

/// Bytes one GPU sends in a reduce-scatter (or all-gather) of `bytes` over `members` GPUs.
pub fn ring_bytes(bytes: f64, members: f64) -> f64 {
    if members <= 1.0 {
        0.0
    } else {
        (members - 1.0) / members * bytes
    }
}

/// Seconds to send `bytes` point to point over `link`.
pub fn p2p(link: &Link, bytes: f64) -> f64 {
    link.latency + bytes / link.bandwidth
}

/// The GPU index of (pipeline rank, data rank, tensor rank).
pub fn gpu_index(spec: &Spec, pp_rank: u64, dp_rank: u64, tp_rank: u64) -> u64 {
    let p = &spec.parallelism;
    let (pp, tp, dp) = (u64::from(p.pp), u64::from(p.tp), u64::from(p.dp));
    match p.placement {
        PlacementOrder::PpOutermost => pp_rank * dp * tp + dp_rank * tp + tp_rank,
        PlacementOrder::PpInnermost => (dp_rank * tp + tp_rank) * pp + pp_rank,
    }
}

/// The spread of the GPUs of pipeline ranks `ranks` at data ranks `0, step, 2·step, …` (`count`
/// of them), tensor rank 0: counted from the progressions the placement makes of them
/// ([`Spread::of_progressions`]), never listed, so that a data-parallel group of a million GPUs
/// costs what one of eight does.
pub fn spread_of(spec: &Spec, ranks: &[u32], step: u64, count: u64) -> Spread {
    let gpn = u64::from(spec.cluster.gpus_per_node);
    let offsets: Vec<u64> = ranks
        .iter()
        .map(|&r| gpu_index(spec, u64::from(r), 0, 0))
        .collect();
    let stride = gpu_index(spec, 0, step, 0) - gpu_index(spec, 0, 0, 0);
    Spread::of_progressions(&offsets, stride, count, gpn)
}

/// Bytes and seconds of one dispatch or combine of a micro-batch's tokens on one GPU moving
/// `bytes` per element: (seconds, bytes over the network, bytes over the intra-node link).
///
/// Over the network a token travels `experts_per_token` times, or with node-limited routing once
/// per destination node, `min(experts_per_token, max_nodes_per_token, nodes of the group)` times,
/// and is forwarded over NVLink there (DeepSeek-V3 §3.2.2); only the copies that leave the node
/// cross it, `(nodes − 1)/nodes`. Over NVLink every copy whose expert sits on another GPU of the
/// node it reaches, `(g − 1)/g` for g group members per node. The two links run at once
/// ("communications via IB and NVLink are fully overlapped", §3.2.2), so the time is the larger.
pub fn all_to_all(spec: &Spec, links: &Links, bytes: f64) -> (f64, f64, f64) {
    let Some(moe) = spec.model.moe else {
        return (0.0, 0.0, 0.0);
    };
    let ep = spec.parallelism.ep;
    if ep <= 1 {
        return (0.0, 0.0, 0.0);
    }
    let tokens = spec.training.tokens_per_microbatch() / f64::from(spec.parallelism.tp);
    let h = spec.model.hidden as f64;
    let k = moe.experts_per_token as f64;
    let spread = spread_of(spec, &[0], 1, u64::from(ep));
    let (nodes, per_node) = (spread.nodes, spread.per_node);
    let nvlink_share = (per_node - 1.0) / per_node;
    let nvlink = tokens * k * h * bytes * nvlink_share;
    let mut latency = links.intra.latency;
    let ib = if nodes > 1.0 {
        latency = latency.max(links.inter.latency);
        let copies = moe
            .max_nodes_per_token
            .map_or(k, |m| k.min(m as f64).min(nodes));
        tokens * copies * h * bytes * (nodes - 1.0) / nodes
    } else {
        0.0
    };
    let time = latency + (nvlink / links.intra_a2a).max(ib / links.inter_a2a);
    (time, ib, nvlink)
}

#[cfg(test)]
mod tests;
