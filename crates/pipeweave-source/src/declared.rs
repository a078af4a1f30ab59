//! What a schedule declares: its description, its parameters and its requirements, the same for a
//! `.weave` schedule and a plugin.

use pipeweave_plugin_api::Metadata;

/// One parameter a schedule declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The name `--set NAME=VALUE` (or `-v` for `v`) gives.
    pub name: String,
    /// The default as text: a `.weave` expression, or a plugin's value.
    pub default: Option<String>,
    /// What it does, in words.
    pub help: Option<String>,
    /// The type, where the schedule declares one (plugins: `int`, `bool`).
    pub type_name: Option<String>,
    /// Constraints in words (`even, at least 2`); empty when there are none.
    pub constraints: String,
}

/// What a schedule declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The first line of its description.
    pub description: String,
    /// Its parameters, in declaration order.
    pub params: Vec<Param>,
    /// What it requires of P and M, in words (empty when it says nothing).
    pub requires: String,
}

impl Declared {
    /// Whether it declares the parameter `name`.
    pub fn takes(&self, name: &str) -> bool {
        self.params.iter().any(|p| p.name == name)
    }

    /// What a `.weave` schedule declares, read from its source.
    pub fn of_weave(source: &str) -> Declared {
        let info = pipeweave_dsl::info(source);
        let requires: Vec<String> = info
            .requires
            .into_iter()
            // `v >= 1` is a sanity check, not something a user plans around.
            .filter(|c| !c.starts_with("v >="))
            .collect();
        Declared {
            description: info
                .doc
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or_default()
                .to_owned(),
            params: info
                .params
                .into_iter()
                .map(|p| Param {
                    name: p.name,
                    default: p.default,
                    help: p.help,
                    type_name: None,
                    constraints: String::new(),
                })
                .collect(),
            requires: requires.join("; "),
        }
    }

    /// What a plugin declares in its metadata.
    pub fn of_plugin(m: &Metadata) -> Declared {
        Declared {
            description: m.description.clone(),
            params: m
                .params
                .iter()
                .map(|p| Param {
                    name: p.name.clone(),
                    default: Some(p.default_value().to_string()),
                    help: Some(p.help.clone()),
                    type_name: Some(p.ty.keyword().to_owned()),
                    constraints: match &p.ty {
                        pipeweave_plugin_api::ParamType::Int(r) if *r != Default::default() => {
                            p.ty.allowed()
                        }
                        _ => String::new(),
                    },
                })
                .collect(),
            requires: m.requires.clone(),
        }
    }
}
