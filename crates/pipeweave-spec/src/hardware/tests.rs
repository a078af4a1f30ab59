use super::*;

/// The source's words with thousands separators dropped, so `1,978.9` reads as `1978.9`.
fn plain(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    for (i, c) in source.char_indices() {
        let between_digits = c == ','
            && i > 0
            && b[i - 1].is_ascii_digit()
            && b.get(i + 1).is_some_and(u8::is_ascii_digit);
        if !between_digits {
            out.push(c);
        }
    }
    out
}

/// Every value is written in its source's words (or the source says it is an assumption, or the
/// entry is not a real machine), and lies in its key's range.
#[test]
fn every_value_stands_in_its_source() {
    for e in GPUS.iter().chain(NETWORKS) {
        for (key, value, source) in e.values {
            assert!(!source.is_empty(), "{} {}", e.id, key.name());
            assert!(
                key.range().violated(*value).is_none(),
                "{} {} = {value}",
                e.id,
                key.name()
            );
            let text = plain(source);
            let written = [
                format!("{value}"),
                format!("{value:.2}"),
                format!("{value:.1}"),
            ];
            assert!(
                !e.real
                    || text.contains("assumption")
                    || written.iter().any(|w| text.contains(w.as_str())),
                "{} {} = {value} does not appear in its source: {source}",
                e.id,
                key.name()
            );
        }
    }
}

#[test]
fn ids_are_unique_and_likes_resolve() {
    for table in [GPUS, NETWORKS] {
        let mut ids: Vec<&str> = table.iter().map(|e| e.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), table.len());
        for e in table {
            if let Some(like) = e.like {
                assert!(table.iter().any(|x| x.id == like), "{} like {like}", e.id);
            }
        }
    }
}

/// Every GPU gives what the cost model needs, every network its four figures, each in the right
/// table.
#[test]
fn every_entry_is_complete() {
    let gpu_needs = [
        Key::Sms,
        Key::HbmGbps,
        Key::HbmEfficiency,
        Key::MemoryGib,
        Key::ContextGib,
        Key::IntraGbps,
        Key::IntraLatencyUs,
        Key::IntraEfficiency,
        Key::IntraAllToAllEfficiency,
    ];
    for g in GPUS {
        for key in gpu_needs {
            assert!(
                resolve(GPUS, g, key).is_some(),
                "{} lacks {}",
                g.id,
                key.name()
            );
        }
        assert!(g.values.iter().all(|(k, _, _)| k.scope() == Scope::Gpu));
    }
    for n in NETWORKS {
        for key in Key::ALL.into_iter().filter(|k| k.scope() == Scope::Network) {
            assert!(
                resolve(NETWORKS, n, key).is_some(),
                "{} lacks {}",
                n.id,
                key.name()
            );
        }
        assert!(n.values.iter().all(|(k, _, _)| k.scope() == Scope::Network));
    }
}

#[test]
fn datasheet_figures_by_hand() {
    let h = Hardware::lookup("h800-sxm5-80gb", Some("ib-ndr-400")).expect("known ids");
    // The H800 inherits the H100's compute and memory and has its own NVLink.
    assert_eq!(h.get(Key::PeakBf16), Some(989.4));
    assert_eq!(h.get(Key::PeakFp8), Some(1978.9));
    assert_eq!(h.get(Key::IntraGbps), Some(200.0));
    assert_eq!(h.get(Key::MemoryGib), Some(79.11));
    assert_eq!(h.get(Key::NetGbps), Some(50.0));
    assert_eq!(h.peak_flops(Dtype::Bf16), Some(989.4e12));
    // FlashAttention does not run on Pascal: the P100 has no entry for it, nor BF16.
    let p = Hardware::lookup("p100-pcie-16gb", None).expect("known id");
    assert_eq!(p.get(Key::Flash2Fwd), None);
    assert_eq!(p.get(Key::PeakBf16), None);
    assert_eq!(p.get(Key::PeakFp32), Some(9.3));
    assert_eq!(p.get(Key::NetGbps), None);
    // The A100 40GB differs from the 80GB in memory only.
    let a = Hardware::lookup("a100-sxm4-40gb", None).expect("known id");
    assert_eq!(a.get(Key::HbmGbps), Some(1555.0));
    assert_eq!(a.get(Key::PeakBf16), Some(312.0));
}

#[test]
fn overrides_replace_one_value_with_their_source() {
    let mut h = Hardware::lookup("h100-sxm5-80gb", None).expect("known id");
    h.set(Key::GemmBf16, 0.6, "my measurement".to_owned());
    assert_eq!(h.get(Key::GemmBf16), Some(0.6));
    assert_eq!(
        h.origin(Key::GemmBf16).map(Origin::text),
        Some("my measurement")
    );
    assert_eq!(h.get(Key::GemmFp16), Some(0.71));
}

#[test]
fn nearest_ids_for_typos() {
    assert_eq!(nearest_id("h100-sxm-80gb", GPUS), Some("h100-sxm5-80gb"));
    assert_eq!(nearest_id("ib-ndr400", NETWORKS), Some("ib-ndr-400"));
    assert_eq!(nearest_id("tpu-v5p", GPUS), None);
}
