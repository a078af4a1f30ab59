//! The resolver's outside world in the playground: the editor's text under one name, the library
//! (which the resolver has built in), and nothing else. No file, folder, standard input or plugin
//! is reachable through it, whatever a request names: the server reads and writes only the file
//! it was opened with, and never through the resolver.

use pipeweave_check::ValidPlan;
use pipeweave_source::{
    Failure, Host, PluginId, PluginInfo, PluginRequest, PluginTarget, shown_name,
};

/// The editor's text as the one file a request may name.
#[derive(Debug)]
pub(crate) struct EditorHost {
    name: String,
    text: String,
}

impl EditorHost {
    /// A host whose only file is `text`, called `name` (a `.weave` name).
    pub(crate) fn new(name: &str, text: String) -> EditorHost {
        EditorHost {
            name: name.to_owned(),
            text,
        }
    }
}

impl Host for EditorHost {
    fn is_file(&self, path: &str) -> bool {
        path == self.name
    }

    fn read(&mut self, path: &str) -> Result<String, Failure> {
        if path == self.name {
            Ok(self.text.clone())
        } else {
            Err(Failure::invalid(format!(
                "`{}`: the playground reads no file but the editor's",
                shown_name(path)
            )))
        }
    }

    fn has_plugin(&mut self, _: &str) -> bool {
        false
    }

    fn plugin(&mut self, _: &PluginTarget) -> Result<PluginInfo, Failure> {
        Err(Failure::invalid("the playground loads no plugins"))
    }

    fn plugins(&mut self) -> Vec<Result<PluginInfo, String>> {
        Vec::new()
    }

    fn generate(&mut self, _: PluginId, _: &PluginRequest) -> Result<ValidPlan, Failure> {
        Err(Failure::invalid("the playground loads no plugins"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_editors_text_is_a_file() {
        let mut host = EditorHost::new("mine.weave", "stages P".into());
        assert!(host.is_file("mine.weave"));
        assert_eq!(host.read("mine.weave").expect("the text"), "stages P");
        for other in [
            "/etc/passwd",
            "../mine.weave",
            "-",
            "./mine.weave",
            "plugin:x",
        ] {
            assert!(!host.is_file(other), "{other}");
            let refused = host.read(other).expect_err("refused");
            assert!(
                refused.reason().contains("reads no file but the editor's"),
                "{other}: {}",
                refused.reason()
            );
        }
        assert!(!host.has_plugin("dualpipe"));
        assert!(host.plugins().is_empty());
    }
}
