use super::*;

fn links(intra: f64, inter: f64, a: f64, b: f64) -> Links {
    Links {
        intra: Link {
            bandwidth: intra,
            latency: a,
        },
        inter: Link {
            bandwidth: inter,
            latency: b,
        },
        intra_a2a: intra,
        inter_a2a: inter,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

#[test]
fn ring_all_reduce_on_one_link() {
    // N bytes on D ranks: 2(D−1)/D · N / B plus 2(D−1) latencies.
    let l = links(100e9, 10e9, 2e-6, 5e-6);
    let (n, d) = (1e9, 8.0);
    let one_node = Spread {
        nodes: 1.0,
        per_node: d,
    };
    assert!(close(
        all_reduce(&l, n, one_node),
        2.0 * (d - 1.0) / d * n / 100e9 + 2.0 * (d - 1.0) * 2e-6
    ));
    // One GPU per node: the network only.
    let spread = Spread {
        nodes: d,
        per_node: 1.0,
    };
    assert!(close(
        all_reduce(&l, n, spread),
        2.0 * (d - 1.0) / d * n / 10e9 + 2.0 * (d - 1.0) * 5e-6
    ));
    assert_eq!(all_reduce(&l, n, Spread::ONE), 0.0);
}

#[test]
fn hierarchical_ring_takes_the_slower_level() {
    // 4 nodes of 8: within a node 7/8 · N over NVLink; across, 3/4 · N over the 8 cards of the
    // node, N/8 each; the two pipelined, plus every hop's latency.
    let l = links(100e9, 10e9, 2e-6, 5e-6);
    let n = 1e9;
    let s = Spread {
        nodes: 4.0,
        per_node: 8.0,
    };
    let intra = 7.0 / 8.0 * n / 100e9;
    let inter = 3.0 / 4.0 * n / (8.0 * 10e9);
    assert!(close(
        reduce_scatter(&l, n, s),
        intra.max(inter) + 7.0 * 2e-6 + 3.0 * 5e-6
    ));
    assert!(close(ring_bytes(n, 32.0), 31.0 / 32.0 * n));
}

#[test]
fn point_to_point() {
    let l = Link {
        bandwidth: 50e9,
        latency: 3e-6,
    };
    assert!(close(p2p(&l, 1e9), 3e-6 + 0.02));
}

#[test]
fn spreads_count_nodes_and_members() {
    assert_eq!(
        Spread::of(&[0, 1, 2, 8, 9, 16], 8),
        Spread {
            nodes: 3.0,
            per_node: 3.0
        }
    );
    assert_eq!(Spread::of(&[5], 8), Spread::ONE);
}
