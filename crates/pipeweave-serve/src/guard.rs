//! Which requests the server answers at all. A page of another site can make the browser send
//! requests to 127.0.0.1 (a form posted there, or a name of its own that it points at 127.0.0.1
//! after loading: DNS rebinding). Both show in the headers the browser sets and a page cannot
//! forge: `Host` (the name the browser connected to) and, on every request a page makes across
//! sites or by POST, `Origin` and `Sec-Fetch-Site`. So a request is answered only when its `Host`
//! is the server's own address by number or as `localhost`, and its `Origin`, when it has one,
//! is this server; every POST must say it sends JSON, which a cross-site form cannot say without
//! a preflight this server never grants.

/// Why a request is refused, or `None` when it may be answered. `port` is the server's;
/// `post`: whether the request posts a body, with its `Content-Type`.
pub fn refusal(
    port: u16,
    host: Option<&str>,
    origin: Option<&str>,
    fetch_site: Option<&str>,
    post: Option<Option<&str>>,
) -> Option<String> {
    let ours = [format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    let Some(host) = host else {
        return Some("the request names no host".into());
    };
    if !ours.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Some(format!(
            "the request is for host `{}`, not this server ({}); open the address `pipeweave \
             serve` printed",
            pipeweave_diagnostics::visible(host),
            ours[0]
        ));
    }
    if let Some(origin) = origin
        && !ours
            .iter()
            .any(|h| origin.eq_ignore_ascii_case(&format!("http://{h}")))
    {
        return Some(format!(
            "the request comes from the page of `{}`, not this server's; only the playground's \
             own page may use it",
            pipeweave_diagnostics::visible(origin)
        ));
    }
    if fetch_site.is_some_and(|s| s.eq_ignore_ascii_case("cross-site")) {
        return Some(
            "the request comes from another site's page; only the playground's own page may use it"
                .into(),
        );
    }
    if let Some(content_type) = post {
        let json = content_type.is_some_and(|t| {
            t.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
        if !json {
            return Some("the request must send JSON (Content-Type: application/json)".into());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: Option<Option<&str>> = Some(Some("application/json"));

    #[test]
    fn the_servers_own_page_is_answered() {
        for host in ["127.0.0.1:8700", "localhost:8700", "LOCALHOST:8700"] {
            assert_eq!(refusal(8700, Some(host), None, None, None), None);
            assert_eq!(
                refusal(
                    8700,
                    Some(host),
                    Some("http://127.0.0.1:8700"),
                    Some("same-origin"),
                    Some(Some("application/json; charset=utf-8"))
                ),
                None
            );
        }
    }

    #[test]
    fn another_host_is_refused() {
        for host in [
            None,
            Some("evil.example:8700"),
            Some("127.0.0.1:8701"),
            Some("127.0.0.1"),
            Some("localhost.evil.example:8700"),
            Some("[::1]:8700"),
        ] {
            let why = refusal(8700, host, None, None, None).expect("refused");
            assert!(why.contains("host"), "{host:?}: {why}");
        }
    }

    #[test]
    fn another_origin_is_refused() {
        for origin in [
            "http://evil.example",
            "http://127.0.0.1:8701",
            "https://127.0.0.1:8700",
            "null",
            "http://127.0.0.1:8700.evil.example",
        ] {
            let why =
                refusal(8700, Some("127.0.0.1:8700"), Some(origin), None, JSON).expect("refused");
            assert!(why.contains("page of"), "{origin}: {why}");
        }
        let why = refusal(8700, Some("127.0.0.1:8700"), None, Some("cross-site"), JSON);
        assert!(why.expect("refused").contains("another site"));
    }

    #[test]
    fn a_post_that_is_no_json_is_refused() {
        for content_type in [
            None,
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
        ] {
            let why = refusal(8700, Some("127.0.0.1:8700"), None, None, Some(content_type));
            assert!(why.expect("refused").contains("JSON"), "{content_type:?}");
        }
    }

    #[test]
    fn control_characters_in_a_refused_header_are_drawn() {
        let why = refusal(8700, Some("a\u{1b}[2Jb:8700"), None, None, None).expect("refused");
        assert!(!why.contains('\u{1b}'), "{why}");
    }
}
