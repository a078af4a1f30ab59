//! The page's files, bundled into the binary at build time: the HTML shell, the script bundle
//! that `cargo xtask playground` builds from `web/src` (CodeMirror 6 and the page's code, one
//! file), and its styles. Nothing else is served and the page loads nothing from the network.

/// The page.
pub const INDEX_HTML: &str = include_str!("../web/index.html");

/// The script bundle.
pub const PLAYGROUND_JS: &str = include_str!("../web/dist/playground.js");

/// The styles.
pub const PLAYGROUND_CSS: &str = include_str!("../web/playground.css");

/// What every answer says about where the page may load from: this server only, no inline
/// script, no frames, no form posts elsewhere. Styles may be inline: the editor sets them on its
/// elements and the timeline's SVG carries its own.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; \
     font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The file at `path` with its media type, if it is one of the page's.
pub fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/" | "/index.html" => Some((INDEX_HTML, "text/html; charset=utf-8")),
        "/playground.js" => Some((PLAYGROUND_JS, "text/javascript; charset=utf-8")),
        "/playground.css" => Some((PLAYGROUND_CSS, "text/css; charset=utf-8")),
        _ => None,
    }
}
