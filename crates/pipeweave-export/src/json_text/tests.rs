use super::*;

/// A small deterministic generator (xorshift64*), so the random cases are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn ours_f64(v: f64) -> String {
    let mut s = Vec::new();
    push_f64(&mut s, v);
    String::from_utf8(s).expect("UTF-8")
}

fn check_f64(v: f64) {
    let expected = serde_json::to_string(&v).expect("serializes");
    assert_eq!(ours_f64(v), expected, "{v:e} (bits {:#x})", v.to_bits());
}

#[test]
fn floats_are_written_as_serde_json_writes_them() {
    let special = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        0.1,
        1.5e-7,
        2000.0,
        1000.0 / 3.0,
        123_456.789,
        1e-5,
        1e-4,
        1e-7,
        1e15 - 1.0,
        1e15,
        1e15 + 1.0,
        1e16 - 2.0,
        1e16,
        1e17,
        1e21,
        1e22,
        1e300,
        9_007_199_254_740_992.0,
        9_007_199_254_740_993.0,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        f64::EPSILON,
        5e-324,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    for v in special {
        check_f64(v);
        check_f64(-v);
    }
    // Whole numbers around every power of ten (where the notation may switch) and times 1000.
    let mut p = 1.0_f64;
    for _ in 0..25 {
        for d in [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0] {
            check_f64(p + d);
            check_f64(-(p + d));
            check_f64((p + d) * 1000.0);
            check_f64((p + d) / 1000.0);
        }
        p *= 10.0;
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200_000 {
        // Any bit pattern (all magnitudes, subnormals, non-finite values) ...
        check_f64(f64::from_bits(rng.next()));
        // ... timeline-like values: whole and fractional multiples of a microsecond scale ...
        let units = (rng.next() % 1_000_000) as f64;
        check_f64(units * 1000.0);
        check_f64(units * 0.001);
        check_f64(units / 7.0);
        // ... and whole numbers of every size.
        check_f64((rng.next() >> (rng.next() % 64)) as f64);
    }
}

#[test]
fn integers_are_written_in_decimal() {
    let mut rng = Rng(12345);
    let values = [
        0,
        1,
        9,
        10,
        99,
        100,
        u64::from(u32::MAX),
        u64::MAX - 1,
        u64::MAX,
    ]
    .into_iter()
    .chain((0..10_000).map(|_| rng.next() >> (rng.next() % 64)));
    for v in values {
        let mut s = Vec::new();
        push_uint(&mut s, v);
        assert_eq!(
            String::from_utf8(s).expect("UTF-8"),
            serde_json::to_string(&v).expect("serializes")
        );
    }
}

#[test]
fn strings_are_escaped_as_serde_json_escapes_them() {
    let mut cases: Vec<String> = [
        "",
        "3F2",
        "(0F3;7B5)OVERLAP_F_B",
        "rank 0",
        "quote \" backslash \\ slash /",
        "\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f}",
        "héllo ✓ 🦀",
        "\"",
        "\\",
        "a\u{1}b",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    // Every character below 128, alone and between others.
    cases.extend((0u8..128).map(|b| format!("x{}y", char::from(b))));
    // Random mixes of ASCII, control and non-ASCII characters.
    let mut rng = Rng(42);
    let alphabet: Vec<char> = (0u8..128)
        .map(char::from)
        .chain(['é', '✓', '🦀', '\u{2028}'])
        .collect();
    for _ in 0..2_000 {
        let len = rng.next() % 20;
        cases.push(
            (0..len)
                .map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize])
                .collect(),
        );
    }
    for s in &cases {
        let mut ours = Vec::new();
        push_str(&mut ours, s);
        let ours = String::from_utf8(ours).expect("UTF-8");
        assert_eq!(ours, serde_json::to_string(s).expect("serializes"), "{s:?}");
    }
}
